"""The PDF pages of a path of routers (analysis/path.py's Path): a summary
of the hops, their clocks and what became of the packets; each hop's stage
delays and the links side by side; where the end-to-end tail comes from;
each hop's queues over time on hop 1's clock; and the loss table.

    write(load_path(files), "path.pdf", "Path of 3 routers")
"""
from dataclasses import replace

import numpy as np
from matplotlib import ticker

from ..analysis.hist import relative_histogram
from ..analysis.path import FATES, shift_ns
from ..analysis.path_clock import Offset
from ..analysis.queues import occupancy
from . import figures as fig, forked, layout
from .pdf import figure_page, us_text

HOP_STAGES = ("d_iq", "d_p", "d_oq")
HOPS_PER_PAGE = 3   # columns of histograms, rows of queues: more and their labels collide
BINS = 100          # about this many histogram bins across a row's common range
TAIL_Q = 0.99


def write(p, pdf_path, title):
    """Writes the path's pages to pdf_path; returns the page count."""
    jobs = [("the summary", _summary, (p, title))]
    for hops in _groups(p):
        jobs.append(("the stage delays", figure_page, (_stages, p, title, hops)))
    jobs.append(("the tail", figure_page, (_tail, p, title)))
    queues = _queues_on_hop1(p)
    for hops in _groups(p):
        jobs.append(("the queues", figure_page, (_queues, p, title, hops, queues)))
    jobs.append(("the loss table", _loss, (p, title)))
    return forked.write(pdf_path, jobs)


def _groups(p):
    """The hops' numbers, HOPS_PER_PAGE to a page."""
    n = [h.n for h in p.hops]
    return [n[i:i + HOPS_PER_PAGE] for i in range(0, len(n), HOPS_PER_PAGE)]


def _router(p, n):
    return f"hop {n} ({p.hops[n - 1].router})"


def _ns_as_us(v):
    """An offset or uncertainty in µs to the ns: they span ns to seconds."""
    return "—" if v is None or v != v else f"{v / 1000:.3f}"


def _links(p):
    """The offsets table's rows as path_clock.Offset, link by link."""
    fields = list(Offset.__dataclass_fields__)
    return [Offset(**{c: r[c] for c in fields}) for r in p.offsets.iloc[1:].to_dict("records")]


def against_hop1(p):
    """Each hop's clock against hop 1's at the hop's first instant (t1):
    [(what its instants lose to be read on hop 1's clock, ns; drift ppm;
    uncertainty ns, the links' summed: NaN where one is an upper bound
    only)], hop 1 first; the offset None for a hop without records."""
    links = _links(p)
    out = []
    for h in p.hops:
        k = h.n - 1
        t1 = h.df["t1"].to_numpy()
        off = (float(shift_ns(links[:k], np.array([fig.first_instant(h.df)], np.float64))[0])
               if (t1 > 0).any() else None)
        out.append((off, sum(o.drift_ppm for o in links[:k]),
                    sum(o.uncertainty_ns for o in links[:k])))  # NaN stays NaN
    return out


def _offset_rows(p):
    def err(v):  # NaN: no uncertainty claimed
        return "upper bound only" if v != v else _ns_as_us(v)
    rows = []
    for h, o, (off1, drift1, err1) in zip(p.hops, p.offsets.itertuples(), against_hop1(p)):
        rows.append([str(h.n), h.router, h.file, str(len(h.df)), o.method,
                     _ns_as_us(o.offset_ns), err(o.uncertainty_ns),
                     f"{o.pairs_forward}/{o.pairs_reverse}", _ns_as_us(off1),
                     f"{round(drift1, 3) + 0.0:.3f}", err(err1), o.note])  # + 0.0: no "-0.000"
    return rows


