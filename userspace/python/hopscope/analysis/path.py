"""A path of routers: one record file per router, joined packet by packet.

    p = hopscope.load_path(["r1.hsr", "r2.hsr"])   # files in path order
    p.packets       one row per packet, hop columns h1_d_iq, link1, h2_d_oq, ...
    p.hops          one row per packet and hop (long form)
    p.offsets       each hop's clock against hop 1's, with its uncertainty
    p.loss          every packet that entered the path, accounted for at its end
    p.collisions    per link, records with two candidates (never merged)
    p.links         per link, the interfaces that join the two routers
    p.problems      what makes the result doubtful
    p.notes         what a reader should know (the recordings' edges)

Every instant of hop k is read on hop 1's clock: hop k's offset, taken at the
packet's t1 there, is subtracted from all its instants at hop k, so a hop's
own delays are its file's and hop delays plus link times add up to the
end-to-end transit exactly. link k is hop k+1's t1 minus hop k's t4.
"""
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..record import format as fmt
from ..record.load import UNKNOWN, load, router_id
from . import path_clock
from .path_join import match_group, pair

WINDOW_NS = 10_000_000         # a packet's longest link time, t4 at hop k to t1 at k+1
SEARCH_NS = 10_000_000_000     # first search around the headers' offset, unknown clocks
STAGES = ("t0", "t1", "t2", "t3", "t4")
T4_UNSEEN = fmt.FLAGS["t4_unseen"]
HOP_DELAYS = ("d_iq", "d_p", "d_oq", "transit")
# what became of a packet, judged by its record at the last hop it was seen at
FATES = {
    "delivered": "it left the last router by the path's exit",
    "dropped": "a router dropped it (the last stage it reached, the kernel's reason)",
    "left the path": "a router sent it elsewhere (another interface, or one not traced)",
    "not seen at the next hop": "handed over toward the next router, not found there: lost "
                                "on the link, or by the next router's tracer",
    "next hop not recording": "handed over before the next router's recording started or "
                              "after it stopped",
    "collision at the next hop": "two identical packets within the window: not followed",
    "in flight at the stop": "still inside a router when its recording stopped",
    "not followed by the tracer": "a router's tracer lost it (evicted, a collision in the "
                                  "router, a missed hand-over at the last router)",
    "NAT changed its key": "the router translated it: the next router sees another key",
}
PACKET_COLS = ("src", "dst", "sport", "dport", "proto", "tos", "ip_len", "key")


class PathError(Exception):
    pass


@dataclass
class Hop:
    n: int
    df: pd.DataFrame
    router: str
    file: str
    boot_id: object
    lead: set = field(default_factory=set)   # out interfaces toward the next hop
    window: tuple = (0, 0)   # its recording's start and stop, on hop 1's clock


@dataclass
class Path:
    hops: list
    offsets: pd.DataFrame
    packets: pd.DataFrame
    hop_rows: pd.DataFrame
    loss: pd.DataFrame
    collisions: pd.DataFrame
    links: pd.DataFrame
    reverse: dict
    problems: list
    notes: list

    def tail(self, q=0.99):
        """Where the end-to-end tail comes from: over the delivered packets
        whose transit is at or above its q-quantile, each hop-stage's and
        link's mean and share of their transit."""
        return tail(self.packets, len(self.hops), q)


