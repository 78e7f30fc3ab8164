"""A campaign's summary, written into its folder:

    runs.csv, runs.parquet        one row per run, router and stage
    summary.csv, summary.parquet  one row per condition and stage:
                                  STAT_mean and STAT_std over its runs
                                  (probe_floor: the delay's probe floor)
    senders.csv, senders.parquet  the same per sender: one row per
                                  condition, TOS and stage (the paper told
                                  its senders apart by TOS 4 and 5)
    summary.pdf                   one page of plots (each stage's p50, p99,
                                  p99.9 and max per condition, mean over
                                  repetitions with their spread as error bars)
                                  and pages of tables (the summary, the
                                  summary per sender, then every run's
                                  counts)
    paths.csv, paths.parquet      a chain's runs: one row per run, its path

Delays are in nanoseconds in the tables, microseconds in the PDF.
"""
import os

import pandas as pd
from matplotlib.backends.backend_pdf import PdfPages

from ..analysis.runs import runs_table, senders_table, summary_table
from ..analysis.stats import STAGES
from ..files import atomic
from .figures import log_scale, tos_label
from .page import PAGE, plt

PLOTTED = (("p50", "o"), ("p99", "s"), ("p99_9", "^"), ("max", "v"))
ROWS_PER_PAGE = 40
US = 1e3  # ns per microsecond
CONTROL = "control-"  # control-WHAT_TWIN: TWIN with the one setting WHAT changed


def write(entries, outdir, title, paths=None):
    """Write the tables per run and router (entries: one per run and router,
    analysis.runs's, with a "router"), the PDF, and paths, a chain's runs'
    table, when it has rows; returns the paths written."""
    runs_df = _per_router(runs_table, entries)
    summary = summary_table(runs_df, ("condition", "router", "stage"))
    senders = summary_table(_per_router(senders_table, entries),
                            ("condition", "router", "tos", "stage"))
    tables = [("runs", runs_df), ("summary", summary), ("senders", senders)]
    tables += [("paths", paths)] if paths is not None and len(paths) else []
    written = []
    for name, table in tables:
        for ext, write_one in (("csv", lambda t, p: t.to_csv(p, index=False)),
                               ("parquet", lambda t, p: t.to_parquet(p, index=False))):
            path = os.path.join(outdir, f"{name}.{ext}")
            with atomic(path) as tmp:
                write_one(table, tmp)
            written.append(path)
    pdf = os.path.join(outdir, "summary.pdf")
    with atomic(pdf) as tmp:
        # the PDF sets conditions side by side: a chain's routers are each a condition there
        draw(_router_in_condition(summary), _router_in_condition(senders), runs_df, tmp, title)
    return written + [pdf]


def _per_router(table_of, entries):
    """table_of(entries) built per entry, with the entry's router as a column."""
    parts = [table_of([e]).assign(router=e["router"]) for e in entries]
    t = pd.concat(parts, ignore_index=True) if parts else table_of([]).assign(router=None)
    return t[["condition", "repetition", "router"]
             + [c for c in t.columns if c not in ("condition", "repetition", "router")]]


def _router_in_condition(table):
    """table with "CONDITION ROUTER" as the condition where a condition has
    several routers, and no router column."""
    several = table.groupby("condition")["router"].transform("nunique") > 1
    label = table["condition"].where(~several,
                                     table["condition"] + " " + table["router"].astype(str))
    return table.assign(condition=label).drop(columns="router")


def draw(summary, senders, runs, path, title):
    with PdfPages(path) as pdf:
        _plots(pdf, summary, title)
        _table(pdf, _summary_rows(summary), "Per condition and stage: mean ± spread over "
               "repetitions (µs; count in records)")
        _table(pdf, _summary_rows(senders, "tos"), "Per sender (TOS), condition and stage: "
               "mean ± spread over repetitions (µs; count in records)")
        controls = _control_rows(senders)
        if controls[1]:
            _table(pdf, controls, "Controls: a condition named control-WHAT_TWIN against TWIN, "
                   "per sender (mean over repetitions, µs; Δ = control − twin)")
        _table(pdf, _run_rows(runs), "Per run: packets the generators sent and received, "
               "the router forwarded, the recorder saw complete")
        info = pdf.infodict()
        info["Title"] = title
        info["Creator"] = "hopscope campaign"


