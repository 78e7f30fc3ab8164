"""`hopscope describe FILE`: a record file in a page of text: the run, the
system, the interfaces, counts, delays, counters and problems."""
import json
import time

import numpy as np

from ..analysis import budget
from ..record.hooks import hooks
from ..record import format as fmt, hist, nat, probecost
from ..record.load import add_verify_options, load


def add_arguments(p):
    p.add_argument("file", metavar="FILE", help="record file (.hsr)")
    p.add_argument("--json", action="store_true",
                   help="print the header, trailer and last counters as JSON instead")
    add_verify_options(p, "shown as if whole")
    p.epilog = "example:\n  hopscope describe run.hsr"


def run(args, parser):
    df = load(args.file, verify=args.verify)
    a = df.attrs
    if args.json:
        print(json.dumps({k: a[k] for k in ("header", "router_id", "trailer", "counters",
                                            "truncated",
                                            "problems", "clock", "clock_problems",
                                            "cross_cpu", "probe_cost", "probe_floor",
                                            "calibration", "histograms", "hist_drops",
                                            "sampling", "nat")},
                         indent=2))
        return 0
    for label, text in describe(df):
        print(f"{label:<11} {text}")
    return 0


def describe(df):
    """(label, text) lines summarising a loaded record file."""
    a, h = df.attrs, df.attrs["header"]
    out = [("file", f"{a['path']}: {len(df)} records"
            + (" (NOT WHOLE: see the warning above)" if a["truncated"] else "")
            + (f"; {a['dropped_records']} records of damaged chunks left out"
               if a.get("dropped_records") else ""))]
    start = h.get("start_realtime_ns")
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start / 1e9))
    except (TypeError, ValueError, OverflowError, OSError):  # not a time this machine shows
        when = "?"
    kernel, cpu = h.get("kernel") or {}, h.get("cpu") or {}
    out.append(("run", f"{when} on {h.get('hostname', '?')}, backend {h.get('backend', '?')}, "
                       f"tracer {h.get('tracer_version', '?')}"))
    out.append(("router", router_line(a["router_id"], h)))
    out.append(("command", str(h.get("command", "?"))))
    out.append(("system", f"kernel {kernel.get('release', '?')} {kernel.get('machine', '')}, "
                          f"{cpu.get('count', '?')} x {cpu.get('model', '?')}"))
    out.append(("clock", clock_line(a["clock"])))
    # the mode each input ended in (END): auto may re-attach one in generic
    ended = (a.get("trailer") or {}).get("xdp_modes") or {}
    for i in h.get("interfaces") or ():
        keys = ("ifindex", "driver", "xdp_mode", "rps_cpus", "mtu")
        detail = [f"{k} {i[k]}" + (f" ({i['xdp_mode_why']})" if k == "xdp_mode" and
                                   i.get("xdp_mode_why") else "")
                  for k in keys if i.get(k) not in (None, "")]
        end = ended.get(i.get("name"))
        if end and end != i.get("xdp_mode"):
            detail.append(f"re-attached in {end} XDP during the run (the driver gave no "
                          "metadata room)")
        life = ((a.get("counters") or {}).get("ifaces") or {}).get(i.get("name"))
        if life and (life["gone"] or life["down"] or len(life["ifindexes"]) > 1):
            detail.append(f"during the run: seen gone {life['gone']}x, down {life['down']}x, "
                          f"ifindexes {' '.join(map(str, life['ifindexes']))}, "
                          f"{life['state']} at the end")
        qdisc = i.get("qdisc")  # `tc -j qdisc show` objects
        if isinstance(qdisc, list):
            detail.append("qdisc " + " ".join(str(q.get("kind", "?")) for q in qdisc
                                              if isinstance(q, dict)))
        detail = ", ".join(detail)
        out.append(("interface", f"{i.get('name', '?')} ({i.get('role', '?')}): {detail}"))
    out += flight_lines(h, a.get("counters"))
    out.append(("stages", " ".join(h.get("stages") or ())))
    if a.get("sampling") and a["sampling"]["mode"] != "off":
        out.append(("sampling", sampling_line(a["sampling"])))
    out += [("hook", str(k)) for k in hooks(h)]
    if len(df):
        t1 = df["t1"][df["t1"] > 0]
        span = (t1.max() - t1.min()) / 1e9 if len(t1) else 0
        rate = f", {len(df) / span / 1e3:.1f} kpps" if span > 0 else ""
        out.append(("span", f"{span:.3f} s of t1{rate}"))
    counts = df["status"].value_counts(sort=False)
    out.append(("status", ", ".join(f"{k} {v}" for k, v in counts.items() if v)))
    merged = df["segs"] > 1
    if merged.any():  # the kernel module leaves GRO on
        wire = int(df["segs"][(df["status"] == "complete").to_numpy()].sum())
        out.append(("merged", f"{int(merged.sum())} records are GRO-merged packets; the "
                              f"complete records hold {wire} wire packets (column segs)"))
    pieces = (df["out_segs"] > 1) & (df["status"] == "complete")
    if pieces.any():  # the output's MTU, or a merged packet cut in software
        span = df["t4_span_ns"][pieces].to_numpy() / 1e3
        out.append(("pieces", f"{int(pieces.sum())} left in pieces (IP fragments or GSO "
                              f"segments, {int(df['out_segs'][pieces].sum())} in all; column "
                              f"out_segs): t4 is the first one's hand-over, the last one "
                              f"{np.median(span):.2f} us later at p50, {span.max():.2f} us at "
                              "most (column t4_span_ns)"))
    out.append(("cross-cpu", f"{a['cross_cpu']} of {counts.get('complete', 0)} complete records had t1 and t4 "
                             "on different CPUs (column cross_cpu): their transit holds the "
                             "TSC offset between the two CPUs (docs/clock.md)"))
    tos = df["tos"].value_counts().sort_index()
    out.append(("tos", ", ".join(f"{k}: {v}" for k, v in tos.items())))
    complete = df["status"] == "complete"
    out += path_lines(df, complete)
    out += nat.lines(a["nat"])
    delays = budget.delays(df)
    rows = {r["delay"]: r for r in delays}
    # each path's delays apart: a fast path's packets never enter the stack's
    for path in _paths_present(df, complete):
        on = (complete & (df["path"] == path)).to_numpy()
        for col in rows:
            v = df[col][on].dropna().to_numpy()
            if len(v):
                q = [x / 1e3 for x in (v.min(), *np.percentile(v, [50, 99]), v.max())]
                label = col if path == "stack" else f"{col} [{path}]"
                note = budget.floor_note(rows[col], "us") if path == "stack" else \
                    f"path {path}"
                out.append((label, "min {:.2f}  p50 {:.2f}  p99 {:.2f}  max {:.2f} us".format(*q)
                            + f" of {len(v)} packets ({note})"))
    out += budget_lines(df, delays)
    out += hist_lines(a.get("histograms"), a.get("hist_drops"), h.get("drop_reasons"))
    tr = a["trailer"]
    if tr:
        us = tr.get("userspace") or {}
        keys = ("records_written", "records_not_stored", "flows", "flow_overflow",
                "inflight_at_stop")
        detail = ", ".join(f"{k} {us[k]}" for k in keys if k in us)
        out.append(("stopped", f"{tr.get('stop_reason', '?')}; {detail}"))
        if "cpu_ns" in us:
            out.append(("recorder", recorder_line(us)))
    counters = (a["counters"] or {}).get("counters") or {}
    nonzero = ", ".join(f"{k} {v}" for k, v in counters.items() if v)
    out.append(("counters", nonzero or "none"))
    out.append(("problems", "; ".join(a["problems"] + a["clock_problems"]
                                      + unrecorded(counters)) or "none"))
    if a.get("notes"):
        out.append(("notes", "; ".join(a["notes"])))
    return out