def load_path(files, window_ns=WINDOW_NS, offsets=None, min_link_ns=0, search_ns=SEARCH_NS):
    """Join the record files of the routers along a path (in path order).

    files: paths of .hsr files or DataFrames from hopscope.load.
    window_ns: the longest link time a packet may take between two routers.
    offsets: {hop number (2..N) or router id: (offset_ns, uncertainty_ns)}:
    the clock offset of that hop against the one before it, from PTP or
    chrony, instead of estimating it.
    min_link_ns: the least link time assumed where only one-way traffic
    gives the offset (path_clock).
    """
    if not files:
        raise PathError("no record files")
    hops = []
    for n, f in enumerate(files, 1):
        df = f if isinstance(f, pd.DataFrame) else _load(f)
        header = df.attrs.get("header") or {}
        clock = df.attrs.get("clock") or {}
        boot = clock.get("boot_id")
        hops.append(Hop(n, df, router_id(header), str(df.attrs.get("path", f"hop {n}")),
                        boot if isinstance(boot, str) and boot != UNKNOWN else None))
    problems = []
    seen = {}
    for h in hops:
        if h.router in seen:
            problems.append(f"hops {seen[h.router]} and {h.n} have the same router id "
                            f"{h.router!r}: the same router twice, or ids not set")
        seen.setdefault(h.router, h.n)
    groups = [match_group(h.df) for h in hops]
    found = [_offset(hops[k], hops[k + 1], groups[k], groups[k + 1], offsets,
                     min_link_ns, search_ns, window_ns) for k in range(len(hops) - 1)]
    links = [off for off, _, _ in found]
    shifts = _shifts(hops, links)
    for k, h in enumerate(hops):
        h.window = _window(h.df, links[:k])
    nxt, amb = [], []
    for k, (off, face_up, face_down) in enumerate(found):
        if face_up is None:
            problems.append(f"no packet of hop {k + 1} ({hops[k].router}) was found at hop "
                            f"{k + 2} ({hops[k + 1].router}): not one path, or a NAT between")
        up_if, down_if = _ifs(hops[k].df), _ifs(hops[k + 1].df)
        # as far back as forward: a link that comes out negative beyond the
        # offset's uncertainty is paired and reported, not left unpaired
        p = pair(groups[k], handover(hops[k].df, shifts[k], face_up), groups[k + 1],
                 _only(shifts[k + 1]["t1"], down_if[0] == face_down), window_ns, window_ns)
        to = np.full(len(hops[k].df), -1, np.int64)
        to[p.a] = p.b
        went_on = int(np.count_nonzero((hops[k].df["status"] == "dropped").to_numpy()[p.a]))
        if went_on:
            problems.append(f"hop {k + 1} ({hops[k].router}): {_n(went_on)} recorded as "
                            f"dropped found at hop {k + 2}: the drop recorded was not the "
                            "packet's (a copy's, or wrong); followed on")
        nxt.append(to)
        a_amb = np.zeros(len(hops[k].df), bool)
        a_amb[p.ambiguous_a] = True
        amb.append((a_amb, len(p.ambiguous_b)))
        hops[k].lead = {face_up} if face_up is not None else set()
    if len(hops) > 1:
        hops[-1].lead = _exit(hops[-1].df, nxt[-1])
    else:
        hops[0].lead = set(_text(hops[0].df["out_if"])) - {""}
    rows, reverse = _chains(hops, nxt)
    packets, hop_rows = _tables(hops, rows, shifts, nxt, amb)
    off_table = _offset_table(hops, links)
    problems += _link_problems(packets, off_table, len(hops))
    problems += _nat_problems(hops)
    notes = _edges(hops, packets)
    for h in hops:
        problems += [f"hop {h.n} ({h.router}): {p}" for p in h.df.attrs.get("problems") or ()]
    names = [f"{k + 1}->{k + 2}" for k in range(len(links))]
    coll = pd.DataFrame({"link": names, "upstream_records": [int(a.sum()) for a, _ in amb],
                         "downstream_records": [n for _, n in amb]})
    joins = pd.DataFrame({"link": names, "up_if": [f[1] for f in found],
                          "down_if": [f[2] for f in found]})
    return Path(hops, off_table, packets, hop_rows, loss_table(packets, len(hops)), coll,
                joins, reverse, problems, notes)


def _load(f):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = load(f)
    df.attrs["load_warnings"] = [str(w.message) for w in caught]
    return df


