"""The probes' own share of the delays, from a record file's "probe_cost".

Every stage program stamps its instant as it starts; on a sample of packets
it reads the clock again as it returns (include/hopscope.h, struct hs_cost).
So the time a probe spends after its stamp lies inside the delay that begins
there: d_p = t3 - t2 holds the rest of t2's program. A delay's probe floor is
the mean of that time summed over the programs stamping inside it (the one
at its start and every enabled stage between), its spread the standard
deviation of that sum (the programs taken as independent), its p99 bound the
sum of their p99s. What no sample sees: the hooks' calls into the programs
(before a stamp) and the kernel's return from them (docs/accuracy.md).
"""
import math

from . import header as h
from .format import CORE_STAGES, DELAYS, STAGE_NAMES

SAMPLE_EVERY = 1 << h.COST_SAMPLE_SHIFT
_FIELDS = ("n", "sum_ns", "sum_sq", "max_ns", "over")


def check(pc):
    """Why a "probe_cost" object is not of the documented shape, or None."""
    if not isinstance(pc, dict):
        return "'probe_cost' is not an object"
    for k in ("sample_shift", "bucket_ns", "sq_cap_ns"):
        if type(pc.get(k)) is not int or pc[k] <= 0:
            return f"probe_cost.{k} is not a positive integer"
    stages = pc.get("stages")
    if not isinstance(stages, dict):
        return "probe_cost.stages is not an object"
    for name, c in stages.items():
        if name not in STAGE_NAMES or not isinstance(c, dict):
            return f"probe_cost.stages has {name!r}, not a stage's object"
        if any(type(c.get(f)) is not int or c[f] < 0 for f in _FIELDS):
            return f"probe_cost.stages.{name} lacks one of {', '.join(_FIELDS)} as integers"
        hist = c.get("hist")
        if not (isinstance(hist, list) and all(type(x) is int and x >= 0 for x in hist)):
            return f"probe_cost.stages.{name}.hist is not a list of counts"
        if sum(hist) + c["over"] != c["n"]:
            return f"probe_cost.stages.{name}: its histogram does not count its n samples"
    return None


def _quantile(c, bucket, q):
    """Upper edge of the bucket holding quantile q (the max, in the overflow)."""
    want, seen = q * c["n"], 0
    for i, k in enumerate(c["hist"]):
        seen += k
        if seen >= want:
            return min((i + 1) * bucket, c["max_ns"])
    return c["max_ns"]


def stage_costs(pc):
    """Per sampled stage: samples, mean, sd, p50, p99, max (ns), and over
    (samples beyond the histogram). pc: a checked "probe_cost" object."""
    out = {}
    for name, c in pc["stages"].items():
        n = c["n"]
        if not n:
            continue
        mean = c["sum_ns"] / n
        # sum_sq caps each sample at sq_cap_ns; below the cap it is exact
        var = max(c["sum_sq"] / n - min(mean, pc["sq_cap_ns"]) ** 2, 0.0)
        out[name] = {"samples": n, "mean_ns": mean, "sd_ns": math.sqrt(var),
                     "p50_ns": _quantile(c, pc["bucket_ns"], 0.5),
                     "p99_ns": _quantile(c, pc["bucket_ns"], 0.99),
                     "max_ns": c["max_ns"], "over": c["over"],
                     "capped": c["max_ns"] > pc["sq_cap_ns"]}
    return out


def delay_stages(later, earlier, enabled):
    """The enabled stages whose programs run inside [earlier, later)."""
    i, j = STAGE_NAMES.index(earlier), STAGE_NAMES.index(later)
    return [s for s in STAGE_NAMES[i:j] if s in enabled]


def delay_floors(header, costs):
    """{delay column: {floor_ns, spread_ns, p99_ns, samples, stages}} for every
    delay of the file whose stages were all sampled; costs: stage_costs() of
    its probe_cost, None when the file has none (--floor, a module older than
    ABI 2, files written before it), and then None."""
    if costs is None:
        return None
    enabled = set(header.get("stages") or ()) | set(CORE_STAGES)
    out = {}
    for col, later, earlier in DELAYS:
        if later not in enabled or earlier not in enabled:
            continue
        inside = delay_stages(later, earlier, enabled)
        if not all(s in costs for s in inside):
            continue
        parts = [costs[s] for s in inside]
        out[col] = {"floor_ns": sum(p["mean_ns"] for p in parts),
                    "spread_ns": math.sqrt(sum(p["sd_ns"] ** 2 for p in parts)),
                    "p99_ns": sum(p["p99_ns"] for p in parts),
                    "samples": min(p["samples"] for p in parts),
                    "stages": inside}
    return out