def recorder_line(us):
    """The recorder's own work, from END's userspace counts: what keeping up cost."""
    n = us.get("records_written", 0) + us.get("records_not_stored", 0)
    per = f" ({us['cpu_ns'] / n:.0f} ns a record)" if n else ""
    ring = us.get("ring_records", 0)
    fill = (f"; a ring held {us['ring_peak_waiting']} of {ring} records at most"
            if ring and "ring_peak_waiting" in us and us["ring_peak_waiting"] else "")
    wait = (f", waited {_time(us['drain_cpu_wait_ns'])} for a CPU"
            if us.get("drain_cpu_wait_ns") else "")
    gap = us.get("drain_max_gap_ns", 0)  # 0: stopped before a second drain
    gap = f"; drains at most {_time(gap)} apart" if gap else ""
    threads = us.get("drain_threads", 1)
    threads = f", {threads} drain threads" if threads > 1 else ""
    return (f"CPU {_time(us['cpu_ns'])}{per}{threads}{wait}{gap}{fill}; write() "
            f"{_time(us.get('write_ns', 0))}, the longest {_time(us.get('write_max_ns', 0))}")


def _time(ns):
    return (f"{ns / 1e9:.2f} s" if ns >= 1e9 else f"{ns / 1e6:.1f} ms" if ns >= 1e6
            else f"{ns / 1e3:.0f} us")


