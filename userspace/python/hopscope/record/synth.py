"""Synthetic record files: the layout the C recorder writes, filled with a
plausible router's traffic, for tests, benchmarks and notebooks.

Two senders (TOS 4 and 5) on their own input interfaces forward to one
receiver; t1 increases, every delay is positive, a few packets are dropped and
the last ones are still in flight when the "recording" stops. Options damage
the file the way a crash or a bad disk would.
"""
import json
import os
import zlib
from dataclasses import dataclass

import numpy as np

from . import format as fmt
from . import header, probecost
from .columns import encode

# (name, ifindex, role) of the synthetic router's interfaces
_INTERFACES = (("r-s1", 2, "in"), ("r-s2", 3, "in"), ("r-rx", 4, "out"))
_IFINDEX = {name: ifindex for name, ifindex, _ in _INTERFACES}
_PORT_BASE = 5000
_DPORT = 9000
# a few kernel drop reasons (enum skb_drop_reason values differ per kernel; these are samples)
_DROP_REASONS = np.array([2, 6, 46, 80], dtype=np.uint32)


@dataclass
class Synthetic:
    """What write_synthetic put in the file, to compare a reader against."""
    path: str
    header: dict
    records: np.ndarray     # every record written, fmt.RECORD_DTYPE
    flows: np.ndarray       # fmt.FLOW_DTYPE, ids 0..len-1
    chunk_offsets: list     # byte offset of each chunk header, in file order
    chunk_types: list       # fmt.CHUNK_* of each chunk


def _v6(net):
    """fd00:net::2 as 16 bytes"""
    return bytes([0xfd, 0, 0, net]) + bytes(10) + bytes([0, 2])


def _flow_table(flows_per_sender):
    """Per sender: UDP flows from 10.0.N.2 plus one IPv6 flow on sender 2."""
    rows = []  # (family, proto, sport, dport, saddr bytes, daddr bytes, sender, tos)
    for sender, tos in ((1, 4), (2, 5)):
        for i in range(flows_per_sender):
            rows.append((4, 17, _PORT_BASE + i, _DPORT,
                         bytes([10, 0, sender, 2]) + bytes(12), bytes([10, 0, 3, 2]) + bytes(12),
                         sender, tos))
    rows.append((6, 17, _PORT_BASE, _DPORT, _v6(2), _v6(3), 2, 5))
    flows = np.zeros(len(rows), dtype=fmt.FLOW_DTYPE)
    for i, (family, proto, sport, dport, saddr, daddr, _, _) in enumerate(rows):
        flows[i] = (i, family, proto, 0, sport, dport,
                    np.frombuffer(saddr, np.uint8), np.frombuffer(daddr, np.uint8), 0)
    sender = np.array([r[6] for r in rows])
    tos = np.array([r[7] for r in rows], dtype=np.uint8)
    return flows, sender, tos