def _offset(up, down, g_up, g_down, given, min_link_ns, search_ns, window_ns):
    """Hop down's clock against hop up's (path_clock), and the interfaces
    that join them: (offset, up's interface toward down, down's toward up)."""
    a, b = up.df, down.df
    t4a, t1a = a["t4"].to_numpy(), a["t1"].to_numpy()
    t4b, t1b = b["t4"].to_numpy(), b["t1"].to_numpy()
    ha, hb = a.attrs.get("header") or {}, b.attrs.get("header") or {}
    fixed = None
    for name in (down.n, down.router):
        if given and name in given:
            fixed = path_clock.given(*given[name])
            break
    if fixed is None and up.boot_id is not None and up.boot_id == down.boot_id:
        fixed = path_clock.same_clock()
    rough = 0 if fixed is None else int(round(fixed.offset_ns))
    if fixed is None and "mono_to_realtime_ns" in ha and "mono_to_realtime_ns" in hb:
        rough = int(ha["mono_to_realtime_ns"]) - int(hb["mono_to_realtime_ns"])
    # the first search: every record, a wide window; it finds the interfaces
    wide = search_ns if fixed is None else window_ns + _slack(fixed)
    f = pair(g_up, t4a, g_down, _minus(t1b, rough), wide, wide)
    r = pair(g_down, _minus(t4b, rough), g_up, t1a, wide, wide)
    ifa, ifb = _ifs(a), _ifs(b)
    face_up, face_down = _faces(ifa, ifb, t4a, t1a, t4b, t1b, f, r)
    if fixed is not None:
        return fixed, face_up, face_down
    rt = path_clock.realtime(a.attrs.get("clock") or {}, b.attrs.get("clock") or {}, ha, hb)
    est = None
    theta = np.full(len(b), float(rough))  # per record of down, its clock's offset
    first_b = np.where(t1b > 0, t1b, t4b).astype(np.float64)
    before = after = wide
    for _ in range(2):  # the wide search, then a normal window around its estimate
        sb = np.floor(theta + 0.5).astype(np.int64)
        f = pair(g_up, _only(t4a, ifa[1] == face_up), g_down,
                 _minus(_only(t1b, ifb[0] == face_down), sb), before, after)
        r = pair(g_down, _minus(_only(t4b, ifb[1] == face_down), sb), g_up,
                 _only(t1a, ifa[0] == face_up), before, after)
        est = path_clock.from_links(t4a[f.a], t1b[f.b] - t4a[f.a],
                                    t1a[r.b], t1a[r.b] - t4b[r.a], min_link_ns) or est
        if est is None:
            break
        theta = shift_ns([est], first_b)
        after = int(est.uncertainty_ns or 0) + 1
        before = window_ns + after
    if rt is not None:
        rt = path_clock.cap(rt, est if est is not None and est.method == "one-way" else None)
        if est is None or est.uncertainty_ns is None or rt.uncertainty_ns < est.uncertainty_ns:
            return rt, face_up, face_down
    if est is None:
        est = path_clock.Offset("none", float(rough), 0.0, 0, None,
                                note="no packet paired between these hops: give the offset")
    return est, face_up, face_down


def _ifs(df):
    """(in_if, out_if) as string arrays."""
    return _text(df["in_if"]), _text(df["out_if"])


def _text(col):
    """A column of names as a str array, "" where there is none."""
    return np.asarray(col.astype(object).where(col.notna(), ""), dtype=str)


def _unseen(df):
    """Records of packets that left though the tracer missed their t4 (the
    recorder saw a later packet of their flow leave: docs/record-format.md)."""
    return ((df["flags"].to_numpy() & T4_UNSEEN) != 0) & (df["t4"].to_numpy() == 0)


def handover(df, t, face):
    """A hop's instants (t, shifted) at which packets left toward the next
    hop by its interface face: t4. Where the tracer missed t4 but the packet
    left, or recorded a drop after routing, t3, its last instant: its out_if
    is then unknown (any packet but those that came from the next hop), and
    a "dropped" packet found at the next hop went on (the drop recorded was
    a copy's, or wrong)."""
    ins, outs = _ifs(df)
    late = _unseen(df) | (df["status"] == "dropped").to_numpy()
    return np.where((outs == face) & (t["t4"] > 0), t["t4"],
                    np.where(late & (ins != face), t["t3"], 0))