def _summary(pdf, p, title):
    out = layout.Pages(pdf, f"{title} — summary")
    out.add(layout.Text(
        "The routers in the order packets cross them. Every instant is read on hop 1's "
        "clock: hop k's is shifted by its clock's offset against hop 1's (the sum of the "
        "offsets hop by hop), so hop delays and link times add up to the end-to-end "
        "transit. A link time is hop k+1's t1 less hop k's t4."))
    out.add(layout.Table(_offset_rows(p),
                         ["hop", "router", "file", "records", "method", "offset", "±",
                          "pairs fwd/rev", "vs hop 1", "drift (ppm)", "± vs hop 1",
                          "note"],
                         "the hops and their clocks (µs): each one's offset against the hop "
                         "before, how it was found (method, packets paired each way), and "
                         "against hop 1 at the hop's first packet, with its drift: what its "
                         "instants lose to be read on hop 1's clock"))
    fates = p.packets.groupby(["first_hop", "fate"], observed=True).size()
    entered = p.packets["first_hop"].value_counts()
    rows = [[_router(p, int(k)), str(fate), str(n), f"{n / entered[k]:.2%}"]
            for (k, fate), n in fates.items() if n]
    out.add(layout.Table(layout.once(rows), ["entered at", "fate", "packets", "share"],
                         f"{len(p.packets)} packets entered the path; what became of them "
                         "(by hop and stage: the loss table's page)"))
    coll = [[f"link {r.link}", str(r.upstream_records), str(r.downstream_records)]
            for r in p.collisions.itertuples()]
    out.add(layout.Table(coll, ["link", "upstream records", "downstream records"],
                         "collisions: records with two candidates at the other end of a "
                         "link, left unjoined"))
    out.add(layout.Text("Records that went back along the path (left out): " + ", ".join(
        f"{_router(p, n)} {c}" for n, c in sorted(p.reverse.items())) + "."))
    out.add(layout.Text("Problems: " + ("none." if not p.problems else "")))
    for problem in p.problems:
        out.add(layout.Text("• " + problem, gap=2))
    return out.close()


def _nice(span):
    """A bin width of 1, 2 or 5 times a power of ten ns, at least 1 ns, about
    span / BINS."""
    if not span > BINS:
        return 1
    power = 10 ** np.floor(np.log10(span / BINS))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= span / BINS))


def _range(values):
    """A row's common x range, ns: from the least value to the largest of the
    hops' SHOWN_QUANTILE points (what fig.histogram shows of each)."""
    lo, hi = np.inf, -np.inf
    for v in values:
        v = v[np.isfinite(v)]
        if len(v):
            lo = min(lo, v.min())
            hi = max(hi, np.quantile(v, fig.SHOWN_QUANTILE))
    return (lo, hi) if lo <= hi else None


def _stage_values(p, n, row):
    if row == "link":
        return p.packets[f"link{n}"].to_numpy() if n < len(p.hops) else None
    return p.packets[f"h{n}_{row}"].to_numpy()


def _stages(f, p, title, hops):
    rows = HOP_STAGES + (("link",) if len(p.hops) > 1 else ())
    # as many columns on every page: panels of one size compare across pages
    axes = f.subplots(len(rows), min(len(p.hops), HOPS_PER_PAGE), squeeze=False)
    for ax in axes[:, len(hops):].ravel():
        ax.axis("off")
    for i, row in enumerate(rows):
        # the whole path's hops, not this page's: a row compares across pages too
        every = [v for v in (_stage_values(p, h.n, row) for h in p.hops) if v is not None]
        span = _range(every)
        width = _nice(span[1] - span[0]) if span else 1
        for j, n in enumerate(hops):
            ax = axes[i, j]
            v = _stage_values(p, n, row)
            if v is None:
                ax.axis("off")
                ax.text(0.5, 0.5, "the path ends here:\nno link after the last hop",
                        ha="center", va="center", transform=ax.transAxes)
                continue
            fig.histogram(ax, relative_histogram(v, width))
            if span:
                pad = width / 2
                ax.set_xlim((span[0] - pad) * fig.US, (span[1] + width + pad) * fig.US)
            what = (f"link {n}: hop {n} → {n + 1}" if row == "link" else
                    f"hop {n} {row} ({p.hops[n - 1].router})")
            ax.set_title(f"{what}, {np.count_nonzero(np.isfinite(v))} packets", fontsize=9)
            # bins fitted to the row's range (a fixed µs would make sub-µs
            # stages one bar): said once a row
            ax.set_ylabel(f"relative frequency\n({_ns_as_us(width).rstrip('0').rstrip('.')} "
                          "µs bins)" if not j else "")
    f.suptitle(f"{title}: each hop's stage delays and the links, relative frequency "
               "(delivered and dropped packets, each stage it reached; a row's x range "
               "is shared)", wrap=True)


