"""The offset between two routers' clocks, from their files.

Each router stamps CLOCK_MONOTONIC of its own host. The offset of hop k+1's
clock to hop k's, theta(t) = offset_ns + drift_ppm * 1e-6 * (t - t_ref_ns)
(t on hop k's clock), is what hop k+1's instants must lose to be read on hop
k's clock. It comes, best first, from:

- "same clock": both files carry the same boot_id (one host, one boot):
  theta = 0 exactly.
- "given": the user's offset and its uncertainty (PTP, chrony, ...).
- "two-way": packets both ways between the two routers. Causality bounds it:
  a link time is never negative, so every forward pair (hop k's t4 to hop
  k+1's t1, raw: l_f) and every reverse one (l_r) give -l_r <= theta <=
  l_f at its instant. Every line (offset and drift) between those bounds is
  possible: the estimate is the middle one, its uncertainty how far any
  possible line gets from it over the run.
- "realtime": both hosts' CLOCK_REALTIME synced (adjtimex, in the header):
  theta = mono_to_realtime(k) - mono_to_realtime(k+1), within the sum of
  both maxerrors and pairing errors; the least forward link, when there is
  traffic, caps it from above.
- "one-way": only forward traffic and no synced realtime: theta is at most
  the least forward link m_f; how much less (the true least link time) the
  data cannot tell. The estimate assumes the least link time is
  min_link_ns (0 by default): an upper bound, no uncertainty is claimed
  (uncertainty_ns is None).
"""
from dataclasses import dataclass, asdict

import numpy as np

MAX_DRIFT = 1e-3      # the fastest two clocks drift apart: 1000 ppm


@dataclass
class Offset:
    method: str
    offset_ns: float          # at t_ref_ns
    drift_ppm: float
    t_ref_ns: int             # on the upstream hop's clock
    uncertainty_ns: float | None   # None: an upper bound only (one-way)
    pairs_forward: int = 0
    pairs_reverse: int = 0
    note: str = ""

    def at(self, t):
        """theta at the upstream instants t (ns), as float ns."""
        return self.offset_ns + self.drift_ppm * 1e-6 * (np.asarray(t, np.float64)
                                                         - self.t_ref_ns)

    def as_dict(self):
        return asdict(self)


def same_clock():
    return Offset("same clock", 0.0, 0.0, 0, 0.0, note="same boot_id: one clock")


def given(offset_ns, uncertainty_ns, drift_ppm=0.0, t_ref_ns=0):
    return Offset("given", float(offset_ns), float(drift_ppm), int(t_ref_ns),
                  float(uncertainty_ns))


def realtime(up_clock, down_clock, up_header, down_header):
    """Offset from both hosts' synced CLOCK_REALTIME, or None when either is
    not known to be synced."""
    errs = []
    for clock in (up_clock, down_clock):
        sync = clock.get("realtime_sync")
        if not isinstance(sync, dict) or not sync.get("synced"):
            return None
        pairing = clock.get("mono_to_realtime_err_ns")
        errs.append(int(sync.get("maxerror_ns") or 0)
                    + (int(pairing) if isinstance(pairing, int) else 0))
    theta = int(up_header["mono_to_realtime_ns"]) - int(down_header["mono_to_realtime_ns"])
    return Offset("realtime", float(theta), 0.0, 0, float(sum(errs)),
                  note="CLOCK_REALTIME synced on both hosts (adjtimex)")


def _argmax(f, lo=-MAX_DRIFT, hi=MAX_DRIFT, steps=200):
    """Where the concave function f is highest in [lo, hi] (ternary search)."""
    for _ in range(steps):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(a) < f(b):
            lo = a
        else:
            hi = b
    return (lo + hi) / 2


def _edge(g, inside, outside, steps=200):
    """Where g (>= 0 at inside, < 0 at outside) crosses 0 (bisection)."""
    for _ in range(steps):
        m = (inside + outside) / 2
        if g(m) >= 0:
            inside = m
        else:
            outside = m
    return inside


def _bounding(dt, link):
    """The pairs (dt, link) whose link - rho * dt is the least of all for some
    rho in [-MAX_DRIFT, MAX_DRIFT]: no other pair is lower over that whole
    range (pair j is when link_j + MAX_DRIFT * |dt_j - dt_i| <= link_i). The
    bounds below are the same from these alone, and cost a few hundred
    pairs' work, not millions'."""
    if len(dt) < 3:
        return dt, link
    order = np.argsort(dt, kind="stable")
    dt, link = dt[order], link[order]
    left = np.minimum.accumulate(link - MAX_DRIFT * dt) + MAX_DRIFT * dt
    right = (np.minimum.accumulate((link + MAX_DRIFT * dt)[::-1])[::-1]) - MAX_DRIFT * dt
    # each pair is its own candidate: >= itself, but for rounding (1e-3 ns)
    keep = (left >= link - 1e-3) & (right >= link - 1e-3)
    return dt[keep], link[keep]


