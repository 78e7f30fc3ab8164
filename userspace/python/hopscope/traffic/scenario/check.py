"""The checks behind scenario.py: which keys exist, their types, ranges and
what the generators can do (traffic/README.md). Problems are collected as
(origin key path, message) and turned into file:line messages by scenario.py.
"""
import math
import os
import re

from ...record import format as fmt
from ..throughput_file import READ_ERRORS, read_results

TOP = {"name", "description", "repetitions", "duration", "throughput", "testbed", "tracer",
       "senders", "conditions", "vary"}
CASE = {"name", "description", "duration", "repetitions", "testbed", "tracer", "senders"}
TESTBED = {"mode", "routers", "shape", "shape_in", "sink", "shield"}
TRACER = {"stages", "backend", "xdp_mode", "ring_mib", "slots", "drops"}
SENDER = {"namespace", "generator", "protocol", "tos", "size", "rate", "gaps", "count",
          "duration", "start", "port", "cpu", "send_buffer", "seed", "active"}
VARIED_TOP = {"duration", "repetitions"}

GENERATORS = ("ditg", "iperf3")
PROGRAM = {"ditg": "ITGSend", "iperf3": "iperf3"}
# what one sender process reached on the 2-CPU testbed (evaluation/measurements.md,
# "Traffic generators")
MAX_PPS = {"ditg": 130_000, "iperf3": 380_000}
# D-ITG's payload starts with its 20-byte header; iperf3's UDP header needs 16
MIN_SIZE = {"ditg": 20, "iperf3": 16}
MAX_SIZE = {"udp": 1472, "tcp": 65535}  # 1472: one unfragmented datagram at MTU 1500
POLL_PPS = 1000  # D-ITG busy-waits (-poll) gaps under 1 ms
SIZE_DISTS = {"constant": ("value",), "normal": ("mean", "std"), "pareto": ("shape", "scale"),
              "uniform": ("min", "max")}
# the optional stages as `record --stages` names them (t_tcin -> tcin)
STAGES = tuple(s.removeprefix("t_") for s in fmt.STAGE_NAMES if s not in fmt.CORE_STAGES)
CPU_ROLES = ("sender", "router", "receiver")
# beyond these a value is a typing error, and would run for months
MAX_SECONDS = 86_400        # one run's traffic: a day
MAX_REPETITIONS = 10_000
MAX_COUNT = 10**10          # packets of one sender in one run
MAX_CONDITIONS = 10_000     # cases x the [vary] product
NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
CASE_RE = re.compile(r"[A-Za-z0-9_=-][A-Za-z0-9._=-]*")
ROUTER_RE = re.compile(r"r([1-9][0-9]*)")  # a chain's router: r1, r2, ...
LOSSLESS_RE = re.compile(r"lossless(?:\[([^\]]+)\])?(?:\*([0-9]*\.?[0-9]+))?")


def flatten(doc, origin, allowed, out, senders, problems):
    """doc's keys into out: key path -> (value, origin path in the file)."""
    for k, v in doc.items():
        o = origin + (k,)
        if k not in allowed:
            problems.append((o, f"{k}: unknown key (known here: {', '.join(sorted(allowed))})"))
        elif k in ("testbed", "tracer"):
            if not isinstance(v, dict):
                problems.append((o, f"{k}: must be a table ([{k}])"))
                continue
            known = TESTBED if k == "testbed" else TRACER
            for kk, vv in v.items():
                if kk not in known:
                    problems.append((o + (kk,), f"{k}.{kk}: unknown key (known: "
                                                f"{', '.join(sorted(known))})"))
                else:
                    out[(k, kk)] = (vv, o + (kk,))
        elif k == "senders":
            if not isinstance(v, dict):
                problems.append((o, "senders: must be a table of sender tables ([senders.NAME])"))
                continue
            for name, sv in v.items():
                so = o + (name,)
                if not NAME_RE.fullmatch(name):
                    problems.append((so, f"senders.{name}: a sender's name takes letters, digits,"
                                         " '_' and '-' only"))
                    continue
                if not isinstance(sv, dict):
                    problems.append((so, f"senders.{name}: must be a table of the sender's keys"))
                    continue
                if name not in senders:
                    senders.append(name)
                out.setdefault(("senders", name), (None, so))
                for kk, vv in sv.items():
                    if kk not in SENDER:
                        problems.append((so + (kk,), f"senders.{name}.{kk}: unknown key (known: "
                                                     f"{', '.join(sorted(SENDER))})"))
                    else:
                        out[("senders", name, kk)] = (vv, so + (kk,))
        elif k not in ("conditions", "vary", "name"):
            out[(k,)] = (v, o)


