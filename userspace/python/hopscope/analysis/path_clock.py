"""The offset between two routers' clocks, from their files.

Each router stamps CLOCK_MONOTONIC of its own host. The offset of hop k+1's
clock to hop k's, theta(t) = offset_ns + drift_ppm * 1e-6 * (t - t_ref_ns)
(t on hop k's clock), is what hop k+1's instants must lose to be read on hop
k's clock. It comes, best first, from:

- "same clock": both files carry the same boot_id (one host, one boot):
  theta = 0 exactly.
- "given": the user's offset and its uncertainty (PTP, chrony, ...).
- "two-way": packets both ways between the two routers. Causality bounds it:
  a link time is never negative, so per time bin, with m_f the least
  forward link (hop k's t4 to hop k+1's t1, raw) and m_r the least reverse
  one, -m_r <= theta <= m_f. The estimate is a line through the bins'
  midpoints; its uncertainty the largest half-width (m_f + m_r) / 2 plus
  the line's largest miss of a midpoint.
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

BINS = 16             # time bins for the least link times
MIN_PER_BIN = 20      # pairs a bin needs to count


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


def _bins(t, link, edges):
    """Least link time per bin (NaN where a bin has too few pairs)."""
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(edges) - 2)
    out = np.full(len(edges) - 1, np.nan)
    counts = np.bincount(idx, minlength=len(out))
    least = np.full(len(out), np.inf)
    np.minimum.at(least, idx, link)
    ok = counts >= MIN_PER_BIN
    out[ok] = least[ok]
    return out


def _line(x, y):
    """Least-squares line through (x, y); a constant for fewer than 3 points."""
    if len(x) >= 3 and np.ptp(x) > 0:
        slope, icpt = np.polyfit(x, y, 1)
        return float(slope), float(icpt)
    return 0.0, float(np.mean(y))


def from_links(fwd_t, fwd_link, rev_t, rev_link, min_link_ns=0):
    """Offset from raw link times: forward (hop k's t4 -> hop k+1's t1) at hop
    k's instants fwd_t, reverse (hop k+1's t4 -> hop k's t1, raw) at hop k's
    instants rev_t. None when no forward pair exists."""
    fwd_t, fwd_link = np.asarray(fwd_t, np.float64), np.asarray(fwd_link, np.float64)
    rev_t, rev_link = np.asarray(rev_t, np.float64), np.asarray(rev_link, np.float64)
    if not len(fwd_t):
        return None
    every = np.concatenate([fwd_t, rev_t])
    lo, hi = float(every.min()), float(every.max())
    edges = np.linspace(lo, hi + 1, BINS + 1)
    mid = (edges[:-1] + edges[1:]) / 2
    t_ref = int(round((lo + hi) / 2))
    m_f = _bins(fwd_t, fwd_link, edges)
    if not np.isfinite(m_f).any():  # too few pairs for bins: one bin of all
        edges, mid = np.array([lo, hi + 1]), np.array([(lo + hi) / 2])
        m_f = np.array([fwd_link.min()])
    m_r = _bins(rev_t, rev_link, edges) if len(rev_t) else np.full(len(mid), np.nan)
    both = np.isfinite(m_f) & np.isfinite(m_r)
    if both.any():
        centre = (m_f[both] - m_r[both]) / 2
        half = (m_f[both] + m_r[both]) / 2
        slope, icpt = _line(mid[both] - t_ref, centre)
        miss = np.abs(icpt + slope * (mid[both] - t_ref) - centre)
        # within a bin theta moves by the drift over half the bin
        inside = abs(slope) * (edges[1] - edges[0]) / 2
        return Offset("two-way", icpt, slope * 1e6, t_ref,
                      float(np.max(half + miss) + inside),
                      len(fwd_t), len(rev_t),
                      f"{int(both.sum())} time bins with packets both ways")
    ok = np.isfinite(m_f)
    slope, icpt = _line(mid[ok] - t_ref, m_f[ok])
    # the line under every bin's least link: theta can be no higher
    icpt -= max(0.0, float(np.max(icpt + slope * (mid[ok] - t_ref) - m_f[ok])))
    return Offset("one-way", icpt - min_link_ns, slope * 1e6, t_ref, None, len(fwd_t), 0,
                  f"assumes the least link time is {min_link_ns} ns: an upper bound")


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
