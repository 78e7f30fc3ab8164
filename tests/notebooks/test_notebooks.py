"""The notebooks: every .py/.ipynb pair in sync (what `jupytext --sync` would
write) with the outputs stripped; every notebook executed in a fresh kernel
against the checked-in data, failing on any cell error; and values each
computed checked against the same file read without the library.

The values are read by a probe cell appended to the executed copy (never
written back), so the names it reads (PATH, a, TOS, ...) are the notebooks'
own variables. What they are checked against is computed here, from the
record file's bytes (tests/helpers/rawrecord.py) and small implementations of the
definitions in the analysis modules' docs, never by the library that
produced them."""
import json
import os
import shutil

import jupytext
import nbformat
import numpy as np
import pytest
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = os.path.join(ROOT, "notebooks")
DATA = os.path.join(ROOT, "tests", "data")
from rawrecord import Raw

NAMES = ("single_sender", "competitive", "queues_coffee", "overhead")
CELL_TIMEOUT = 120  # s; a whole notebook takes 3-6 s here
PROBE = "import json\nprint(json.dumps({%s}, default=float))"
# per notebook: the probe's fields (Python expressions in the notebook's namespace)
PROBES = {
    "single_sender": '"path": PATH, "tos": TOS, '
                     '"d_p_p50": a.stats.set_index("stage").loc["d_p", "p50"], '
                     '"d_iq_count": a.stats.set_index("stage").loc["d_iq", "count"], '
                     '"d_oq_hist_sum": a.histograms["d_oq"].freq.sum()',
    "competitive": '"path": PATH, "senders": SENDERS, '
                   '"d_oq_p99": mine[mine.stage == "d_oq"].set_index("tos")["p99"].to_dict(), '
                   '"dropped": where.groupby("tos")["packets"].sum().to_dict()',
    "queues_coffee": '"path": PATH, "breaks": len(a.coffee_breaks), '
                     '"arrival": a.coffee_breaks.attrs["arrival"], '
                     '"min_break_ns": a.min_break_ns, "output_max": int(a.output_queue.n.max())',
    "overhead": '"path": PATH, "untraced_64": summary.loc["64 B", "untraced_kpps"], '
                '"programs": len(ns)',
}
# figures each notebook must show (a figure that silently vanished fails)
FIGURES = {"single_sender": 3, "competitive": 3, "queues_coffee": 5, "overhead": 1}


MIN_BREAK_NS = 1000  # analysis/coffee.py: the shortest break counted, at the least


class Packets:
    """One run's packets as the file holds them: instants (0 = not seen), tos,
    status; and the delays of its complete packets."""

    def __init__(self, path):
        raw = Raw(path)
        self.t = {s: raw.t(s) for s in ("t0", "t1", "t2", "t3", "t4")}
        self.tos, self.status = raw.records["tos"], raw.records["status"]
        self.complete = raw.status("complete")
        self.dropped = raw.status("dropped")

    def delays(self, a, b, tos=None):
        """t[b] - t[a] of the complete packets (of that tos)."""
        keep = self.complete if tos is None else self.complete & (self.tos == tos)
        return (self.t[b] - self.t[a])[keep]


def output_queue_max(p):
    """Most packets ever between t3 and t4 at once: at each entry, the
    entries so far less the exits so far (half open: an exit at that
    instant has left)."""
    s, e = p.t["t3"], p.t["t4"]
    keep = (s != 0) & (e >= s)
    s, e = s[keep], e[keep]
    inside = np.searchsorted(np.sort(s), s, "right") - np.searchsorted(np.sort(e), s, "right")
    return int(inside.max())