def _header(n, seed, stages, start_mono, mono_to_real, flows_per_sender, router_id, boot_id):
    first, last = -2147483647, 2147483646  # the eBPF backend's netfilter priorities
    hooks = {"t0": ("tp_btf/netif_rx", None), "t1": ("xdp", None),
             "t_tcin": ("tcx/ingress", None), "t2": ("netfilter/PRE_ROUTING", first),
             "t_fwd": ("netfilter/FORWARD", first), "t3": ("netfilter/POST_ROUTING", last),
             "t_tceg": ("tcx/egress", None), "t4": ("tp_btf/net_dev_start_xmit", None)}
    return {
        "format": fmt.JSON_FORMAT,
        "version": fmt.FILE_VERSION,
        "tracer_version": "synthetic",
        "backend": "ebpf",
        "command": f"hopscope.record.synth.write_synthetic(n={n}, seed={seed})",
        "hostname": "synthetic",
        "router_id": router_id or "synthetic/router",
        "router_id_given": router_id is not None,
        "start_realtime_ns": start_mono + mono_to_real,
        "start_monotonic_ns": start_mono,
        "mono_to_realtime_ns": mono_to_real,
        "kernel": {"release": "6.18.0-synthetic", "version": "#1 SMP", "machine": "x86_64"},
        "clocksource": "tsc",
        "clock": {"clocksource": "tsc", "available_clocksources": ["tsc", "kvm-clock"],
                  "constant_tsc": True, "nonstop_tsc": True, "stamp_clock": "CLOCK_MONOTONIC",
                  "stamp_read": "bpf_ktime_get_ns", "resolution_ns": 1,
                  "user_read_cost_ns": 20, "user_read_cost_reads": 10000, "boot_id": boot_id,
                  "realtime_sync": {"synced": True, "maxerror_ns": 500_000,
                                    "esterror_ns": 20_000, "status": 0x2001,
                                    "tai_offset_s": 37},
                  "mono_to_realtime_err_ns": 30},
        "cpu": {"model": "synthetic", "count": 2},
        "netns": {"name": "router", "inode": 4026532100},
        "interfaces": [
            {"name": name, "ifindex": ifindex, "role": role, "driver": "veth",
             "xdp_mode": "generic" if role == "in" else None,
             "rps_cpus": "2" if role == "in" else "0", "mtu": 1500,
             "qdisc": [{"kind": "noqueue", "handle": "0:", "root": True} if role == "in" else
                       {"kind": "tbf", "handle": "1:", "root": True,
                        "options": {"rate": 2500000, "burst": 5000, "lat": 20000}}],
             "coalesce": None}
            for name, ifindex, role in _INTERFACES],
        "stages": list(stages),
        "hooks": [{"stage": s, "hook": hooks[s][0], "priority": hooks[s][1], "backend": "ebpf"}
                  for s in stages],
        "slots_per_cpu": 4096,
        "ringbuf_bytes": 16 << 20,
        "counter_names": list(fmt.COUNTER_NAMES),
        "stage_names": list(fmt.STAGE_NAMES),
        "synthetic": {"seed": seed, "records": n, "flows_per_sender": flows_per_sender},
    }