def from_links(fwd_t, fwd_link, rev_t, rev_link, min_link_ns=0):
    """Offset from raw link times: forward (hop k's t4 -> hop k+1's t1) at hop
    k's instants fwd_t, reverse (hop k+1's t4 -> hop k's t1, raw) at hop k's
    instants rev_t. None when no forward pair exists.

    theta(t) = c + rho (t - t_ref) is a line under every forward link and
    over every reverse one negated (causality). Two-way: every line between
    the two is possible; the estimate is the middle one, the uncertainty
    the farthest any possible line gets from it over the run. One-way: the
    line under the forward links highest at their mean time (the least
    link times' lower envelope, as Moon, Skelly and Towsley fit skew)."""
    fwd_t, fwd_link = np.asarray(fwd_t, np.float64), np.asarray(fwd_link, np.float64)
    rev_t, rev_link = np.asarray(rev_t, np.float64), np.asarray(rev_link, np.float64)
    if not len(fwd_t):
        return None
    every = np.concatenate([fwd_t, rev_t])
    lo, hi = float(every.min()), float(every.max())
    t_ref = int(round((lo + hi) / 2))
    df, dr = fwd_t - t_ref, rev_t - t_ref
    mean = float(df.mean())
    # only the pairs that can bound some line of the drifts searched count
    df, fwd_link = _bounding(df, fwd_link)
    dr, rev_link = _bounding(dr, rev_link)

    def upper(rho, at=0.0):  # the highest theta(t_ref + at) a line of slope rho may have
        return float(np.min(fwd_link - rho * (df - at)))

    if not len(rev_t):
        rho = _argmax(lambda r: upper(r, mean))
        return Offset("one-way", upper(rho) - min_link_ns, rho * 1e6, t_ref, None, len(fwd_t), 0,
                      f"assumes the least link time is {min_link_ns} ns: an upper bound")

    def lower(rho, at=0.0):
        return float(np.max(-rev_link - rho * (dr - at)))

    def gap(rho):
        return upper(rho) - lower(rho)

    best = _argmax(gap)
    note = f"{len(fwd_t)} pairs forward, {len(rev_t)} back"
    if gap(best) < 0:
        c = (upper(best) + lower(best)) / 2
        return Offset("two-way", c, best * 1e6, t_ref, -gap(best) / 2, len(fwd_t), len(rev_t),
                      note + f"; no line fits between the bounds (they cross by "
                             f"{-gap(best):.0f} ns): the clocks do not drift at a steady rate")
    ra, rb = _edge(gap, best, -MAX_DRIFT), _edge(gap, best, MAX_DRIFT)
    rho = (ra + rb) / 2
    c = (upper(rho) + lower(rho)) / 2
    err = 0.0
    for at in np.linspace(lo - t_ref, hi - t_ref, 9):
        est = c + rho * at
        top = upper(_argmax(lambda r: upper(r, at), ra, rb), at)
        bottom = lower(_argmax(lambda r: -lower(r, at), ra, rb), at)
        err = max(err, top - est, est - bottom)
    return Offset("two-way", c, rho * 1e6, t_ref, err, len(fwd_t), len(rev_t),
                  note + f"; drift within {ra * 1e6:+.3f} .. {rb * 1e6:+.3f} ppm")


def cap(offset, fwd):
    """A realtime offset capped by the least forward link (theta <= m_f):
    where the realtime interval reaches above it, the interval is cut there
    and its middle taken again."""
    if fwd is None or offset.uncertainty_ns is None:
        return offset
    upper = fwd.offset_ns + (fwd.uncertainty_ns or 0.0)
    lo = offset.offset_ns - offset.uncertainty_ns
    hi = min(offset.offset_ns + offset.uncertainty_ns, upper)
    if hi >= offset.offset_ns + offset.uncertainty_ns or hi < lo:
        return offset
    return Offset(offset.method, (lo + hi) / 2, offset.drift_ppm, offset.t_ref_ns,
                  (hi - lo) / 2, fwd.pairs_forward, fwd.pairs_reverse,
                  offset.note + "; capped by the least forward link")