def arrival_gap(p, arrival):
    """The mean time between two arrivals over the middle ones (1 % of them
    left out at each end): their span over their number less one."""
    t = np.sort(p.t[arrival][p.t[arrival] != 0])
    t = t[len(t) // 100:len(t) - len(t) // 100]
    return int((t[-1] - t[0]) // (len(t) - 1))


def coffee_break_count(p, min_ns, arrival):
    """Breaks of at least min_ns: the router idle (no packet between t2 and
    its exit: t4, or the next t2 when its exit is unknown) while a packet
    waits (arrival <= t < t2); from a gap's start, or the earliest arrival
    among the packets still waiting at its end, to its end. Not before the
    first t2."""
    t2, t3, t4 = p.t["t2"], p.t["t3"], p.t["t4"]
    rows = np.flatnonzero(t2)
    rows = rows[np.argsort(t2[rows], kind="stable")]
    starts = t2[rows]
    closed = (t3[rows] != 0) & (t4[rows] != 0) & (starts <= t3[rows]) & (t3[rows] <= t4[rows])
    nxt = starts[np.minimum(np.searchsorted(starts, starts, "right"), len(starts) - 1)]
    leave = np.where(closed, t4[rows], nxt)
    arrive = p.t[arrival][rows]
    waits = (arrive != 0) & (arrive <= starts)
    # earliest arrival among the packets from the i-th in t2 order on
    earliest, low = [0] * len(rows), None
    for i in range(len(rows) - 1, -1, -1):
        if waits[i] and (low is None or arrive[i] < low):
            low = arrive[i]
        earliest[i] = low
    count, reach = 0, leave[0]
    for i in range(1, len(rows)):
        if starts[i] > reach and earliest[i] is not None and earliest[i] < starts[i]:
            count += starts[i] - max(reach, earliest[i]) >= min_ns
        reach = max(reach, leave[i])
    return count


def test_every_notebook_is_tested():
    pairs = {f[:-6] for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")}
    assert pairs == set(NAMES)
    for name in NAMES:
        assert os.path.isfile(os.path.join(NOTEBOOKS, name + ".py")), name


@pytest.mark.parametrize("name", NAMES)
def test_pair_in_sync(name):
    """The .py is exactly what jupytext writes from the .ipynb with this
    folder's jupytext.toml, and the .ipynb carries no outputs."""
    config = load_jupytext_config(NOTEBOOKS)
    assert config is not None and "py:percent" in str(config.formats)
    nb = nbformat.read(os.path.join(NOTEBOOKS, name + ".ipynb"), as_version=4)
    with open(os.path.join(NOTEBOOKS, name + ".py")) as f:
        text = f.read()
    assert jupytext.writes(nb, fmt="py:percent", config=config) == text, \
        f"notebooks/{name}: run `jupytext --sync notebooks/{name}.ipynb`"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, \
                f"notebooks/{name}.ipynb has outputs: strip them (jupytext --sync does)"


def execute(name, env_overrides, tmp_path):
    """(probe values, number of figures shown) of a fresh run of the notebook."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name + ".ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE % PROBES[name]))
    # the user's own HOPSCOPE_* must not leak in; nothing written into the repo
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPSCOPE_")}
    env.update(env_overrides, PYTHONDONTWRITEBYTECODE="1", MPLCONFIGDIR=str(tmp_path / "mpl"))
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": NOTEBOOKS}})
    client.execute(env=env)  # CellExecutionError names the cell and the error
    images = sum("image/png" in o.get("data", {}) for c in nb.cells[:-1]
                 for o in c.get("outputs", ()))
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    return json.loads(out), images


def test_single_sender(tmp_path):
    got, images = execute("single_sender", {}, tmp_path)
    path = os.path.join(DATA, "single.hsr")
    assert got["path"] == path and images >= FIGURES["single_sender"]
    p = Packets(path)
    assert got["tos"] == 4  # the sender: most packets carry its TOS
    assert got["d_p_p50"] == pytest.approx(np.percentile(p.delays("t2", "t3", tos=4), 50))
    assert got["d_iq_count"] == len(p.delays("t1", "t2", tos=4)) > 5000
    assert got["d_oq_hist_sum"] == pytest.approx(1)


def test_competitive_reads_the_run_it_is_given(tmp_path):
    """Pointed at a copy of the recording through HOPSCOPE_RECORDING."""
    path = str(tmp_path / "run.hsr")
    shutil.copy(os.path.join(DATA, "competitive.hsr"), path)
    got, images = execute("competitive", {"HOPSCOPE_RECORDING": path}, tmp_path)
    assert got["path"] == path and got["senders"] == [4, 5]
    assert images >= FIGURES["competitive"]
    p = Packets(path)
    for tos in (4, 5):
        assert got["d_oq_p99"][str(tos)] == pytest.approx(np.percentile(p.delays("t3", "t4", tos), 99))
        assert got["dropped"][str(tos)] == int((p.dropped & (p.tos == tos)).sum())
    assert sum(got["dropped"].values()) > 0


def test_queues_coffee(tmp_path):
    got, images = execute("queues_coffee", {}, tmp_path)
    path = os.path.join(DATA, "competitive.hsr")
    assert got["path"] == path and images >= FIGURES["queues_coffee"]
    p = Packets(path)
    assert got["arrival"] == "t0"  # recorded: the paper's placement, before the backlog
    assert got["min_break_ns"] == max(MIN_BREAK_NS, arrival_gap(p, "t0"))
    assert got["breaks"] == coffee_break_count(p, got["min_break_ns"], "t0")
    assert got["output_max"] == output_queue_max(p) > 1


def test_overhead(tmp_path):
    got, images = execute("overhead", {}, tmp_path)
    path = os.path.join(DATA, "overhead.json")
    assert got["path"] == path and images >= FIGURES["overhead"]
    with open(path) as f:
        bench = json.load(f)
    # the summary is each configuration's median over the rounds
    rounds = [r["64"]["untraced"]["pps"] for r in bench["rounds"]]
    assert got["untraced_64"] == pytest.approx(np.median(rounds) / 1000)
    assert got["programs"] == sum(len(progs) for by_config in bench["ns_per_run"].values()
                                  for progs in by_config.values())