def _tail(f, p, title):
    whole = p.packets[(p.packets["fate"] == "delivered") & (p.packets["first_hop"] == 1)]
    transit = whole["transit"].to_numpy()
    transit = transit[np.isfinite(transit)]
    top, every = p.tail(TAIL_Q), p.tail(0.0)
    if not len(transit) or not len(top):
        f.text(0.5, 0.5, "No packet crossed the whole path (entered at hop 1, delivered by "
               "the last): no end-to-end transit to break down.", ha="center", va="center",
               wrap=True)
        f.suptitle(f"{title}: where the end-to-end tail comes from")
        return
    cut = np.quantile(transit, TAIL_Q)
    worst = top.loc[top["share"].idxmax()]
    usual = float(every.set_index("part").loc[worst["part"], "share"])
    text = layout.Text(
        f"The largest share of the tail: {worst['part']}, {worst['share']:.1%} of the "
        f"transit of the {int(worst['packets'])} packets at or above the transit's p99 "
        f"({us_text(cut)} µs), against {usual:.1%} over all {len(transit)} delivered packets. "
        "A share is the part's mean over the packets' mean transit; shares add up to 100 % "
        "as the parts add up to the transit.",
        10)
    plots, ax_t = layout.strip(f, text.height + 2 * layout.PAD)
    text.draw(ax_t, layout.MARGIN, layout.PAD)
    ax_h, ax_b = plots.subplots(1, 2)
    span = _range([transit])
    fig.histogram(ax_h, relative_histogram(transit, _nice(span[1] - span[0])))
    ax_h.axvline(cut * fig.US, color="C3", ls="--", label=f"p99 {us_text(cut)} µs")
    ax_h.legend(fontsize=8)
    ax_h.set_xlabel(ax_h.get_xlabel().replace("delay", "end-to-end transit", 1))
    ax_h.set_title(f"end-to-end transit of the {len(transit)} delivered packets")
    y = np.arange(len(top))
    ax_b.barh(y - 0.2, every["share"] * 100, 0.4, label="all delivered packets")
    ax_b.barh(y + 0.2, top["share"] * 100, 0.4, color="C3",
              label=f"the {int(top['packets'].iloc[0])} at or above p99")
    # a long path's many parts: smaller labels, not overprinted ones
    ax_b.set_yticks(y, top["part"], fontsize=min(10, 300 / len(top)))
    ax_b.invert_yaxis()  # the path's order from the top
    ax_b.set_xlabel("share of the transit (%)")
    ax_b.set_title("each hop-stage's and link's share")
    ax_b.legend(fontsize=8, loc="lower right")
    f.suptitle(f"{title}: where the end-to-end tail comes from")


def _queues_on_hop1(p):
    """Per hop, its input and output queues over every record of its file
    (both ways), the instants read on hop 1's clock."""
    links = _links(p)
    out = []
    for h in p.hops:
        qs = []
        for q in (occupancy(h.df, "input"), occupancy(h.df, "output")):
            # the shift moves far slower than time: the steps keep their order
            shift = np.floor(shift_ns(links[:h.n - 1], q.t_ns.astype(np.float64)) + 0.5)
            qs.append(replace(q, t_ns=q.t_ns - shift.astype(np.int64)))
        out.append(qs)
    return out


def _queues(f, p, title, hops, queues):
    series = dict(zip([h.n for h in p.hops], queues))
    starts = [q.t_ns[0] for qs in series.values() for q in qs if len(q.t_ns)]
    ends = [q.t_ns[-1] for qs in series.values() for q in qs if len(q.t_ns)]
    axes = f.subplots(min(len(p.hops), HOPS_PER_PAGE), 2, squeeze=False)
    for ax in axes[len(hops):].ravel():  # panels of one size on every page
        ax.axis("off")
    for row, n in enumerate(hops):
        for col, (name, q) in enumerate(zip(("input queue (t1 ≤ t < t2)",
                                             "output queue (t3 ≤ t < t4)"), series[n])):
            ax = axes[row, col]
            fig.occupancy_series(ax, q, min(starts, default=0), name)
            ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))  # packets
            if starts:  # every hop on one time axis, across pages too
                ax.set_xlim(0, (max(ends) - min(starts)) * 1e-9)
            ax.set_title(f"{_router(p, n)}: {name}" +
                         (f" — {q.open} open, a lower bound" if q.open else ""), fontsize=9)
            if row < len(hops) - 1:
                ax.set_xlabel("")
    f.suptitle(f"{title}: queues over time, on hop 1's clock (every record of each router, "
               "both ways)")


def _loss(pdf, p, title):
    rows = []
    for entered, part in p.loss.groupby("entered", sort=True):
        total = int(part["packets"].sum())
        for r in part.itertuples():
            rows.append([_router(p, entered), r.fate, _router(p, r.hop), r.stage or "—",
                         r.reason or "—", str(r.packets), f"{r.packets / total:.2%}"])
        rows.append(["", "total", "", "", "", str(total), "100.00%"])
    out = layout.Pages(pdf, f"{title} — where packets were lost")
    out.add(layout.Table(layout.once(rows),
                         ["entered at", "fate", "at", "drop stage", "reason", "packets",
                          "share"],
                         "every packet that entered the path, by the hop it entered at and "
                         "the hop where its fate was decided"))
    out.add(layout.Text("; ".join(f"{fate}: {meaning}" for fate, meaning in FATES.items())
                        + "."))
    return out.close()
