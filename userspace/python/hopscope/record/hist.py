"""The stage histograms of a record file's COUNTERS and END JSON
("histograms", written under `hopscope record --histograms` or --aggregate).

Buckets are Prometheus native-histogram buckets of schema h.HIST_SCHEMA
(include/hopscope.h): bucket i holds the delays d (ns) with
2^((i-1)/8) < d <= 2^(i/8). bucket() is the kernel's hs_hist_bucket in exact
integer arithmetic (d <= 2^(i/8) exactly when d^8 <= 2^i), so the tests hold
the kernel's buckets against it.
"""
import math

from . import header as h
from .format import STAGE_NAMES

SCHEMA = h.HIST_SCHEMA
NBUCKETS = h.HIST_BUCKETS
DELAY_NAMES = tuple(name for _, _, name in h.DELAY_LIST)
PATH_NAMES = tuple(name for _, _, name in h.PATH_LIST)
_FIELDS = ("count", "sum_ns", "zero", "negative", "overflow")


def bucket(d):
    """The bucket index of a delay d > 0 ns (NBUCKETS or more: overflow)."""
    per, d = 1 << SCHEMA, int(d)  # a Python int: d^8 must not wrap
    i = (d.bit_length() - 1) * per  # 2^(i/8) <= d: the bucket is i or later
    while d ** per > 1 << i:
        i += 1
    return i


def upper(i):
    """The upper bound of bucket i in ns: 2^(i/8)."""
    return 2.0 ** (i / (1 << SCHEMA))


def check(hg):
    """Why a "histograms" object is not of the documented shape, or None."""
    if not isinstance(hg, dict):
        return "'histograms' is not an object"
    if hg.get("schema") != SCHEMA:
        return f"histograms.schema is {hg.get('schema')!r}, this reader knows {SCHEMA}"
    if type(hg.get("nokey")) is not int or hg["nokey"] < 0:
        return "histograms.nokey is not a count"
    series = hg.get("series")
    if not isinstance(series, list):
        return "histograms.series is not a list"
    drops = hg.get("drops", [])
    if not isinstance(drops, list) or not all(
            isinstance(x, dict) and x.get("stage") in STAGE_NAMES and
            type(x.get("reason")) is int and type(x.get("count")) is int and x["count"] >= 0
            for x in drops):
        return "histograms.drops is not a list of {stage, reason, count}"
    for n, s in enumerate(series):
        where = f"histograms.series[{n}]"
        if not isinstance(s, dict):
            return f"{where} is not an object"
        if type(s.get("tos")) is not int or not 0 <= s["tos"] <= 255:
            return f"{where}.tos is not a byte"
        if not isinstance(s.get("out_if"), str) or s.get("delay") not in DELAY_NAMES:
            return f"{where} lacks out_if, or a delay among {', '.join(DELAY_NAMES)}"
        # a file before paths has none: its series are all the stack's
        if s.setdefault("path", "stack") not in PATH_NAMES:
            return f"{where}.path is not among {', '.join(PATH_NAMES)}"
        if any(type(s.get(f)) is not int or s[f] < 0 for f in _FIELDS):
            return f"{where} lacks one of {', '.join(_FIELDS)} as counts"
        b = s.get("buckets")
        if not isinstance(b, dict) or not all(
                k.isdigit() and int(k) < NBUCKETS and type(v) is int and v > 0
                for k, v in b.items()):
            return f"{where}.buckets is not an object of bucket indices to counts"
        if sum(b.values()) + s["zero"] + s["negative"] + s["overflow"] != s["count"]:
            return f"{where}: its buckets do not add up to its count"
    return None


def quantile(s, q):
    """The upper bound (ns) of the bucket that holds quantile q of series s:
    0 for the zero bucket, inf beyond the last; None without delays. Negative
    delays (none on a sound clock) count below every bucket."""
    n = s["count"]
    if not n:
        return None
    rank = max(1, math.ceil(q * n))  # the rank-th smallest delay
    seen = s["negative"] + s["zero"]
    if rank <= seen:
        return 0.0
    for i, c in sorted((int(k), v) for k, v in s["buckets"].items()):
        seen += c
        if rank <= seen:
            return upper(i)
    return float("inf")


def series(counters):
    """The series of a COUNTERS or END JSON, None when it has no (well-formed)
    histograms."""
    hg = (counters or {}).get("histograms")
    return hg["series"] if hg is not None and not check(hg) else None


def drops(counters):
    """The dropped packets by last stage and kernel reason of a COUNTERS or
    END JSON: a list of {stage, reason, count}, None without (well-formed)
    histograms."""
    hg = (counters or {}).get("histograms")
    return hg.get("drops", []) if hg is not None and not check(hg) else None
