"""The probes' own share of the delays, from a record file's "probe_cost".

Every stage program stamps its instant as it starts; on a sample of packets
it reads the clock again as it returns (include/hopscope.h, struct hs_cost).
So the time a probe spends after its stamp lies inside the delay that begins
there: d_p = t3 - t2 holds the rest of t2's program. Per delay, over the
programs stamping inside it (the one at its start and every enabled stage
between):
- floor: a lower bound, below which at most 1 % of the sampled packets'
  probe time lies (FLOOR_QUANTILE): every packet's delay holds its own probe
  time, so at most that share of the delays may lie below the floor;
- mean: the mean probe time, what the probes add on average (less_probe);
- spread: the standard deviation of that sum (the programs taken as
  independent); p99: the sum of their p99s, a bound.
What no sample sees: the hooks' calls into the programs (before a stamp) and
the kernel's return from them (docs/accuracy.md).
"""
import math

from . import header as h
from .format import CORE_STAGES, DELAYS, STAGE_NAMES

SAMPLE_EVERY = 1 << h.COST_SAMPLE_SHIFT
_FIELDS = ("n", "sum_ns", "sum_sq", "max_ns", "over")
# the histogram's layout the recorder writes (include/hopscope.h, hs_cost_bucket)
COST_LAYOUT = {"sample_shift": h.COST_SAMPLE_SHIFT, "bucket_ns": h.COST_BUCKET_NS,
               "fine_buckets": h.COST_FINE, "wide_ns": h.COST_WIDE_NS,
               "sq_cap_ns": h.COST_SQ_CAP}
# the floor: the probes' time below which this share of the samples lies
FLOOR_QUANTILE = 0.01
# the floor check's confidence: a run is said to break its floor when so many
# delays lie below it that its probes' own samples would show it with
# probability under this
FLOOR_CHECK_ALPHA = 1e-3


def check(pc):
    """Why a "probe_cost" object is not of the documented shape, or None."""
    if not isinstance(pc, dict):
        return "'probe_cost' is not an object"
    for k in ("sample_shift", "bucket_ns", "sq_cap_ns"):
        if type(pc.get(k)) is not int or pc[k] <= 0:
            return f"probe_cost.{k} is not a positive integer"
    for k in ("fine_buckets", "wide_ns"):      # files before them: fine buckets only
        if k in pc and (type(pc[k]) is not int or pc[k] <= 0):
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


def bucket_edges(pc, n=h.COST_BUCKETS):
    """The first n + 1 bucket edges (ns) of a "probe_cost" object's histogram:
    fine_buckets of bucket_ns, then buckets of wide_ns (files written before
    the wide buckets: bucket_ns throughout)."""
    fine, b = pc.get("fine_buckets", n), pc["bucket_ns"]
    wide = pc.get("wide_ns", b)
    return [i * b if i <= fine else fine * b + (i - fine) * wide for i in range(n + 1)]


def _quantile(c, edges, q, upper=True):
    """The edge of the bucket holding quantile q: its upper edge (the max, in
    the overflow), or its lower one (upper=False), a bound from below."""
    want, seen = q * c["n"], 0
    for i, k in enumerate(c["hist"]):
        seen += k
        if seen >= want and k:
            return min(edges[i + 1], c["max_ns"]) if upper else edges[i]
    return c["max_ns"] if upper else edges[len(c["hist"])]