def _nearest(t, at):
    """For each instant in at, the index of the nearest instant in t."""
    order = np.argsort(t, kind="stable")
    ts = t[order]
    i = np.clip(np.searchsorted(ts, at), 1, len(ts) - 1) if len(ts) > 1 else np.zeros(len(at), int)
    if len(ts) > 1:
        i = np.where(np.abs(ts[i - 1] - at) <= np.abs(ts[i] - at), i - 1, i)
    return order[i]


def _only(t, keep):
    return np.where(keep, t, 0)


def _faces(ifa, ifb, t4a, t1a, t4b, t1b, f, r):
    """The interfaces joining two hops, from the first search's pairs. A
    search pairs a packet both ways (forward: up's t4 to down's t1; reverse:
    down's t4 to up's t1), one of them falsely. On up's interface toward
    down, forward packets leave and reverse ones arrive, and only for that
    interface do the forward links (up's t4 to down's t1) lie above the
    reverse ones' bounds (down's t4 to up's t1, negated): theta sits between
    the two. Among the interfaces that pass, the one with the most forward
    packets."""
    x = t1b[f.b] - t4a[f.a]            # theta <= x for a forward packet
    z = t4b[r.a] - t1a[r.b]            # theta >= z for a reverse packet
    tx, tz = t4a[f.a], t1a[r.b]
    best, score = None, 0
    for name in np.unique(ifa[1][f.a]):
        fw = ifa[1][f.a] == name
        rv = ifa[0][r.b] == name
        # each reverse bound against the forward one nearest in time, so
        # that a drift over the run does not blur the comparison
        if rv.any() and np.median(x[fw][_nearest(tx[fw], tz[rv])] - z[rv]) < 0:
            continue
        if fw.sum() > score:
            best, score = name, int(fw.sum())
    if best is None:
        return None, None
    fw = ifa[1][f.a] == best
    names, counts = np.unique(ifb[0][f.b][fw], return_counts=True)
    return str(best), str(names[np.argmax(counts)])


def _minus(t, theta):
    """Instants less an offset, 0 (not seen) kept 0."""
    return np.where(t > 0, t - theta, 0)


def _slack(off):
    """How far a link may look negative: the offset's uncertainty."""
    return int(np.ceil(off.uncertainty_ns)) if off.uncertainty_ns else 0


def _shifts(hops, links):
    """Each hop's instants on hop 1's clock: per record, every stage less the
    summed offsets, taken at the record's first instant at that hop."""
    out = []
    for k, h in enumerate(hops):
        t = {s: h.df[s].to_numpy() for s in STAGES if s in h.df.columns}
        first = np.where(t["t1"] > 0, t["t1"], np.max(np.column_stack(list(t.values())), axis=1))
        shift = np.floor(shift_ns(links[:k], first.astype(np.float64)) + 0.5).astype(np.int64)
        out.append({s: np.where(v > 0, v - shift, 0) for s, v in t.items()})
    return out


def shift_ns(links, t):
    """What instants t of the hop after links (its clock) lose to be read on
    hop 1's clock: each link's offset, taken on its upstream hop's clock."""
    theta = np.zeros_like(t)
    at = t
    for off in reversed(links):
        # the offset's line runs on the upstream clock: one step back to it first
        step = off.at(at - off.at(at))
        theta = theta + step
        at = at - step
    return theta


def _window(df, links):
    """A file's recording, start to stop (its END's instant; for a file cut
    short, its last instant), on hop 1's clock."""
    start = int((df.attrs.get("header") or {}).get("start_monotonic_ns") or 0)
    stop = (df.attrs.get("trailer") or {}).get("monotonic_ns")
    if not isinstance(stop, int):
        stop = int(max((df[s].max() for s in STAGES if s in df.columns and len(df)), default=0))
    ends = np.array([start, stop], np.float64)
    return tuple(int(v) for v in np.floor(ends - shift_ns(links, ends) + 0.5))


