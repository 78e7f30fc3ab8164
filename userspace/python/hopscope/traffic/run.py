"""run_condition: one condition of a scenario, once, on a fresh testbed.

Testbed up (HS_PREFIX=prefix) -> receivers -> recorders -> senders -> wait ->
receivers and recorders stopped -> testbed down, always, also on an error or
Ctrl-C. Then the generators' logs are decoded and, with record files, joined
to the records (truth.py). The folder gets run.hsr (on a chain of routers
rK.hsr per router and the path joined in path/), the generator logs and
tables, scenario.toml and metadata.json (traffic/README.md).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from ..files import read_text, write_json
from ..live.proc import HOPSCOPE, end_with_parent, start_attached
from .collect import collect
from .counters import Counters, quiet_state
from .generators import ditg, iperf, kernel_counted
from .result import RunError
from .testbed import Testbed, TestbedError, address, interface, layout, up_options

FORMAT = "hopscope-run/1"
READY_S = 10        # receivers and recorder must be ready within this
SETTLE_S = 0.5      # after the senders: packets still in flight arrive
SETTLE_MAX_S = 30   # ... unless the router and receiver are still at it
GRACE_S = 15        # a sender may overrun its planned time by this much (+ 50 %)


def require_root():
    if os.geteuid() != 0:
        raise RunError("must run as root (network namespaces, BPF)")


def run_condition(cond, outdir, prefix="hs-", record=True, finish=None, path_pdf=True):
    """Run cond once into outdir (made if missing); see the module docstring.
    finish(result, meta), if given, runs after the results are collected and
    before metadata.json is written, and may add to meta. path_pdf: on a
    chain, write path/path.pdf too."""
    require_root()
    tools = {"ITGSend", "ITGRecv", "ITGDec"} if any(s.generator == "ditg" for s in cond.senders) \
        else set()
    tools |= {"iperf3"} if any(s.generator == "iperf3" for s in cond.senders) else set()
    missing = sorted(t for t in tools if not shutil.which(t))
    if missing:
        raise RunError(f"{', '.join(missing)} not found: run scripts/install-deps.sh")
    if record and not os.access(HOPSCOPE, os.X_OK):
        raise RunError(f"{HOPSCOPE} not found: run make")
    try:
        lay = layout(prefix, **cond.testbed)
    except TestbedError as e:
        raise RunError(f"testbed: {e}")
    run = _Run(cond, os.path.abspath(outdir), prefix, record, finish, lay)
    run.path_pdf = path_pdf
    try:
        return run.go()
    except BaseException as e:
        # what failed and what had been done, for whoever looks at the folder
        run.meta["error"] = f"{type(e).__name__}: {e}"
        if os.path.isdir(run.out):
            write_json(run.path("metadata.json"), run.meta)
        raise
    finally:
        run.cleanup()


class _Run:
    def __init__(self, cond, outdir, prefix, record, finish, lay):
        self.cond, self.out, self.prefix, self.record = cond, outdir, prefix, record
        self.finish = finish
        self.lay = lay  # planned; the live one (testbed.sh status --json) once up
        self.procs = []  # (name, Popen), stopped at cleanup
        self.meta = {"format": FORMAT, "condition": cond.to_dict(), "scenario": cond.scenario,
                     "prefix": prefix, "record": record,
                     "addresses": {role: address(lay, role)
                                   for role in (*lay["senders"], "receiver")},
                     "senders": {}, "warnings": []}
        self.up = False
        self.rxcount = None
        self.recorders = []  # (router role, Popen), in path order

    @property
    def chain(self):
        return len(self.lay["routers"]) > 1

    def record_files(self):
        """(router role, record file) per router in path order: run.hsr for
        one router, rK.hsr for each of a chain's."""
        if not self.chain:
            return [(self.lay["routers"][0]["role"], self.path("run.hsr"))]
        return [(r["role"], self.path(f"{r['role']}.hsr")) for r in self.lay["routers"]]

    def path(self, name):
        return os.path.join(self.out, name)

    def testbed(self, *args):
        """testbed.sh ARGS, logged in the run's testbed.log; RunError if it fails."""
        try:
            return Testbed(self.prefix, log=self.path("testbed.log")).run(*args).strip()
        except TestbedError as e:
            raise RunError(str(e)) from None

    def ns(self, role):
        return self.lay["namespaces"][role]

    def spawn(self, name, role, cpu, argv, stdout, env=None, stdin=subprocess.DEVNULL):
        cmd = ["ip", "netns", "exec", self.ns(role), "taskset", "-c", str(cpu), *argv]
        with open(self.path(stdout), "wb") as out, open(self.path(f"{name}.stderr"), "wb") as err:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=stdin,
                                 env=dict(os.environ, **(env or {})),
                                 preexec_fn=end_with_parent(os.getpid()))
        self.procs.append((name, p))
        return p

    def go(self):
        cond, t_start = self.cond, time.monotonic()
        os.makedirs(self.out, exist_ok=True)
        with open(self.path("scenario.toml"), "w") as f:
            f.write(cond.source_text)
        self.testbed("down")  # what an interrupted run with this prefix left
        self.up = True
        self.testbed("up", *up_options(**cond.testbed))
        try:
            self.lay = layout(self.prefix, live=True)
        except TestbedError as e:
            raise RunError(f"testbed.sh up: {e}")
        self.meta["testbed"] = self.lay
        cpus = self.meta["cpus"] = dict(self.lay["cpus"])
        counters = Counters(self.lay, self.testbed)
        counters.before()
        self.start_receivers(cpus["receiver"])
        if self.record:
            self.start_recorders(cpus["router"])
        self.meta["senders_start_realtime_ns"] = time.time_ns()
        self.run_senders(cpus)
        self.settle()
        self.stop_receivers()
        if self.record:
            self.stop_recorders()
        counters.after()
        self.teardown()
        self.meta["interfaces"] = counters.deltas()
        self.meta["seconds"] = time.monotonic() - t_start
        result = collect(self, counters, self.finish)
        result.seconds = self.meta["seconds"]
        return result

    # ---- receivers and recorder

    def start_receivers(self, cpu):
        checks = []
        self.signal_ports = ditg.signal_ports(self.cond.senders)
        for s in self.cond.senders:
            if s.generator == "ditg":
                argv = ditg.receiver_command(self.signal_ports[s.name],
                                             self.path(f"{s.name}.ditg-recv.log"))
                self.spawn(f"{s.name}.ITGRecv", "receiver", cpu, argv, f"{s.name}.ITGRecv.stdout",
                           env=ditg.ENV)
                checks.append(self.signal_ports[s.name])
            else:
                self.spawn(f"{s.name}.iperf3-server", "receiver", cpu, iperf.server_command(s),
                           f"{s.name}.iperf3-server.json")
                checks.append(s.port)
        ns = ["ip", "netns", "exec", self.ns("receiver")]
        for port in checks:
            self.wait(lambda: _listening(ns, port), f"a receiver listening on port {port}")
        counted = [s for s in self.cond.senders if kernel_counted(s, self.cond)]
        if counted:
            # the generators' receivers miss a flow's last datagrams: count them
            # in the kernel (rxcount.py), by IP length when the size is constant
            specs = [f"{s.name}={self.meta['addresses'][s.namespace]}:{s.port}:"
                     f"{28 + s.size['value'] if s.size['dist'] == 'constant' else 0}"
                     for s in counted]
            env = {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__))))}
            self.rxcount = self.spawn("rxcount", "receiver", cpu,
                                      [sys.executable, "-m", "hopscope.traffic.rxcount",
                                       interface(self.lay, "receiver"), *specs],
                                      "rxcount.json", env=env, stdin=subprocess.PIPE)
            self.wait(lambda: "ready" in read_text(self.path("rxcount.json")),
                      "the receive counter", self.rxcount)

    def start_recorders(self, cpu):
        """One recorder per router, each attached before the next starts and
        all before the senders. One router: its inputs and output, as ever.
        A chain's router: every interface both --in and --out, so the
        packets on the links between routers are recorded both ways (the
        path join's two-way bound on the clocks' offset)."""
        t = self.cond.tracer
        options = ["--backend", t["backend"], "--xdp-mode", t["xdp_mode"],
                   "--ring", str(t["ring_mib"]), "--slots", str(t["slots"])]
        options += ["--stages", ",".join(t["stages"])] if t["stages"] else []
        options += [] if t["drops"] else ["--no-drops"]
        for (role, file), r in zip(self.record_files(), self.lay["routers"]):
            if self.chain:
                ifs = ",".join(i["name"] for i in self.lay["interfaces"][role])
                where = ["--router-id", role, "--in", ifs, "--out", ifs]
            else:
                where = ["--in", ",".join(r["in"]), "--out", r["out"]]
            argv = [HOPSCOPE, "record", "--netns", r["netns"], *where, "-o", file, *options]
            self.start_recorder(role, argv, cpu)

    def recorder_meta(self, role):
        """metadata.json's entry of role's recorder: "recorder" on one
        router, "recorders"[role] on a chain."""
        return self.meta.setdefault("recorders", {}).setdefault(role, {}) if self.chain \
            else self.meta.setdefault("recorder", {})

    def recorder_stderr(self, role):
        return self.path(f"{role}.recorder.stderr" if self.chain else "recorder.stderr")

    def start_recorder(self, role, argv, cpu):
        self.recorder_meta(role)["command"] = argv
        name = f"{role} recorder" if self.chain else "recorder"
        with open(self.recorder_stderr(role), "wb") as err:
            p, line = start_attached(["taskset", "-c", str(cpu), *argv],
                                     READY_S, stdout=subprocess.DEVNULL, stderr=err,
                                     stdin=subprocess.DEVNULL,
                                     preexec_fn=end_with_parent(os.getpid()))
        self.procs.append((name, p))
        self.recorders.append((role, p))
        if line != b"ready\n":
            if line is None:
                raise RunError(f"waited {READY_S} s for the {name} to attach")
            p.poll()
            raise RunError(f"the {name} did not attach"
                           + (f" (exit {p.returncode})" if p.returncode is not None else "")
                           + f": {read_text(self.recorder_stderr(role))[-500:]}")

    def stop_recorders(self):
        """SIGINT to every recorder at once, then each must end well."""
        for _, p in self.recorders:
            p.send_signal(signal.SIGINT)
        for role, p in self.recorders:
            self.stop_recorder(role, p)

    def stop_recorder(self, role, p):
        """Wait for one recorder signalled to stop; RunError unless it ended well."""
        name = f"the {role} recorder" if self.chain else "the recorder"
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise RunError(f"{name} did not stop within 30 s of SIGINT")
        self.recorder_meta(role)["exit"] = p.returncode
        if p.returncode != 0:
            raise RunError(f"{name} failed (exit {p.returncode}): "
                           f"{read_text(self.recorder_stderr(role))[-500:]}")

    def wait(self, ready, what, proc=None):
        end = time.monotonic() + READY_S
        while not ready():
            if proc is not None and proc.poll() is not None:
                raise RunError(f"waiting for {what}: it exited ({proc.returncode})")
            if time.monotonic() > end:
                raise RunError(f"waited {READY_S} s for {what}")
            time.sleep(0.05)

    # ---- senders

    def run_senders(self, cpus):
        rx = self.meta["addresses"]["receiver"]
        t0 = time.monotonic()
        running = []
        for s in sorted(self.cond.senders, key=lambda s: s.start):
            delay = t0 + s.start - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            cpu = cpus[s.cpu] if isinstance(s.cpu, str) else s.cpu
            if s.generator == "ditg":
                files = {"send_log": f"{s.name}.ditg-send.log", "recv_log": f"{s.name}.ditg-recv.log",
                         "packets": f"{s.name}.packets.parquet"}
                argv = ditg.sender_command(s, rx, self.signal_ports[s.name],
                                           self.path(files["send_log"]))
                p = self.spawn(s.name, s.namespace, cpu, argv, f"{s.name}.stdout", env=ditg.ENV)
            else:
                files = {"client": f"{s.name}.iperf3-client.json",
                         "server": f"{s.name}.iperf3-server.json"}
                argv = iperf.client_command(s, rx)
                p = self.spawn(s.name, s.namespace, cpu, argv, files["client"])
            self.meta["senders"][s.name] = {"generator": s.generator, "namespace": s.namespace,
                                            "address": self.meta["addresses"][s.namespace],
                                            "cpu": cpu,
                                            "command": argv, "files": files}
            running.append((s, p, t0 + s.start + s.seconds() * 1.5 + GRACE_S))
        for s, p, deadline in running:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RunError(f"sender {s.name} ({s.generator}) did not finish within "
                               f"{s.seconds() * 1.5 + GRACE_S:.0f} s of its start")
            self.meta["senders"][s.name]["exit"] = p.returncode
            if p.returncode != 0:
                raise RunError(f"sender {s.name} ({s.generator}) failed (exit {p.returncode}): "
                               f"{read_text(self.path(s.name + '.stderr'))[-500:]}")

    def settle(self):
        """Wait until what the senders sent has gone through: the router's
        output queue empty, nothing more transmitted or received, the
        receiver's sockets read; at least SETTLE_S (a busy machine's
        receiver lags, and a fixed wait cut its last packets off), at most
        SETTLE_MAX_S (then the counts say what did not arrive)."""
        time.sleep(SETTLE_S)
        end, last = time.monotonic() + SETTLE_MAX_S, None
        while time.monotonic() < end:
            now = quiet_state(self.lay)
            if now == last and now[0] == 0 and now[3] == 0:
                return
            last = now
            time.sleep(0.05)

    def stop_receivers(self):
        logs = [self.path(m["files"]["recv_log"]) for m in self.meta["senders"].values()
                if "recv_log" in m["files"]]
        ditg.wait_logs_closed(logs)
        if self.rxcount:
            self.rxcount.stdin.close()
            self.rxcount.wait(timeout=10)
            self.meta["rxcount"] = json.loads(read_text(self.path("rxcount.json")).split("\n")[1])
        for name, p in self.procs:
            if name.endswith("iperf3-server"):
                try:
                    p.wait(timeout=10)  # -1: it ends with its test
                except subprocess.TimeoutExpired:
                    raise RunError(f"{name} did not end after its test")
            elif name.endswith("ITGRecv"):
                p.terminate()
                p.wait(timeout=10)

    def teardown(self):
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.up:
            self.testbed("down")
            self.up = False

    def cleanup(self):
        """Whatever is left, stopped; never raises over the run's own error."""
        try:
            self.teardown()
        except Exception as e:  # noqa: BLE001 - reported, the original error wins
            self.meta["warnings"].append(f"cleanup: {e}")


def _listening(ns_exec, port):
    out = subprocess.run(ns_exec + ["ss", "-Hltn", f"sport = :{port}"],
                         capture_output=True, text=True).stdout
    return bool(out.strip())
