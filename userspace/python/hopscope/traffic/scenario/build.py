"""One condition's keys (flattened, with where each was written) checked and
turned into the fields of scenario.Condition and its Senders."""
import math
import os

from ..generators.ditg import SIGNAL_PORT
from ..testbed import TestbedError, layout
from .check import (CPU_ROLES, GENERATORS, MAX_COUNT, MAX_PPS, MAX_REPETITIONS, MAX_SECONDS,
                    MAX_SIZE, MIN_SIZE, POLL_PPS, PROGRAM, ROUTER_RE, SIZE_DISTS, STAGES,
                    Reader, mean_size)


def build(flat, name, scenario, senders, lossless, problems):
    """Condition fields (senders as dicts), or None if this condition has problems."""
    before = len(problems)
    r = Reader(flat, problems)
    duration = r.number(("duration",), 10.0, above=0, hi=MAX_SECONDS, what="seconds")
    routers = r.integer(("testbed", "routers"), 1, lo=1)
    testbed = {"mode": r.choice(("testbed", "mode"), "rps", ("rps", "inline", "napi")),
               "routers": routers,
               "shape": _shape(r, routers),
               "shape_in": r.string(("testbed", "shape_in"), "none"),
               "sink": r.boolean(("testbed", "sink"), False),
               "shield": r.boolean(("testbed", "shield"), False)}
    lay = _layout(r, testbed)
    tracer = {"stages": _stages(r),
              "backend": r.choice(("tracer", "backend"), "auto", ("auto", "ebpf", "kmod")),
              "xdp_mode": r.choice(("tracer", "xdp_mode"), "auto", ("auto", "native", "generic")),
              "ring_mib": r.integer(("tracer", "ring_mib"), 32, lo=1),
              "slots": r.integer(("tracer", "slots"), 16384, lo=1),
              "drops": r.boolean(("tracer", "drops"), True)}
    if tracer["slots"] & (tracer["slots"] - 1):
        r.bad(("tracer", "slots"), f"must be a power of 2, not {tracer['slots']}")
    active = []
    for index, sname in enumerate(senders):
        if ("senders", sname) not in flat and not any(
                k[:2] == ("senders", sname) for k in flat):
            continue  # defined by another condition only
        s = _sender(r, sname, index, duration, lossless, name, lay)
        if s and s.pop("active"):
            active.append(s)
    if not active and len(problems) == before:
        r.bad(("senders",), "no active sender: give at least one [senders.NAME] table")
    _together(r, testbed, active, lay)
    if len(problems) > before:
        return None
    return {"name": name, "scenario": scenario,
            "repetitions": r.integer(("repetitions",), 1, lo=1, hi=MAX_REPETITIONS),
            "description": r.string(("description",), ""),
            "testbed": testbed, "tracer": tracer, "senders": active}


def _stages(r):
    v = r.get(("tracer", "stages"), [])
    if not isinstance(v, list) or any(s not in STAGES for s in v) or len(set(v)) < len(v):
        r.bad(("tracer", "stages"), f"must be a list of distinct stages from {', '.join(STAGES)},"
                                    f" not {v!r}")
        return ()
    return tuple(v)


def _layout(r, testbed):
    """The testbed this condition's [testbed] asks for, as testbed.sh plans it
    (its mode, chain and shapers checked by testbed.sh itself); None if it
    cannot be."""
    mode, routers = testbed["mode"], testbed["routers"]
    try:
        lay = layout(mode=mode)
    except TestbedError as e:
        r.bad(("testbed", "mode"), str(e))
        return None
    try:
        lay = layout(mode=mode, routers=routers)
    except TestbedError as e:
        r.bad(("testbed", "routers"), str(e))
        return None
    shape = testbed["shape"]
    # each shaper alone, so a problem names its own key
    shapes = ([(("testbed", "shape"), shape)] if isinstance(shape, str)
              else [(("testbed", "shape", k), {k: v}) for k, v in shape.items()])
    shapes.append((("testbed", "shape_in"), testbed["shape_in"]))
    for path, spec in shapes:
        if spec != "none":
            key = "shape_in" if path[-1] == "shape_in" else "shape"
            try:
                layout(mode=mode, routers=routers, **{key: spec})
            except TestbedError as e:
                r.problems.append((r.origin(path[:2]) + path[2:], f"{'.'.join(path)}: {e}"))
    return lay


