"""What the kernel counted during a run, outside the tracer: every testbed
interface's packets and drops, the drops of each router's output queue, the
receiver's UDP errors, the sink, and the CPU time the machine's host took
from each CPU (steal). Taken before the senders start and after they stop;
the runner keeps the deltas. A chain's routers (lay["routers"], in path
order) are counted each; one router is the chain of one."""
import json
import os
import subprocess

FIELDS = ("packets", "bytes", "dropped", "errors")


def _links(ns):
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show"], capture_output=True,
                         text=True, check=True).stdout
    stats = {}
    for link in json.loads(out):
        if link["ifname"] == "lo":
            continue
        s = link["stats64"]
        stats[link["ifname"]] = {f"{d}_{f}": s[d][f] for d in ("rx", "tx") for f in FIELDS}
    return stats


def _steal_ms():
    """Each CPU's steal time (/proc/stat): time its vCPU was ready but the host
    ran something else, which stalls senders and router alike."""
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if fields[0].startswith("cpu") and fields[0] != "cpu" and len(fields) > 8:
                out[fields[0][3:]] = round(int(fields[8]) * tick_ms)
    return out


def _udp(ns):
    """/proc/net/snmp's Udp counters as the namespace sees them."""
    out = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split()[1:] for line in out.splitlines() if line.startswith("Udp:")]
    return {k: int(v) for k, v in zip(rows[0], rows[1])}


def _udp_rx_queued(ns):
    """Bytes waiting in the namespace's UDP sockets' receive queues."""
    out = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/udp", "/proc/net/udp6"],
                         capture_output=True, text=True, check=True).stdout
    # "sl local rem st tx_queue:rx_queue ...": the header lines have no colon pair there
    return sum(int(f[4].split(":")[1], 16) for f in map(str.split, out.splitlines())
               if len(f) > 4 and ":" in f[4] and f[0] != "sl")


def _qdisc_queued(ns, dev):
    out = subprocess.run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev],
                         capture_output=True, text=True, check=True).stdout
    return sum(q.get("qlen", 0) for q in json.loads(out))


def _qdisc_drops(ns, dev):
    """Packets the device's root qdisc dropped (a shaper's leaf counts its
    drops in the root's too); 0 on a device without a queue."""
    out = subprocess.run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev],
                         capture_output=True, text=True, check=True).stdout
    return sum(q.get("drops", 0) for q in json.loads(out) if q.get("root"))


def quiet_state(lay):
    """What still moves after the senders stopped: the routers' output
    queues, their transmits, the receiver's arrivals and its sockets' queues."""
    ns, routers = lay["namespaces"], lay["routers"]
    links = _links(ns["receiver"])
    return (sum(_qdisc_queued(r["netns"], r["out"]) for r in routers),
            tuple(_links(r["netns"])[r["out"]]["tx_packets"] for r in routers),
            sum(v["rx_packets"] for v in links.values()), _udp_rx_queued(ns["receiver"]))


class Counters:
    """lay: the testbed's layout (testbed.py); testbed(*args) runs testbed.sh."""

    def __init__(self, lay, testbed):
        self.lay, self.sink, self.testbed = lay, lay["sink"], testbed
        self.snaps = []

    def snapshot(self):
        ns = self.lay["namespaces"]
        snap = {role: _links(name) for role, name in ns.items()}
        snap["receiver_udp"] = _udp(ns["receiver"])
        snap["router_out_queues"] = {r["role"]: {"dropped": _qdisc_drops(r["netns"], r["out"])}
                                     for r in self.lay["routers"]}
        snap["router_out_queue"] = {"dropped": sum(q["dropped"] for q in
                                                   snap["router_out_queues"].values())}
        snap["cpu_steal_ms"] = _steal_ms()
        if self.sink:
            words = self.testbed("sink").split()  # "packets N bytes M"
            snap["sink"] = {"packets": int(words[1]), "bytes": int(words[3])}
        return snap

    def before(self):
        self.snaps = [self.snapshot()]

    def after(self):
        self.snaps.append(self.snapshot())

    def deltas(self):
        """{role: {interface: {counter: after - before}}, receiver_udp: {...},
        router_out_queue: {dropped: N, all routers'}, router_out_queues:
        {router role: {dropped: N}}, cpu_steal_ms: {cpu: ms}, sink: {...}}"""
        a, b = self.snaps
        return {k: _delta(a[k], b[k]) for k in a}

    def forwarded(self):
        """What the last router sent on toward the receiver."""
        return self.per_router()[self.lay["routers"][-1]["role"]]["forwarded"]

    def per_router(self):
        """{router role: {received: on its inputs, forwarded: on its output,
        out_queue_dropped}}, packets, in path order; control packets included."""
        d = self.deltas()
        return {r["role"]: {"received": sum(d[r["role"]][i]["rx_packets"] for i in r["in"]),
                            "forwarded": d[r["role"]][r["out"]]["tx_packets"],
                            "out_queue_dropped": d["router_out_queues"][r["role"]]["dropped"]}
                for r in self.lay["routers"]}


def _delta(a, b):
    if isinstance(a, dict):
        return {k: _delta(a[k], b[k]) for k in a if k in b}
    return b - a

