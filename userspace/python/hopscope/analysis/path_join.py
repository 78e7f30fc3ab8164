"""One packet's records at two routers of a path, paired.

Hop k's record and hop k+1's are the same packet when they have the same
`key` (a hash of what no router changes: addresses, ports, payload words;
never TTL, checksum or IP ID), the same IP length and protocol, and hop
k+1's arrival t1 comes after hop k's hand-over t4, within a window. A record
with two candidates on the other side is a collision: counted, never merged.
NAT between two routers changes the key; such packets are not paired (the
path's problems say how many left a router with a translation).
"""
from dataclasses import dataclass

import numpy as np
import pandas as pd


def match_group(df):
    """int64 per record: key, IP length and protocol, what routers keep."""
    return ((df["key"].to_numpy(np.int64) << 24) | (df["ip_len"].to_numpy(np.int64) << 8)
            | df["proto"].to_numpy(np.int64))


@dataclass
class Pairs:
    """Unique pairs (row numbers in each side's frame) and the ambiguous rows."""
    a: np.ndarray           # rows of the upstream side
    b: np.ndarray           # rows of the downstream side, b[i] pairs with a[i]
    ambiguous_a: np.ndarray  # upstream rows with two or more downstream candidates
    ambiguous_b: np.ndarray  # downstream rows with two or more upstream candidates


NONE, SEVERAL = -1, -2


def pair(a_group, a_t, b_group, b_t, before_ns, after_ns):
    """Pairs a downstream row (b_t: its arrival, on the upstream clock) and an
    upstream row of the same group (a_t: its hand-over) when a_t lies in
    [b_t - before_ns, b_t + after_ns], and each is the other's only
    candidate; after_ns > 0 admits links that look negative within the
    clocks' uncertainty. Rows whose t is 0 (not seen) take no part."""
    of_b = candidate(a_group, a_t, b_group, b_t, before_ns, after_ns)
    of_a = candidate(b_group, -np.where(b_t > 0, b_t, 0), a_group,
                     -np.where(a_t > 0, a_t, 0), before_ns, after_ns, negated=True)
    rows_b = np.flatnonzero(of_b >= 0)
    mutual = of_a[of_b[rows_b]] == rows_b
    b = rows_b[mutual]
    a = of_b[b]
    # a row with several candidates, or whose one candidate has several
    amb_b = (of_b == SEVERAL) | ((of_b >= 0) & (of_a[np.maximum(of_b, 0)] == SEVERAL))
    amb_a = (of_a == SEVERAL) | ((of_a >= 0) & (of_b[np.maximum(of_a, 0)] == SEVERAL))
    return Pairs(a, b, np.flatnonzero(amb_a), np.flatnonzero(amb_b))


def candidate(x_group, x_t, y_group, y_t, lo, hi, negated=False):
    """For each y row, the one x row of its group with x_t in [y_t - lo,
    y_t + hi]: its row number, NONE or SEVERAL. negated: the instants are
    negated (0 still means not seen)."""
    seen_x = x_t < 0 if negated else x_t > 0
    seen_y = y_t < 0 if negated else y_t > 0
    out = np.full(len(y_t), NONE, np.int64)
    ix, iy = np.flatnonzero(seen_x), np.flatnonzero(seen_y)
    if not len(ix) or not len(iy):
        return out
    x = pd.DataFrame({"g": x_group[ix], "t": x_t[ix] - hi, "row": ix})
    x = x.sort_values(["g", "t"], kind="stable")
    # the x row before, in the same group: a second candidate?
    t = x["t"].to_numpy()
    g = x["g"].to_numpy()
    prev = np.empty_like(t)
    prev[0] = np.iinfo(np.int64).min
    prev[1:] = np.where(g[1:] == g[:-1], t[:-1], np.iinfo(np.int64).min)
    x["prev"] = prev
    x = x.sort_values("t", kind="stable")
    y = pd.DataFrame({"g": y_group[iy], "t": y_t[iy], "rowy": iy}).sort_values("t",
                                                                              kind="stable")
    m = pd.merge_asof(y, x, on="t", by="g", direction="backward",
                      tolerance=int(lo + hi), allow_exact_matches=True)
    hit = m["row"].notna().to_numpy()
    rows_y = m["rowy"].to_numpy()[hit]
    several = m["prev"].to_numpy()[hit] >= m["t"].to_numpy()[hit] - int(lo + hi)
    out[rows_y] = np.where(several, SEVERAL, m["row"].to_numpy()[hit].astype(np.int64))
    return out