def _shape(r, routers):
    """testbed.shape: a string (the last router's output), or a table of
    router (r1 .. rN) to its output's shaper; "none" where one is refused."""
    path = ("testbed", "shape")
    v = r.get(path, "none")
    if isinstance(v, str):
        return v
    if not isinstance(v, dict):
        r.bad(path, f"must be a shaper (\"tbf:10mbit\") or a table of router to shaper "
                    f"({{r2 = \"tbf:10mbit\"}}), not {v!r}")
        return "none"
    ok = True
    for k, spec in v.items():
        where = (r.origin(path) + (k,), f"testbed.shape.{k}: ")
        m = ROUTER_RE.fullmatch(k)
        if not m or int(m.group(1)) > routers:
            r.problems.append((where[0], where[1] + f"not a router of this chain: it has "
                               + ("r1 (routers = 1)" if routers == 1 else
                                  f"r1 .. r{routers} (routers = {routers})")))
            ok = False
        elif not isinstance(spec, str):
            r.problems.append((where[0], where[1] + f"must be a shaper such as \"tbf:10mbit\","
                                                    f" not {spec!r}"))
            ok = False
    return dict(v) if ok else "none"


def _sender(r, name, index, top_duration, lossless, cond_name, lay):
    def p(key):
        return ("senders", name, key)

    active = r.boolean(p("active"), True)
    ns = r.get(p("namespace"), name)
    namespaces = lay["senders"] if lay else layout(mode="inline")["senders"]
    if ns not in namespaces:
        r.bad(p("namespace"), (f"{ns!r} is not a namespace of the testbed" if r.has(p("namespace"))
                               else f"sender {name!r} names no namespace of the testbed")
              + f" (it has {', '.join(namespaces)}): add namespace = "
                f"\"{namespaces[0]}\" or rename it")
    gen = r.choice(p("generator"), "ditg", GENERATORS)
    proto = r.choice(p("protocol"), "udp", ("udp", "tcp"))
    size = _size(r, p("size"), gen, proto)
    gaps, implied = _gaps(r, p("gaps"), gen)
    rate = _rate(r, p("rate"), implied, lossless, cond_name)
    count = r.integer(p("count"), None, lo=1, hi=MAX_COUNT)
    duration = r.number(p("duration"), None, above=0, hi=MAX_SECONDS, what="seconds")
    if count is not None and duration is not None:
        r.bad(p("count"), "give count (packets) or duration (seconds), not both")
    if count is None and duration is None:
        duration = float(top_duration)
    send_buffer = r.integer(p("send_buffer"), None, lo=4096)
    if send_buffer is not None and gen != "iperf3":
        r.bad(p("send_buffer"), "only iperf3 sets its socket buffer (-w); D-ITG has no option")
    seed = r.number(p("seed"), None, above=0, below=1)
    if seed is not None and gen != "ditg":
        r.bad(p("seed"), "only D-ITG draws random sizes and gaps; iperf3 takes no seed")
    s = {"name": name, "namespace": ns, "generator": gen, "protocol": proto,
         "tos": r.integer(p("tos"), 0, lo=0, hi=255), "size": size, "rate": rate, "gaps": gaps,
         "count": count, "duration": duration, "start": float(r.number(p("start"), 0.0, lo=0)),
         "port": r.integer(p("port"), 10001 + index, lo=1024, hi=65535), "cpu": _cpu(r, p("cpu")),
         "send_buffer": send_buffer, "seed": seed, "active": active}
    if rate is None or size is None:
        return None
    where = p("gaps") if implied else p("rate")
    if rate > MAX_PPS[gen]:
        r.bad(where, f"impossible rate: {rate:g} pps is more than {PROGRAM[gen]} sends (about "
                     f"{MAX_PPS[gen]} pps measured for one process, evaluation/measurements.md)"
                     + ("; use generator = \"iperf3\" for constant traffic" if gen == "ditg" else ""))
    elif count is None and rate * duration < 1:
        r.bad(where, f"impossible rate: {rate:g} pps for {duration:g} s sends no packet")
    return s


def _size(r, path, gen, proto):
    v = r.get(path)
    lo, hi = MIN_SIZE[gen], MAX_SIZE[proto]
    if v is None:
        r.bad(path, "required: the payload size in bytes (or a distribution table)")
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        v = {"dist": "constant", "value": v}
    if not isinstance(v, dict) or v.get("dist") not in SIZE_DISTS:
        r.bad(path, f"must be bytes (550) or a table with dist = one of {', '.join(SIZE_DISTS)},"
                    f" not {v!r}")
        return None
    keys = SIZE_DISTS[v["dist"]]
    if set(v) != {"dist", *keys}:
        r.bad(path, f"dist = {v['dist']!r} takes {', '.join(keys)}, not {', '.join(sorted(v))}")
        return None
    if any(isinstance(v[k], bool) or not isinstance(v[k], (int, float)) or not math.isfinite(v[k])
           for k in keys):
        r.bad(path, f"{', '.join(keys)} must be numbers, not {v!r}")
        return None
    if v["dist"] != "constant" and gen == "iperf3":
        r.bad(path, "iperf3 sends one size: use generator = \"ditg\" for a size distribution")
        return None
    d = v["dist"]
    ok = {"constant": lambda: isinstance(v["value"], int) and lo <= v["value"] <= hi,
          "normal": lambda: lo <= v["mean"] <= hi and v["std"] >= 0,
          "pareto": lambda: v["shape"] > 1 and lo <= v["scale"] and mean_size(v) <= hi,
          "uniform": lambda: lo <= v["min"] < v["max"] <= hi}[d]
    if not ok():
        shown = v["value"] if d == "constant" else v
        r.bad(path, f"{shown!r} is out of range: {PROGRAM[gen]} {proto.upper()} payloads are {lo}.."
                    f"{hi} bytes" + (" (a whole number)" if d == "constant" else "")
                    + ("; Pareto needs shape > 1 for a mean size" if d == "pareto" else ""))
        return None
    return dict(v)