def unrecorded(counters):
    """what the kernel counted forwarded from a traced input with no record"""
    n = counters.get("in_nometa", 0)
    return [f"{n} packets that came in by a traced input were forwarded without their "
            "record (in_nometa: a way in hopscope does not follow, such as IPsec or a "
            "tunnel it does not know)"] if n else []


def _paths_present(df, complete):
    """the paths of the complete records, stack first, in enum order"""
    have = set(df["path"][complete].dropna().unique())
    return [p for p in fmt.PATH_NAMES if p in have]


def path_lines(df, complete):
    """How many complete records took each path, and what a path other than
    the stack means for their delays (docs/recording.md, Forwarding paths)."""
    counts = df["path"][complete].value_counts(sort=False)
    paths = [p for p in fmt.PATH_NAMES if counts.get(p, 0)]
    out = []
    if paths != ["stack"] and paths:
        out.append(("paths", "complete records by path: "
                    + ", ".join(f"{p} {counts[p]}" for p in paths)
                    + "; d_iq, d_p and d_oq of each path are given apart"))
    if "no_netfilter" in paths:
        out.append(("paths", f"{counts['no_netfilter']} packets skipped PRE_ROUTING and "
                             "POST_ROUTING by a fast path hopscope could not name (their "
                             "input had no flowtable or tc program at the start, or both)"))
    tx = (df.attrs.get("trailer") or {}).get("outputs_tx") or {}
    if tx.get("unseen"):
        out.append(("paths", f"{tx['unseen']} packets left the traced outputs without passing "
                             "t4: a way out no probe is on (XDP forwarding from an untraced "
                             "input, a packet socket that bypasses the qdisc, hardware "
                             "offload), or a t4 the kernel skipped (recorded, inflight)"))
    partial = int((df["status"] == "partial").sum())
    if partial:
        out.append(("paths", f"{partial} packets left a traced output with t2 or t3 alone "
                             "(status partial): on their input PRE_ROUTING ran before t1 "
                             "(a bridge that calls iptables named in --in) or was skipped"))
    return out


def flight_lines(h, counters):
    """What a flight dump is (its trigger, when, which packet), or what a
    run's flight recorder did (record --flight, docs/record-format.md)."""
    d, cfg = h.get("flight_dump"), h.get("flight") or {}
    out = []
    if isinstance(d, dict):
        why = d.get("trigger", "?")
        if "delay_ns" in d:
            why += f" ({d.get('delay', '?')} {_us(d['delay_ns'])}, packet seq {d.get('trigger_seq')})"
        elif "drop_reason" in d:
            names = h.get("drop_reasons") if isinstance(h.get("drop_reasons"), dict) else {}
            why += (f" (reason {names.get(str(d['drop_reason']), d['drop_reason'])}, packet "
                    f"seq {d.get('trigger_seq')})")
        out.append(("flight", f"FLIGHT DUMP {d.get('index', '?')}: trigger {why} at "
                              f"{_into_run(h, d.get('trigger_ns'))} s into the run; the last "
                              f"{d.get('records', '?')} records before the freeze at "
                              f"{_into_run(h, d.get('frozen_ns'))} s "
                              f"({d.get('triggers', '?')} triggers by then; the rings kept "
                              f"{d.get('records_per_cpu', '?')} per CPU)"))
    elif cfg:
        f = (counters or {}).get("flight") or {}
        out.append(("flight", f"recorder on: last {cfg.get('records', '?')} records, triggers "
                              + ", ".join(map(str, cfg.get("triggers") or ()))
                              + (f"; {f.get('dumps', 0)} dumps, {f.get('dumps_skipped', 0)} "
                                 f"skipped, {f.get('triggers', 0)} triggers, "
                                 f"{f.get('records_not_kept', 0)} records not kept (frozen)"
                                 if f else "")))
    return out


def _into_run(h, ns):
    """a monotonic instant as seconds into the run of header h"""
    start = h.get("start_monotonic_ns")
    return "?" if not isinstance(ns, int) or not isinstance(start, int) else \
        f"{(ns - start) / 1e9:.3f}"


def hist_lines(series, drops=None, reasons=None):
    """A line per stage histogram series: its count and the upper bounds of
    the buckets holding p50 and p99 (record/hist.py); one for the drops
    counted beside them, reasons named by the header's table."""
    out = []
    if drops:
        names = reasons if isinstance(reasons, dict) else {}
        out.append(("drops", ", ".join(
            f"{d['count']} at {d['stage']} ({names.get(str(d['reason']), d['reason'])})"
            for d in drops)))
    for sr in series or ():
        q = [hist.quantile(sr, x) for x in (0.5, 0.99)]
        path = "" if sr.get("path", "stack") == "stack" else f" path {sr['path']}"
        out.append(("histogram", f"{sr['delay']} tos {sr['tos']} out {sr['out_if']}{path}: "
                                 f"{sr['count']} delays, p50 <= {_us(q[0])}, p99 <= {_us(q[1])}"
                                 + (f", {sr['overflow']} beyond the last bucket"
                                    if sr["overflow"] else "")))
    return out