def _plots(pdf, summary, title):
    fig, axes = plt.subplots(2, 2, figsize=PAGE, squeeze=False)
    conditions = list(dict.fromkeys(summary["condition"]))
    for ax, stage in zip(axes.flat, STAGES):
        rows = summary[summary["stage"] == stage].set_index("condition").reindex(conditions)
        x = range(len(conditions))
        for i, (stat, marker) in enumerate(PLOTTED):
            if f"{stat}_mean" not in rows:
                continue
            shift = [v + (i - 1.5) * 0.08 for v in x]  # side by side, not on top
            ax.errorbar(shift, rows[f"{stat}_mean"] / US, yerr=rows[f"{stat}_std"].fillna(0) / US,
                        fmt=marker, capsize=3, label=stat.replace("_", "."))
        ax.set_title(stage)
        log_scale(ax)
        ax.set_ylabel("µs")
        ax.set_xticks(list(x))
        ax.set_xticklabels(conditions, rotation=20, ha="right", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    # the first panel may have nothing drawn (a stage no condition has)
    handles, labels = next((hl for hl in (a.get_legend_handles_labels() for a in axes.flat)
                            if hl[0]), ([], []))
    if handles:
        axes.flat[0].legend(handles, labels, fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    pdf.savefig(fig)
    plt.close(fig)


def _summary_rows(summary, sender=None):
    """The summary's rows; sender: its TOS column, shown as the sender."""
    stats = [s for s in ("count", "mean", "p50", "p99", "p99_9", "max", "probe_floor")
             if f"{s}_mean" in summary]
    header = (["condition"] + (["sender"] if sender else []) + ["stage", "runs"]
              + [s.replace("_", " ").replace("p99 9", "p99.9") for s in stats])
    rows = []
    for _, r in summary.iterrows():
        cells = ([r["condition"]] + ([tos_label(r[sender])] if sender else [])
                 + [r["stage"], f"{r['runs']}"])
        for stat in stats:
            scale = 1 if stat == "count" else US
            cells.append(_pm(r.get(f"{stat}_mean"), r.get(f"{stat}_std"), scale))
        rows.append(cells)
    return header, rows


def _control_rows(senders):
    """Each control condition (control-WHAT_TWIN) beside its twin, per sender
    and stage: what the one setting WHAT names changes."""
    header = ["control", "sender", "stage", "runs", "mean", "Δ mean", "std", "p99", "Δ p99"]
    rows = []
    by = senders.set_index(["condition", "tos", "stage"]) if len(senders) else None
    for (cond, tos, stage), r in (by.iterrows() if by is not None else ()):
        twin = cond.split("_", 1)[1] if cond.startswith(CONTROL) and "_" in cond else None
        if twin is None or (twin, tos, stage) not in by.index:
            continue
        t = by.loc[(twin, tos, stage)]

        def moved(stat):
            return f"{t[f'{stat}_mean'] / US:.3g} → {r[f'{stat}_mean'] / US:.3g}"

        def delta(stat):
            return f"{(r[f'{stat}_mean'] - t[f'{stat}_mean']) / US:+.3g}"
        rows.append([cond, tos_label(tos), stage, f"{t['runs']} / {r['runs']}", moved("mean"),
                     delta("mean"), moved("std"), moved("p99"), delta("p99")])
    return header, rows


def _run_rows(runs):
    """One row per run and router (runs has one per stage too); the router
    column only where a run has several (a chain), whose routers each
    forward and record."""
    chain = len(runs) and runs.groupby(["condition", "repetition"])["router"].nunique().max() > 1
    header = (["condition", "repetition"] + (["router"] if chain else [])
              + ["sent", "received", "forwarded", "complete"])
    first = runs.drop_duplicates(["condition", "repetition", "router"]) if len(runs) else runs
    rows = [[str(r.get(c, "")) for c in header] for _, r in first.iterrows()]
    return header, rows


def _pm(mean, std, scale):
    if mean is None or mean != mean:
        return "-"
    text = f"{mean / scale:.4g}"
    return text if std is None or std != std else f"{text} ± {std / scale:.2g}"


def _table(pdf, header_rows, caption):
    header, rows = header_rows
    for start in range(0, max(len(rows), 1), ROWS_PER_PAGE):
        page = rows[start:start + ROWS_PER_PAGE] or [["-"] * len(header)]
        fig, ax = plt.subplots(figsize=PAGE)
        ax.axis("off")
        ax.set_title(caption, fontsize=10, loc="left")
        t = ax.table(cellText=page, colLabels=header, loc="upper left", cellLoc="left")
        t.auto_set_font_size(False)
        t.set_fontsize(7)
        t.auto_set_column_width(list(range(len(header))))
        pdf.savefig(fig)
        plt.close(fig)