def _gaps(r, path, gen):
    """({dist, [shape]}, implied rate from a Pareto scale_ms or None)."""
    v = r.get(path, "constant")
    if isinstance(v, str):
        v = {"dist": v}
    dist = v.get("dist") if isinstance(v, dict) else None
    keys = {"constant": set(), "exponential": set(), "pareto": {"shape", "scale_ms"}}
    if dist not in keys or not set(v) - {"dist"} <= keys[dist]:
        r.bad(path, "must be \"constant\", \"exponential\", \"pareto\" or a table such as "
                    f"{{dist = \"pareto\", shape = 1.5}}, not {v!r}")
        return {"dist": "constant"}, None
    if dist != "constant" and gen == "iperf3":
        r.bad(path, "iperf3 paces at a constant rate: use generator = \"ditg\" for random gaps")
    if dist != "pareto":
        return {"dist": dist}, None
    a = v.get("shape")
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not a > 1 or not math.isfinite(a):
        r.bad(path, f"Pareto gaps need shape > 1 (otherwise the mean gap, so the rate, is "
                    f"infinite), not {a!r}")
        return {"dist": "constant"}, None
    k = v.get("scale_ms")
    if k is None:
        return {"dist": "pareto", "shape": a}, None
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not k > 0:
        r.bad(path, f"scale_ms must be milliseconds above 0, not {k!r}")
        return {"dist": "pareto", "shape": a}, None
    return {"dist": "pareto", "shape": a}, 1000.0 * (a - 1) / (a * k)


def _rate(r, path, implied, lossless, cond_name):
    v = r.get(path)
    if implied is not None:
        if v is not None:
            r.bad(path, "give rate or gaps.scale_ms (which sets the mean rate), not both")
        return implied
    if v is None:
        r.bad(path, "required: packets per second (mean)")
        return None
    if isinstance(v, str):
        return lossless.rate(v, cond_name, r.origin(path), ".".join(path))
    return r.number(path, None, above=0, what="packets per second")


def _cpu(r, path):
    v = r.get(path, "sender")
    n = os.cpu_count()
    if isinstance(v, int) and not isinstance(v, bool):
        if 0 <= v < n:
            return v
    elif v in CPU_ROLES:
        return v
    r.bad(path, f"must be one of {', '.join(map(repr, CPU_ROLES))} or a CPU number 0..{n - 1},"
                f" not {v!r}")
    return "sender"


def _together(r, testbed, senders, lay):
    """What no single key says: ports, the sink, two pollers on one CPU."""
    ports = {}
    for s in senders:
        other = ports.setdefault(s["port"], s["name"])
        if other != s["name"]:
            r.bad(("senders", s["name"], "port"), f"{s['port']} is {other}'s port too: each "
                                                  "sender needs its own")
    signalling = range(SIGNAL_PORT, SIGNAL_PORT + sum(s["generator"] == "ditg" for s in senders))
    for s in senders:
        if s["port"] in signalling:
            r.bad(("senders", s["name"], "port"), f"{s['port']} is the signalling port of a "
                                                  f"D-ITG receiver ({signalling.start}.."
                                                  f"{signalling.stop - 1} here): pick another")
    if testbed["sink"]:
        udp = [s for s in senders if s["protocol"] == "udp"]
        if any(s["generator"] != "iperf3" for s in senders) or len(udp) != 1:
            r.bad(("testbed", "sink"), "the sink drops UDP data before any receiver sees it and "
                                       "counts packets, not senders: it needs exactly one UDP "
                                       "sender and iperf3 senders only")
    pollers = {}
    for s in senders:
        if lay is None or s["generator"] != "ditg" or s["rate"] is None or s["rate"] <= POLL_PPS:
            continue
        cpu = s["cpu"] if isinstance(s["cpu"], int) else lay["cpus"][s["cpu"]]
        other = pollers.setdefault(cpu, s["name"])
        if other != s["name"]:
            r.bad(("senders", s["name"], "cpu"),
                  f"impossible rate: {s['name']} and {other} are D-ITG senders busy-polling CPU "
                  f"{cpu}; each would get half of it (measured: 5545 and 4005 pps sent for 11200 "
                  "and 8000 asked). Use iperf3 for one, or pin it elsewhere (cpu = \"receiver\"; "
                  "with two CPUs the router's)")