def _edges(hops, packets):
    """Notes on packets that entered the path at hop s > 1 while hop s-1 was
    not recording: the recordings' edges, not packets that skipped a hop."""
    out = []
    for s in range(2, len(hops) + 1):
        t = packets.loc[packets["first_hop"] == s, f"h{s}_t1"].to_numpy()
        start, stop = hops[s - 2].window
        n = int(np.count_nonzero((t > 0) & ((t < start) | (t > stop))))
        if n:
            out.append(f"{_n(n)} entered at hop {s} ({hops[s - 1].router}) while hop "
                       f"{s - 1} ({hops[s - 2].router}) was not recording: the edges of the "
                       "recordings")
    return out


def _exit(df, came):
    """The last hop's out interfaces that most packets from the hop before left by."""
    rows = came[came >= 0]
    if not len(rows):
        return set(_text(df["out_if"])) - {""}
    names, counts = np.unique(_text(df["out_if"])[rows], return_counts=True)
    return {str(n) for n, c in zip(names, counts) if c * 2 > len(rows)} or set(names.tolist())


def _chains(hops, nxt):
    """Row numbers per hop (-1: absent) of each forward packet, and how many
    records per hop went back along the path (left out)."""
    K = len(hops)
    came = [np.zeros(len(h.df), bool) for h in hops]
    for k, to in enumerate(nxt):
        came[k + 1][to[to >= 0]] = True
    back = [np.zeros(len(h.df), bool) for h in hops]
    for k, h in enumerate(hops):
        # a packet that came in on the interface toward the next hop goes back
        back[k] = np.isin(_text(h.df["in_if"]), list(h.lead)) & ~came[k]
    blocks = []
    for s in range(K):
        start = np.flatnonzero(~came[s] & ~back[s])
        cols = np.full((len(start), K), -1, np.int64)
        cols[:, s] = start
        for k in range(s, K - 1):
            cur = cols[:, k]
            cols[:, k + 1] = np.where(cur >= 0, nxt[k][np.maximum(cur, 0)], -1)
        blocks.append(cols)
    reverse = {h.n: int(back[k].sum()) for k, h in enumerate(hops)}
    return np.concatenate(blocks), reverse


def _tables(hops, rows, shifts, nxt, amb):
    K = len(hops)
    n = len(rows)
    present = rows >= 0
    first = np.argmax(present, axis=1)
    last = K - 1 - np.argmax(present[:, ::-1], axis=1)
    cols = {"first_hop": first + 1, "last_hop": last + 1}
    for c in PACKET_COLS:  # from the first hop the packet was seen at
        parts = []
        for k, h in enumerate(hops):
            sel = first == k
            parts.append((sel, h.df[c].to_numpy()[rows[sel, k]]))
        cols[c] = _gather(n, parts, hops[0].df[c].to_numpy())
    long = []
    for k, h in enumerate(hops):
        r, ok = rows[:, k], present[:, k]
        rr = r[ok]
        for s in STAGES:
            v = np.zeros(n, np.int64)
            if s in shifts[k]:
                v[ok] = shifts[k][s][rr]
            cols[f"h{k + 1}_{s}"] = v
        for d in HOP_DELAYS:
            v = np.full(n, np.nan)
            v[ok] = h.df[d].to_numpy()[rr]
            cols[f"h{k + 1}_{d}"] = v
        v = np.zeros(n, np.uint64)
        v[ok] = h.df["seq"].to_numpy()[rr]
        cols[f"h{k + 1}_seq"] = v
        for c in ("status", "out_if", "drop_stage"):
            v = np.full(n, None, object)
            v[ok] = h.df[c].astype(object).to_numpy()[rr]
            cols[f"h{k + 1}_{c}"] = v
        v = np.full(n, None, object)
        v[ok] = _reasons(h.df)[rr]
        cols[f"h{k + 1}_reason"] = v
        long.append((k, ok, rr))
    for k in range(K - 1):
        up, down = cols[f"h{k + 1}_t4"], cols[f"h{k + 2}_t1"]
        both = (up > 0) & (down > 0) & present[:, k] & present[:, k + 1]
        cols[f"link{k + 1}"] = np.where(both, down - up, np.nan)
        if "t0" in hops[k + 1].df.columns:  # the wire alone: to the next router's t0
            arrived = cols[f"h{k + 2}_t0"]
            cols[f"link{k + 1}_t0"] = np.where(both & (arrived > 0), arrived - up, np.nan)
    every = np.arange(n)
    t_in = np.column_stack([cols[f"h{k + 1}_t1"] for k in range(K)])[every, first]
    t_out = np.column_stack([cols[f"h{k + 1}_t4"] for k in range(K)])[every, last]
    fate, fate_hop = _fates(hops, rows, first, last, nxt, amb, [t["t4"] for t in shifts])
    cols["fate"], cols["fate_hop"] = fate, fate_hop
    whole = (fate == "delivered") & (t_in > 0) & (t_out > 0)
    cols["transit"] = np.where(whole, t_out - t_in, np.nan)
    packets = pd.DataFrame(cols)
    packets["fate"] = pd.Categorical(packets["fate"], list(FATES))
    hop_rows = _long(hops, packets, long)
    return packets, hop_rows


