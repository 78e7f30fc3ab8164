"""Verdicts of the paper's claims from intervals over repetitions.

An item (a condition, a sender, a stage) has a statistic computed from its
condition's repetitions, or from two conditions' when they are compared. Its
interval is a percentile bootstrap over the repetitions (each condition's
resampled on its own, CONFIDENCE of BOOTSTRAP resamples, a fixed seed so a
report is the same every time it is written). The item holds when the whole
interval lies where the claim's tolerance passes, does not hold when it lies
wholly outside, and cannot tell when it straddles the edge or a condition
has fewer than MIN_REPETITIONS. More repetitions narrow the interval: a
verdict grows sharper with them, never more fragile. With two repetitions
the interval spans both: they must agree.

A claim about every operative condition holds when all its items hold and
does not hold when one does not; a claim about what happens on average
holds when more than half its items hold and does not hold when at least
half do not. A claim whose conditions the campaigns lack cannot tell.
"""
from dataclasses import dataclass, field
import math

import numpy as np

HOLDS, FAILS, UNKNOWN = "holds", "does not hold", "cannot tell"
# one repetition has no spread to set against a tolerance
MIN_REPETITIONS = 2
CONFIDENCE = 0.95
BOOTSTRAP = 2000
SEED = 2006


@dataclass
class Item:
    where: str
    value: str            # the statistic and its interval, as text
    verdict: str
    median: float = np.nan     # the statistic's point value
    low: float = np.nan        # its interval
    high: float = np.nan


@dataclass
class Outcome:
    verdict: str
    measured: str
    arrival: str
    items: list
    excluded: list = field(default_factory=list)   # (condition, why) left out


def bootstrap(samples, stat, center=np.mean):
    """(point, low, high): stat(*centres) on the samples' centres (their
    mean, or the function given), and its percentile interval with each
    sample's values resampled on their own. samples: one sequence of values
    (per repetition, or per item) each; NaN where a value is missing or the
    statistic undefined."""
    arrays = [np.asarray(s, np.float64) for s in samples]
    if any(not len(a) or not np.isfinite(a).all() for a in arrays):
        return np.nan, np.nan, np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        point = float(stat(*(center(a) for a in arrays)))
        rng = np.random.default_rng(SEED)
        means = [center(a[rng.integers(0, len(a), (BOOTSTRAP, len(a)))], axis=1)
                 for a in arrays]
        dist = np.asarray(stat(*means), np.float64)
    dist = dist[np.isfinite(dist)]
    if not np.isfinite(point) or len(dist) < BOOTSTRAP:
        return np.nan, np.nan, np.nan
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(dist, [tail, 100 - tail])
    return point, float(low), float(high)


def judge_interval(low, high, passes):
    """HOLDS, FAILS or UNKNOWN: [low, high] against the pass region
    passes = (least, most), either end open as ±inf."""
    least, most = passes
    if not (np.isfinite(low) and np.isfinite(high)):
        return UNKNOWN
    if least <= low and high <= most:
        return HOLDS
    if high < least or low > most:
        return FAILS
    return UNKNOWN


def interval_text(point, low, high, fmt):
    if not np.isfinite(point):
        return "no value"
    if low == high:
        return fmt.format(point)
    return f"{fmt.format(point)} [{fmt.format(low)}, {fmt.format(high)}]"


def item(where, samples, stat, passes, fmt, unit="", note=""):
    """An Item judged on the bootstrap interval of stat over the samples
    (bootstrap()); unjudged when a condition has too few repetitions."""
    point, low, high = bootstrap(samples, stat)
    text = f"{interval_text(point, low, high, fmt)} {unit}".strip()
    few = any(len(s) < MIN_REPETITIONS for s in samples)
    verdict = UNKNOWN if few else judge_interval(low, high, passes)
    if few:
        note = ", ".join(filter(None, [note, f"{min(len(s) for s in samples)} repetition"]))
    return Item(where, f"{text} ({note})" if note else text, verdict, point, low, high)


def one(x):
    """The identity statistic: the mean over one condition's repetitions."""
    return x


def spread_text(values, fmt="{:.0f}"):
    """The finite values (each as fmt) as median (min–max); one value alone;
    "no value" without any."""
    v = np.asarray(values, np.float64)
    finite = v[np.isfinite(v)]
    if not len(finite):
        return "no value"
    if fmt.format(finite.min()) == fmt.format(finite.max()):
        return fmt.format(np.median(finite))
    return (f"{fmt.format(np.median(finite))} "
            f"({fmt.format(finite.min())}–{fmt.format(finite.max())})")


def every(items, missing, excluded=()):
    """About every operative condition: any item that does not hold decides."""
    if not items:
        return Outcome(UNKNOWN, f"no {missing} in the campaigns", "", [], list(excluded))
    verdicts = [i.verdict for i in items]
    verdict = (FAILS if FAILS in verdicts else HOLDS if all(v == HOLDS for v in verdicts)
               else UNKNOWN)
    return Outcome(verdict, tally(verdicts), "", items, list(excluded))


def most(items, missing, excluded=()):
    """About what happens on average: more than half the items decide."""
    if not items:
        return Outcome(UNKNOWN, f"no {missing} in the campaigns", "", [], list(excluded))
    verdicts = [i.verdict for i in items]
    n_holds, n_fails = verdicts.count(HOLDS), verdicts.count(FAILS)
    verdict = (HOLDS if n_holds > len(items) / 2 else FAILS if n_fails >= len(items) / 2
               else UNKNOWN)
    return Outcome(verdict, tally(verdicts), "", items, list(excluded))


def tally(verdicts):
    return (f"{verdicts.count(HOLDS)} hold, {verdicts.count(FAILS)} do not, "
            f"{verdicts.count(UNKNOWN)} cannot tell (of {len(verdicts)} items)")


def chi2_quantile(p, dof):
    """The p quantile of the chi-square distribution (bisection on its CDF,
    the regularized lower incomplete gamma function by its series)."""
    def cdf(x):
        a, z = dof / 2, x / 2
        if z <= 0:
            return 0.0
        term = total = 1 / a
        k = 0
        while term > total * 1e-15 and k < 10_000:
            k += 1
            term *= z / (a + k)
            total += term
        return math.exp(a * math.log(z) - z - math.lgamma(a)) * total
    lo, hi = 0.0, dof + 20 * math.sqrt(2 * dof) + 20
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def cv_interval(values):
    """(coefficient of variation, low, high) of the values: their standard
    deviation over their mean, with the chi-square interval of a normal
    sample's deviation (exact for any count, where a bootstrap of two values
    is not); NaN with under two values or a mean not above zero."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2 or v.mean() <= 0:
        return np.nan, np.nan, np.nan
    n, cv = len(v), float(v.std(ddof=1) / v.mean())
    tail = (1 - CONFIDENCE) / 2
    return (cv, cv * math.sqrt((n - 1) / chi2_quantile(1 - tail, n - 1)),
            cv * math.sqrt((n - 1) / chi2_quantile(tail, n - 1)))