def sampling_line(s):
    """--sample: how, how many of the packets at t1 were traced, and the
    factor that turns a count of traced packets into an estimate of all"""
    how = (f"1 packet in {s['n']}, at random" if s["mode"] == "fixed" else
           f"auto, within {s['cpu_budget_pct']:g} % of a CPU: 1 packet in "
           f"{s.get('n_min', '?')}..{s.get('n_max', '?')}, {s['n']} at the end")
    if "seen" in s and "sampled" in s:
        how += f"; {s['sampled']} of {s['seen']} packets at t1 traced"
    if s.get("scale"):
        how += (f"; every count and histogram here is of the traced packets "
                f"(x {s['scale']:.4g} estimates all)")
    return how


def _us(v, sign=""):
    return "?" if v is None else f"{sign}{v / 1e3:.3f} us"


def budget_lines(df, delays):
    """The error budget (analysis/budget.py) as describe lines; delays:
    budget.delays(df)."""
    out = [("budget", "instant: where stamped; probe time before it (baseline); its uncertainty")]
    for r in budget.instants(df):
        out.append(("budget", f"{r['instant']}: {r['hook']}; {r['clock']}; baseline "
                              f"{_us(r['baseline_ns'])}; uncertainty {_us(r['uncertainty_ns'], '±')}"))
    for r in delays:
        cross = (f"; {r['cross_cpu']} records across CPUs add the TSC offset"
                 if r["cross_cpu"] else "")
        idle = (f"; {r['idle']['packets']} packets that found the router idle: p50 "
                f"{_us(r['idle']['p50_ns'])}" if r["idle"] else "")
        out.append(("budget", f"{r['delay']} ({r['span']}, probes {r['probes'] or 'none'}): "
                              f"floor {_us(r['floor_ns'])}, mean {_us(r['mean_ns'])}, "
                              f"spread {_us(r['spread_ns'], '±')}, "
                              f"p99 floor <= {_us(r['p99_floor_ns'])}, uncertainty "
                              f"{_us(r['uncertainty_ns'], '±')}{cross}{idle}"))
    pc = df.attrs.get("probe_cost")
    if pc:
        n = max(c["samples"] for c in pc.values())
        out.append(("budget", f"from {n} sampled packets (1 in {probecost.SAMPLE_EVERY} per CPU); "
                              "not in the floor: the hooks' calls into the probes "
                              "(docs/accuracy.md)"))
    return out


def router_line(rid, h):
    """The router's id (df.attrs["router_id"]), where it came from, its host and netns."""
    given = {True: "given", False: "default"}.get(h.get("router_id_given"),
                                                  "from hostname and netns: a file before "
                                                  "router_id")
    netns = (h.get("netns") or {}).get("name")
    return (f"{rid} ({given}), hostname {h.get('hostname', '?')}, "
            + (f"netns {netns}" if netns else "the recorder's own netns"))


def clock_line(c):
    """The clock facts of a loaded file's df.attrs["clock"] in one line."""
    def yes(v):
        return {True: "yes", False: "NO"}.get(v, v)
    avail = c["available_clocksources"]
    avail = " ".join(avail) if isinstance(avail, list) else avail
    res, cost = c["resolution_ns"], c["user_read_cost_ns"]
    sync, err = c["realtime_sync"], c["mono_to_realtime_err_ns"]
    if isinstance(sync, dict):
        sync = (("synced" if sync["synced"] else "NOT synced")
                + f" (maxerror {sync['maxerror_ns']} ns, esterror {sync['esterror_ns']} ns, "
                  f"status {sync['status']:#x}, TAI offset {sync['tai_offset_s']} s)")
    return (f"clocksource {c['clocksource']} (available: {avail}), "
            f"constant_tsc {yes(c['constant_tsc'])}, nonstop_tsc {yes(c['nonstop_tsc'])}; "
            f"instants {c['stamp_clock']} by {c['stamp_read']}, resolution "
            + (f"{res} ns" if isinstance(res, int) else res)
            + "; one read in user space "
            + (f"{cost} ns (median of {c['user_read_cost_reads']})"
               if isinstance(cost, int) else cost)
            + f"; boot_id {c['boot_id']}; realtime {sync}, monotonic to realtime ± "
            + (f"{err} ns" if isinstance(err, int) else err))