def _gather(n, parts, like):
    out = np.zeros(n, like.dtype) if like.dtype != object else np.full(n, None, object)
    for sel, vals in parts:
        out[sel] = vals
    return out


def _reasons(df):
    names = (df.attrs.get("header") or {}).get("drop_reasons") or {}
    codes = df["drop_reason"].to_numpy()
    dropped = (df["status"] == "dropped").to_numpy()
    out = np.full(len(df), None, object)
    for c in np.unique(codes[dropped]):
        out[dropped & (codes == c)] = names.get(str(int(c)), f"reason {int(c)}")
    return out


def _fates(hops, rows, first, last, nxt, amb, t4s):
    """What became of each packet, judged at the last hop it was seen at;
    t4s: each hop's t4 on hop 1's clock."""
    K = len(hops)
    n = len(rows)
    fate = np.full(n, "", object)
    for k, h in enumerate(hops):
        sel = last == k
        r = rows[sel, k]
        status = _text(h.df["status"])[r]
        out_if = _text(h.df["out_if"])[r]
        left = h.df["t4"].to_numpy()[r] > 0
        f = np.full(len(r), "not followed by the tracer", object)
        f[status == "dropped"] = "dropped"
        f[status == "inflight"] = "in flight at the stop"
        f[status == "other_out"] = "left the path"
        f[_unseen(h.df)[r]] = "not followed by the tracer"
        on = left & np.isin(out_if, list(h.lead))
        f[left & ~on] = "left the path"
        if k == K - 1:
            f[on] = "delivered"
        else:
            f[on] = "not seen at the next hop"
            f[on & amb[k][0][r]] = "collision at the next hop"
            if _nat_rows(h.df) is not None:
                f[on & _nat_rows(h.df)[r] & (f == "not seen at the next hop")] = \
                    "NAT changed its key"
            start, stop = hops[k + 1].window
            out = t4s[k][r]
            f[(f == "not seen at the next hop") & ((out > stop) | (out < start))] = \
                "next hop not recording"
        fate[sel] = f
    return fate, last + 1


def _n(n):
    return f"{n} packet" if n == 1 else f"{n} packets"


def _nat_rows(df):
    if "nat_src" not in df.columns:
        return None
    m = df["nat_src"].notna().to_numpy() | df["nat_dst"].notna().to_numpy()
    return m if m.any() else None