def stage_costs(pc):
    """Per sampled stage: samples, mean, sd, min (the lowest bucket's lower
    edge), low (FLOOR_QUANTILE's bucket, lower edge) and below_low (samples
    under it), p50, p99, max (ns), and over (samples beyond the histogram).
    pc: a checked "probe_cost" object."""
    out = {}
    edges = bucket_edges(pc, max((len(c["hist"]) for c in pc["stages"].values()), default=0))
    for name, c in pc["stages"].items():
        n = c["n"]
        if not n:
            continue
        mean = c["sum_ns"] / n
        # sum_sq caps each sample at sq_cap_ns; below the cap it is exact
        var = max(c["sum_sq"] / n - min(mean, pc["sq_cap_ns"]) ** 2, 0.0)
        low = _quantile(c, edges, FLOOR_QUANTILE, upper=False)
        out[name] = {"samples": n, "mean_ns": mean, "sd_ns": math.sqrt(var),
                     "min_ns": _quantile(c, edges, 0, upper=False), "low_ns": low,
                     "below_low": sum(k for i, k in enumerate(c["hist"]) if edges[i] < low),
                     "p50_ns": _quantile(c, edges, 0.5),
                     "p99_ns": _quantile(c, edges, 0.99),
                     "max_ns": c["max_ns"], "over": c["over"],
                     "capped": c["max_ns"] > pc["sq_cap_ns"]}
    return out


def delay_stages(later, earlier, enabled):
    """The enabled stages whose programs run inside [earlier, later)."""
    i, j = STAGE_NAMES.index(earlier), STAGE_NAMES.index(later)
    return [s for s in STAGE_NAMES[i:j] if s in enabled]


def _lower_bound(parts):
    """(floor, stage) for a sum of probe times: one probe's low quantile with
    every other's minimum, the largest such (a sum below it needs that probe
    below its low quantile)."""
    total_min = sum(p["min_ns"] for p in parts)
    return max((total_min - p["min_ns"] + p["low_ns"], i) for i, p in enumerate(parts))


def delay_floors(header, costs):
    """{delay column: {floor_ns, mean_ns, spread_ns, p99_ns, samples, stages,
    below_ns_share}} for every delay of the file whose stages were all
    sampled; below_ns_share: the share of the sampled probe times under the
    floor, at most FLOOR_QUANTILE. costs: stage_costs() of its probe_cost,
    None when the file has none (--floor, a module older than ABI 2, files
    written before it), and then None."""
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
        floor, i = _lower_bound(parts)
        out[col] = {"floor_ns": floor,
                    "mean_ns": sum(p["mean_ns"] for p in parts),
                    "spread_ns": math.sqrt(sum(p["sd_ns"] ** 2 for p in parts)),
                    "p99_ns": sum(p["p99_ns"] for p in parts),
                    "samples": min(p["samples"] for p in parts),
                    "below": parts[i]["below_low"], "of": parts[i]["samples"],
                    "stages": inside}
    return out


def _binom_cdf(k, n, p):
    """P(X <= k), X ~ Binomial(n, p)."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 0.0 if k < n else 1.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                                 + i * lp + (n - i) * lq) for i in range(k + 1)))


def upper_share(k, n, alpha=FLOOR_CHECK_ALPHA):
    """The largest share p of probe times under the floor that still shows k
    of n samples under it with probability alpha or more (Clopper-Pearson,
    one-sided): what the delays below the floor may reach in a sound run."""
    lo, hi = k / n, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _binom_cdf(k, n, mid) > alpha else (lo, mid)
    return hi


def sampled(seq):
    """Which packets had their probes' cost sampled, by their seq (t0's
    samples, taken at random, are not told)."""
    return (seq & (SAMPLE_EVERY - 1)) == 0


def floor_check(delay_ns, floor):
    """Whether a run's delays lie above its stated floor as its own probe
    samples say they must: every packet's delay holds its probe time, so the
    share of delays under the floor is at most the share of probe times
    under it, whose bound upper_share() gives. delay_ns: the delay of the
    packets that have it (complete ones), floor: a delay_floors() entry.
    {packets, below, share, allowed, ok}."""
    n = len(delay_ns)
    below = int((delay_ns < floor["floor_ns"]).sum())
    allowed = upper_share(floor["below"], floor["of"])
    return {"packets": n, "below": below, "share": below / n if n else 0.0,
            "allowed": allowed, "ok": not n or below / n <= allowed}
