"""Busy periods of the output (Hohn et al.) and minimum transit per packet size
(Papagiannaki et al.).

A busy period is a maximal interval during which the output holds at least
one packet: it starts when a packet enters an empty output (t3) and ends when
the output is empty again (the last t4, plus the last bit's time on the wire
when a link rate is given). Periods that touch are one period.
"""
import numpy as np
import pandas as pd

from ..record.paths import stack_complete
from .queues import stage_interval

# bytes a frame puts on an Ethernet wire besides its IP packet: preamble and
# start delimiter 8, MAC header 14, FCS 4, inter-frame gap 12
ETHERNET_OVERHEAD = 38


def wire_ns(ip_len, link_bps):
    """int64 ns an IP packet of ip_len bytes keeps an Ethernet link busy."""
    if link_bps <= 0:
        raise ValueError(f"link_bps must be positive, not {link_bps}")
    bits = (ip_len.astype(np.int64) + ETHERNET_OVERHEAD) * 8
    return -(-bits * 1_000_000_000 // int(link_bps))  # ceil: a started ns is busy


def merge(start, end):
    """Union of the intervals [start[i], end[i]), start sorted ascending:
    (index of each union's first interval, each union's end). end is
    overwritten (with how far the intervals up to each reach): in place,
    fresh memory is slow on a VM."""
    if len(start) == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.int64)
    reach = np.maximum.accumulate(end, out=end)
    first = np.flatnonzero(np.concatenate([[True], start[1:] > reach[:-1]]))
    last = np.concatenate([first[1:], [len(start)]]) - 1
    return first, reach[last]


def busy_periods(df, link_bps=None):
    """DataFrame(start_ns, end_ns, duration_ns, packets), in time order.

    attrs: open (packets that entered the output and were not seen leaving:
    left out) and negative (t4 before t3: left out).
    """
    s, e, kept, n_open, n_negative = stage_interval(df, "t3", "t4")
    if link_bps is not None:  # the frame is on the wire after t4
        e += wire_ns(df["ip_len"].to_numpy()[kept], link_bps)
    order = np.argsort(s, kind="stable")
    leave = e[order]
    # s sorted into e's memory, free once gathered: four arrays of a packet
    # each at once, not five (fresh memory is slow on a VM)
    s, e = np.take(s, order, out=e), leave
    del order, leave
    first, end = merge(s, e)
    start = s[first]
    out = pd.DataFrame({"start_ns": start, "end_ns": end, "duration_ns": end - start,
                        "packets": np.diff(np.append(first, len(s))).astype(np.int64)},
                       copy=False)  # the arrays made here as they are, not stacked: a copy
    out.attrs.update(open=n_open, negative=n_negative)
    return out


def min_transit_by_size(df):
    """DataFrame(ip_len, min_transit_ns, count) over complete packets with a
    transit delay >= 0: the minimum is the service time without queueing."""
    transit = df["transit"].to_numpy(np.float64)
    ok = stack_complete(df) & (transit >= 0)
    g = pd.DataFrame({"ip_len": df["ip_len"].to_numpy()[ok],
                      "transit": transit[ok]}).groupby("ip_len", sort=True)["transit"]
    out = g.agg(["min", "count"]).reset_index()
    return pd.DataFrame({"ip_len": out["ip_len"].to_numpy(),
                         "min_transit_ns": out["min"].to_numpy().astype(np.int64),
                         "count": out["count"].to_numpy().astype(np.int64)})