def _long(hops, packets, long):
    """One row per packet and hop."""
    parts = []
    for k, ok, rr in long:
        h = hops[k]
        idx = np.flatnonzero(ok)
        part = {"packet": idx, "hop": np.full(len(idx), k + 1), "router":
                np.full(len(idx), h.router, object)}
        for c in [f"h{k + 1}_{s}" for s in STAGES + HOP_DELAYS] + \
                 [f"h{k + 1}_{c}" for c in ("status", "out_if", "drop_stage", "reason")]:
            part[c.split("_", 1)[1]] = packets[c].to_numpy()[idx]
        link = f"link{k}"
        part["link_in"] = packets[link].to_numpy()[idx] if link in packets else np.nan
        for c in ("tos", "fate"):
            part[c] = packets[c].to_numpy()[idx]
        parts.append(pd.DataFrame(part))
    out = pd.concat(parts, ignore_index=True)
    out["fate"] = pd.Categorical(out["fate"], list(FATES))
    return out


def loss_table(packets, nhops):
    """Every packet by the hop it entered the path at and what became of it:
    (entered, fate, hop, stage, reason, packets); per entered hop the packets
    add up to those that entered there."""
    p = packets
    stage = np.full(len(p), "", object)
    reason = np.full(len(p), "", object)
    for k in range(nhops):
        sel = (p["fate_hop"] == k + 1).to_numpy() & (p["fate"] == "dropped").to_numpy()
        stage[sel] = p[f"h{k + 1}_drop_stage"].to_numpy()[sel]
        reason[sel] = p[f"h{k + 1}_reason"].to_numpy()[sel]
    t = pd.DataFrame({"entered": p["first_hop"].to_numpy(), "fate": p["fate"].astype(str),
                      "hop": p["fate_hop"].to_numpy(), "stage": stage.astype(str),
                      "reason": reason.astype(str)})
    out = t.value_counts().rename("packets").reset_index()
    return out.sort_values(["entered", "hop", "fate", "stage", "reason"],
                           ignore_index=True)


def tail(packets, nhops, q=0.99):
    """Mean of each hop-stage and link over the delivered packets at or
    above the transit's q-quantile, and its share of their mean transit."""
    whole = packets[(packets["fate"] == "delivered") & (packets["first_hop"] == 1)]
    if not len(whole):
        return pd.DataFrame(columns=["part", "mean_ns", "share", "packets"])
    cut = whole["transit"].quantile(q)
    top = whole[whole["transit"] >= cut]
    parts = []
    for k in range(nhops):
        parts += [(f"hop {k + 1} {d}", f"h{k + 1}_{d}") for d in ("d_iq", "d_p", "d_oq")]
        if k < nhops - 1:
            parts.append((f"link {k + 1}", f"link{k + 1}"))
    total = top["transit"].mean()
    rows = [(name, float(top[c].mean()), float(top[c].mean() / total), len(top))
            for name, c in parts]
    return pd.DataFrame(rows, columns=["part", "mean_ns", "share", "packets"])


def _offset_table(hops, links):
    rows = [dict(hop=1, router=hops[0].router, method="reference", offset_ns=0.0,
                 drift_ppm=0.0, t_ref_ns=0, uncertainty_ns=0.0, pairs_forward=0,
                 pairs_reverse=0, note="")]
    for k, off in enumerate(links):
        rows.append(dict(hop=k + 2, router=hops[k + 1].router, **off.as_dict()))
    return pd.DataFrame(rows)


def _link_problems(packets, offsets, nhops):
    out = []
    for k in range(nhops - 1):
        link = packets[f"link{k + 1}"].to_numpy()
        err = offsets["uncertainty_ns"].iloc[k + 1]
        bound = 0.0 if err is None or pd.isna(err) else float(err)
        neg = np.count_nonzero(link < -bound)
        if neg:
            out.append(f"link {k + 1}: {_n(neg)} took less than no time "
                       f"(beyond the offset's uncertainty {bound:.0f} ns): the clocks' "
                       "offset is wrong, or the files are not of one path")
    return out


def _nat_problems(hops):
    out = []
    for h in hops[:-1]:
        m = _nat_rows(h.df)
        if m is not None:
            out.append(f"hop {h.n} ({h.router}) translated {_n(int(m.sum()))} (NAT): "
                       "their key changes, so they are not followed past it")
    return out