def safe_name(s):
    """s with what a folder name should not hold replaced by '-'."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "-", s) or "x"


def _label(v):
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict):
        return "-".join(_label(x) for x in v.values())
    if isinstance(v, list):
        return "-".join(_label(x) for x in v)
    return str(v)


def vary_axes(vary, senders, problems):
    """[(key path, [(value, origin, name label), ...]), ...] from [vary]."""
    if not isinstance(vary, dict):
        problems.append((("vary",), "vary: must be a table of \"key.path\" = [values]"))
        return []
    paths = {key: tuple(key.split(".")) for key in vary}
    axes = []
    for key, values in vary.items():
        o, path = ("vary", key), paths[key]
        ok = ((len(path) == 1 and path[0] in VARIED_TOP)
              or (len(path) == 2 and path[0] == "testbed" and path[1] in TESTBED)
              or (len(path) == 2 and path[0] == "tracer" and path[1] in TRACER)
              or (len(path) == 3 and path[0] == "senders" and path[2] in SENDER
                  and NAME_RE.fullmatch(path[1])))
        if not ok:
            problems.append((o, f"vary: {key!r} is not a key that can vary (such as "
                                "\"senders.sender1.rate\", \"testbed.shape\", \"duration\")"))
            continue
        if not isinstance(values, list) or not values:
            problems.append((o, f"vary: {key!r} must be a list of at least one value"))
            continue
        if path[0] == "senders" and path[1] not in senders:
            senders.append(path[1])
        label = _short(path, list(paths.values()))
        axes.append((path, [(v, o + (j,), f"{label}={safe_name(_label(v))}")
                            for j, v in enumerate(values)]))
    return axes


def _short(path, others):
    """The shortest end of path that no other varied path ends with."""
    for n in range(1, len(path) + 1):
        if sum(1 for p in others if p[-n:] == path[-n:]) == 1:
            return ".".join(path[-n:])
    return ".".join(path)


def case_name(case, i, named, scenario, problems):
    if not named:
        return ""
    name = case.get("name")
    if not isinstance(name, str) or not CASE_RE.fullmatch(name):
        where = ("conditions", i, "name") if "name" in case else ("conditions", i)
        problems.append((where, "conditions: each [[conditions]] needs name = \"...\" of letters,"
                                " digits, '.', '_', '=' and '-' (it names the run's folder)"))
        return f"condition{i + 1}"
    return name


class Lossless:
    """rate = "lossless[COND]*F": F x the lossless rate in the throughput file."""

    def __init__(self, rel, scenario_path, problems):
        self.rel, self.problems = rel, problems
        self.path = None
        if rel is not None:
            if not isinstance(rel, str):
                problems.append((("throughput",), "throughput: must be a path (string)"))
                self.rel = None
            else:
                self.path = os.path.join(os.path.dirname(os.path.abspath(scenario_path)), rel)
        self.results = None
        self.failed = False

    def rate(self, spec, cond_name, origin, key):
        m = LOSSLESS_RE.fullmatch(spec)
        if not m:
            self.problems.append((origin, f"{key}: {spec!r} is neither packets per second nor "
                                          "\"lossless\", \"lossless*F\", \"lossless[CONDITION]*F\""))
            return None
        if self.rel is None:
            self.problems.append((origin, f"{key}: {spec!r} needs throughput = "
                                          "\"path/throughput.json\" at the top of the file"))
            return None
        if self.results is None:
            try:
                self.results = read_results(self.path)
            except READ_ERRORS as e:
                self.problems.append((("throughput",), f"throughput: cannot read {self.path}: {e}"
                                      " (make it with: hopscope throughput SCENARIO -o DIR)"))
                self.results = {}
                self.failed = True
                return None
        if self.failed:
            return None  # the file's problem is reported once, at its line
        name = m.group(1) or cond_name
        if name not in self.results:
            self.problems.append((origin, f"{key}: {self.path} has no condition {name!r} "
                                          f"(it has: {', '.join(self.results) or 'none'})"))
            return None
        pps = self.results[name]
        if not pps:
            self.problems.append((origin, f"{key}: {self.path} found no lossless rate for {name!r}"
                                          " (even its lowest rate lost packets)"))
            return None
        return pps * float(m.group(2) or 1)


class Reader:
    """Typed access to one condition's flattened keys; each bad value is a problem
    and gives the default, so every problem of a file is found in one pass."""

    def __init__(self, flat, problems):
        self.flat, self.problems = flat, problems

    def has(self, path):
        return path in self.flat

    def get(self, path, default=None):
        return self.flat[path][0] if path in self.flat else default

    def origin(self, path):
        for n in range(len(path), 0, -1):
            if path[:n] in self.flat:
                return self.flat[path[:n]][1]
        return path

    def bad(self, path, msg):
        self.problems.append((self.origin(path), f"{'.'.join(path)}: {msg}"))

    def number(self, path, default, lo=None, hi=None, above=None, below=None, what="a number"):
        v = self.get(path, default)
        if v is None or v is default:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.bad(path, f"must be {what}, not {v!r}")
            return default
        # the range a value has by nature; hi, a bound against typing errors
        # (MAX_SECONDS, ...), is named only to the value that passes it
        rng = " and ".join(x for x in (
            lo is not None and f"at least {lo}", above is not None and f"above {above}",
            below is not None and f"below {below}") if x)
        if ((lo is not None and v < lo) or (above is not None and v <= above)
                or (below is not None and v >= below)):
            self.bad(path, f"must be {rng}, not {v!r}")
            return default
        if hi is not None and v > hi:
            self.bad(path, f"must be at most {hi}, not {v!r}")
            return default
        return v

    def integer(self, path, default, lo=None, hi=None):
        v = self.get(path, default)
        if v is not None and v is not default and (isinstance(v, bool) or not isinstance(v, int)):
            self.bad(path, f"must be a whole number, not {v!r}")
            return default
        return self.number(path, default, lo=lo, hi=hi, what="a whole number")

    def choice(self, path, default, options):
        v = self.get(path, default)
        if v not in options or not isinstance(v, str):
            self.bad(path, f"must be one of {', '.join(map(repr, options))}, not {v!r}")
            return default
        return v

    def boolean(self, path, default):
        v = self.get(path, default)
        if not isinstance(v, bool):
            self.bad(path, f"must be true or false, not {v!r}")
            return default
        return v

    def string(self, path, default):
        v = self.get(path, default)
        if not isinstance(v, str):
            self.bad(path, f"must be a string, not {v!r}")
            return default
        return v


def mean_size(size):
    d = size["dist"]
    if d == "constant":
        return size["value"]
    if d == "normal":
        return size["mean"]
    if d == "pareto":
        a = size["shape"]
        return a * size["scale"] / (a - 1) if a > 1 else math.inf
    return (size["min"] + size["max"]) / 2