def _records(n, rng, stages, start_mono, rate_pps, drop_fraction, inflight, flows_per_sender):
    """n records in t1 order, flows numbered in order of first appearance."""
    flows, flow_sender, flow_tos = _flow_table(flows_per_sender)
    r = np.zeros(n, dtype=fmt.RECORD_DTYPE)
    gaps = rng.exponential(1e9 / rate_pps, n).astype(np.int64) + 1
    t1 = start_mono + 1000 + np.cumsum(gaps)
    # the IPv6 flow is rare; the IPv4 flows share the rest
    nv4 = len(flows) - 1
    raw = np.where(rng.random(n) < 0.01, nv4, rng.integers(0, nv4, n))
    # renumber: ids in order of first appearance, as the recorder assigns them
    used, first = np.unique(raw, return_index=True)
    perm = np.concatenate([used[np.argsort(first)], np.setdiff1d(np.arange(len(flows)), used)])
    renum = np.empty(len(perm), dtype=np.uint32)
    renum[perm] = np.arange(len(perm))
    flow = renum[raw]
    flows, flow_sender, flow_tos = flows[perm], flow_sender[perm], flow_tos[perm]
    flows["id"] = np.arange(len(flows))

    stage_set = set(stages)
    # delays in ns: backlog wait, input queue, processing, output path, qdisc
    d_rxq = rng.exponential(2000, n).astype(np.int64) + 200
    d_iq = rng.lognormal(np.log(800), 0.6, n).astype(np.int64) + 150
    d_p = rng.lognormal(np.log(1200), 0.3, n).astype(np.int64) + 300
    d_opath = rng.lognormal(np.log(400), 0.3, n).astype(np.int64) + 100
    d_qdisc = rng.exponential(5000, n).astype(np.int64) + 150
    t2 = t1 + d_iq
    t3 = t2 + d_p
    t_tceg = t3 + d_opath
    times = {"t0": t1 - d_rxq, "t1": t1,
             "t_tcin": t1 + d_iq // 3, "t2": t2,
             "t_fwd": t2 + d_p // 2, "t3": t3,
             "t_tceg": t_tceg, "t4": t_tceg + d_qdisc}
    for name in fmt.STAGE_NAMES:
        if name in stage_set:
            r[name] = times[name]

    status = np.full(n, fmt.STATUS["complete"], dtype=np.uint8)
    tail = slice(max(n - inflight, 0), n)  # still in the router when it stopped
    dropped = rng.random(n) < drop_fraction
    dropped[tail] = False
    status[dropped] = fmt.STATUS["dropped"]
    # a drop happens after some stage; every later stage stays 0
    seen = [s for s in fmt.STAGE_NAMES if s in stage_set and s != "t4"]
    last_seen = rng.integers(seen.index("t1"), len(seen), n)
    drop_stage = np.zeros(n, dtype=np.uint8)
    for i, s in enumerate(seen):
        sel = dropped & (last_seen == i)
        drop_stage[sel] = fmt.STAGE_NAMES.index(s)
        for later in fmt.STAGE_NAMES[fmt.STAGE_NAMES.index(s) + 1:]:
            if later in stage_set:
                r[later][sel] = 0
    r["drop_stage"] = drop_stage
    r["drop_reason"] = np.where(dropped, rng.choice(_DROP_REASONS, n), 0)
    status[tail] = fmt.STATUS["inflight"]
    r["t4"][tail] = 0
    if "t_tceg" in stage_set:
        r["t_tceg"][tail] = 0
    r["status"] = status

    sender = flow_sender[flow]
    r["flow"] = flow
    r["tos"] = flow_tos[flow]
    r["proto"] = flows["proto"][flow]
    r["sport"] = flows["sport"][flow]
    r["dport"] = flows["dport"][flow]
    r["saddr"] = flows["saddr"][flow]
    r["daddr"] = flows["daddr"][flow]
    v6 = flows["family"][flow] == 6
    r["flags"] = np.where(v6, fmt.F_IPV6, 0)
    r["ip_len"] = np.where(rng.random(n) < 0.8, 92, 1428)
    r["in_ifindex"] = np.where(sender == 1, _IFINDEX["r-s1"], _IFINDEX["r-s2"])
    r["out_ifindex"] = np.where(status == fmt.STATUS["complete"], _IFINDEX["r-rx"], 0)
    cpu = np.where(sender == 1, 1, 0).astype(np.uint16)
    r["cpu_in"] = cpu
    r["cpu_out"] = np.where(status == fmt.STATUS["inflight"], 0, cpu)
    per_cpu = np.zeros(n, dtype=np.uint64)
    for c in (0, 1):
        sel = cpu == c
        per_cpu[sel] = np.arange(1, sel.sum() + 1, dtype=np.uint64)
    r["seq"] = (cpu.astype(np.uint64) << np.uint64(header.SEQ_CPU_SHIFT)) | per_cpu
    r["key"] = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    r["path"] = 0
    return r, flows


class _Tally:
    """Counts over the records written so far, for the COUNTERS and END chunks."""

    def __init__(self):
        self.records = self.overflow = 0
        self.status = np.zeros(256, np.int64)
        self.complete_path = np.zeros(256, np.int64)
        self.seen = dict.fromkeys(("t2", "t3", "t4"), 0)

    def add(self, block):
        self.records += len(block)
        self.status += np.bincount(block["status"], minlength=256)
        complete = block["status"] == fmt.STATUS["complete"]
        self.complete_path += np.bincount(block["path"][complete], minlength=256)
        for t in self.seen:
            self.seen[t] += int(np.count_nonzero(block[t]))
        self.overflow += int(np.count_nonzero(block["flow"] == fmt.FLOW_NONE))

    def snapshot(self, mono_ns, n_flows, stop_reason=None, probe_cost=None):
        by_status = {name: int(self.status[v]) for name, v in fmt.STATUS.items()}
        counters = dict.fromkeys(fmt.COUNTER_NAMES, 0)
        counters.update(xdp_pkts=self.records, pre_pkts=self.seen["t2"],
                        post_pkts=self.seen["t3"], out_pkts=self.seen["t4"],
                        complete=by_status["complete"], dropped=by_status["dropped"],
                        fast_path=int(self.complete_path[1:].sum()))
        snap = {"monotonic_ns": int(mono_ns)}
        if stop_reason:
            snap["stop_reason"] = stop_reason
        snap["counters"] = counters
        snap["userspace"] = {"records_written": self.records, "records_by_status": by_status,
                             "complete_by_path": {p: int(self.complete_path[v])
                                                  for v, p in enumerate(fmt.PATH_NAMES)},
                             "flows": n_flows, "flow_overflow": self.overflow,
                             "inflight_at_stop": by_status["inflight"] if stop_reason else 0,
                             "rb_records": self.records}
        if probe_cost is not None:
            snap["probe_cost"] = probe_cost
        return snap


class _Writer:
    def __init__(self, f):
        self.f = f
        self.offsets = []
        self.types = []

    def chunk(self, ctype, payload, count=0):
        payload = memoryview(payload).cast("B")
        self.offsets.append(self.f.tell())
        self.types.append(ctype)
        head = np.zeros(1, dtype=fmt.CHUNK_DTYPE)
        head[0] = (fmt.CHUNK_MAGIC, ctype, count, len(payload), zlib.crc32(payload),
                   len(self.offsets) - 1)
        self.f.write(head.tobytes())
        self.f.write(payload)
        self.f.write(bytes(fmt.padded(len(payload)) - len(payload)))

    def json(self, ctype, obj):
        self.chunk(ctype, json.dumps(obj).encode())


def probe_cost(**samples):
    """A "probe_cost" object (docs/record-format.md) as the recorder would sum
    it from these exit - entry samples (ns) per stage name."""
    out = {}
    edges = probecost.bucket_edges(probecost.COST_LAYOUT)
    for stage, v in samples.items():
        s = np.asarray(v, np.int64)
        top = edges[-1]
        hist = np.trim_zeros(np.histogram(s[s < top], edges)[0], "b")
        out[stage] = {"n": len(s), "sum_ns": int(s.sum()),
                      "sum_sq": int((np.minimum(s, header.COST_SQ_CAP) ** 2).sum()),
                      "max_ns": int(s.max()), "over": int((s >= top).sum()),
                      "hist": [int(x) for x in hist]}
    return dict(probecost.COST_LAYOUT, stages=out)


def write_synthetic(path, n, seed=1, *, stages=fmt.CORE_STAGES, chunk_records=65536,
                    rate_pps=200_000, drop_fraction=0.002, inflight=3, flows_per_sender=2,
                    max_flows=None, snapshot_every=4, end=True, truncate_bytes=0,
                    corrupt_chunk=None, bad_crc_chunk=None, probe_cost=None,
                    start_mono=5_000_000_000_000, mono_to_real=1_700_000_000_000_000_000,
                    flowtable_fraction=0.0, columns=False, router_id=None,
                    boot_id="5e1f0000-0000-4000-8000-000000000001"):
    """Write an n-record file to path and return a Synthetic describing it.

    stages: enabled stage names (the core four are always there).
    max_flows: size of the recorder's flow table; records of later flows get
    fmt.FLOW_NONE, as when the recorder's table is full.
    end=False leaves out the END chunk, like a recorder that was killed.
    truncate_bytes cuts that many bytes off the end of the finished file.
    corrupt_chunk=i overwrites the magic of the i-th chunk (file order);
    bad_crc_chunk=i flips a payload byte of the i-th chunk, leaving its CRC stale.
    probe_cost: the COUNTERS and END chunks' "probe_cost" object, as given.
    start_mono: CLOCK_MONOTONIC at the start, ns (the machine's uptime).
    mono_to_real: the header's mono_to_realtime_ns (realtime = monotonic + this).
    router_id: the header's router_id, as if given with --router-id; None:
    the recorder's default, hostname/netns ("synthetic/router").
    boot_id: the header's clock.boot_id (files of one boot_id share a clock).
    flowtable_fraction: of the complete packets, this many at random took a
    flowtable's fast path (path flowtable: no t2, t_fwd, t3).
    columns: records in COLUMNS chunks, as the recorder writes them; False:
    RECORDS chunks, a record's bytes at a fixed place (for tests that change them).
    """
    stages = [s for s in fmt.STAGE_NAMES if s in set(stages) | set(fmt.CORE_STAGES)]
    rng = np.random.default_rng(seed)
    header = _header(n, seed, stages, start_mono, mono_to_real, flows_per_sender, router_id,
                     boot_id)
    records, flows = _records(n, rng, stages, start_mono, rate_pps, drop_fraction,
                              inflight, flows_per_sender)
    if flowtable_fraction:  # drawn after the rest: the other fields stay as without
        fast = (records["status"] == fmt.STATUS["complete"]) & \
            (rng.random(n) < flowtable_fraction)
        for name in ("t2", "t_fwd", "t3"):
            if name in stages:
                records[name][fast] = 0
        records["path"][fast] = fmt.PATH_NAMES.index("flowtable")
    if max_flows is not None:
        records["flow"][records["flow"] >= max_flows] = fmt.FLOW_NONE
        flows = flows[:max_flows]
    hjson = json.dumps(header, indent=1).encode()
    hjson += b" " * (fmt.padded(len(hjson)) - len(hjson))
    with open(path, "wb") as f:
        f.write(fmt.file_header(hjson))
        f.write(hjson)
        w = _Writer(f)
        flows_written = 0
        last_t = start_mono
        tally = _Tally()
        for k, lo in enumerate(range(0, n, chunk_records)):
            block = records[lo:lo + chunk_records]
            named = block["flow"][block["flow"] != fmt.FLOW_NONE]
            need = int(named.max()) + 1 if len(named) else 0
            if need > flows_written:  # flows go out before the first record naming them
                w.chunk(fmt.CHUNK_FLOWS, flows[flows_written:need], need - flows_written)
                flows_written = need
            payload = encode(block) if columns else None
            if payload is None:  # an instant does not fit a column: as the recorder
                w.chunk(fmt.CHUNK_RECORDS, block, len(block))
            else:
                w.chunk(fmt.CHUNK_COLUMNS, payload, len(block))
            tally.add(block)
            last_t = int(block["t1"].max())
            if (k + 1) % snapshot_every == 0:
                w.json(fmt.CHUNK_COUNTERS, tally.snapshot(last_t + 10**6, flows_written,
                                                          probe_cost=probe_cost))
        w.json(fmt.CHUNK_COUNTERS, tally.snapshot(last_t + 2 * 10**6, flows_written,
                                                  probe_cost=probe_cost))
        if end:
            w.json(fmt.CHUNK_END, tally.snapshot(last_t + 3 * 10**6, flows_written,
                                                 stop_reason="count", probe_cost=probe_cost))
        size = f.tell()
    with open(path, "r+b") as f:
        if corrupt_chunk is not None:
            f.seek(w.offsets[corrupt_chunk])
            f.write(b"XXXX")
        if bad_crc_chunk is not None:
            f.seek(w.offsets[bad_crc_chunk] + fmt.CHUNK_HEADER_SIZE)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        if truncate_bytes:
            f.truncate(size - truncate_bytes)
    return Synthetic(str(path), header, records, flows[:flows_written], w.offsets, w.types)


def recompute_checksums(path):
    """Rewrite the header's (version 2) and every whole chunk's CRC32 of the file
    at path to match its bytes, as if it had been written so: for tests that
    change a file on purpose. Stops at the first part that is not whole."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        if len(data) < fmt.FILE_HEADER_V1_SIZE:
            return
        fh = np.frombuffer(bytes(data[:fmt.FILE_HEADER_SIZE]).ljust(fmt.FILE_HEADER_SIZE,
                                                                     b"\0"),
                           fmt.FILE_HEADER_DTYPE, 1)[0]
        start = fmt.FILE_HEADER_V1_SIZE if fh["version"] == 1 else fmt.FILE_HEADER_SIZE
        off = start + int(fh["header_bytes"])
        if fh["version"] != 1 and off <= len(data):
            crc = fmt.header_crc(bytes(data[:fmt.HEADER_CRC_FIXED]), bytes(data[start:off]))
            data[24:28] = crc.to_bytes(4, "little")
        while off + fmt.CHUNK_HEADER_SIZE <= len(data):
            h = np.frombuffer(bytes(data[off:off + fmt.CHUNK_HEADER_SIZE]), fmt.CHUNK_DTYPE)[0]
            payload = off + fmt.CHUNK_HEADER_SIZE
            end = payload + fmt.padded(int(h["bytes"]))
            if h["magic"] != fmt.CHUNK_MAGIC or end > len(data):
                break
            crc = zlib.crc32(bytes(data[payload:payload + int(h["bytes"])]))
            data[off + 16:off + 20] = crc.to_bytes(4, "little")
            off = end
        f.seek(0)
        f.write(data)
