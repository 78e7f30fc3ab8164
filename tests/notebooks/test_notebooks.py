"""The notebooks: every .py/.ipynb pair in sync (what `jupytext --sync` would
write) with the outputs stripped; every notebook executed in a fresh kernel
against the checked-in data, failing on any cell error; and values each
computed checked against the library run directly on the same file.

The values are read by a probe cell appended to the executed copy (never
written back), so the names it reads (PATH, a, TOS, ...) are the notebooks'
own variables."""
import json
import os
import shutil
import sys

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = os.path.join(ROOT, "notebooks")
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "userspace", "python"))
import hopscope  # noqa: E402
from hopscope.analysis.coffee import DEFAULT_MIN_NS, coffee_breaks, idle_floor_ns  # noqa: E402
from hopscope.analysis.queues import occupancy  # noqa: E402
from hopscope.analysis.stats import stage_stats  # noqa: E402

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
                     '"output_max": int(a.output_queue.n.max())',
    "overhead": '"path": PATH, "untraced_64": summary.loc["64 B", "untraced_kpps"], '
                '"programs": len(ns)',
}
# figures each notebook must show (a figure that silently vanished fails)
FIGURES = {"single_sender": 3, "competitive": 3, "queues_coffee": 5, "overhead": 1}


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
    df = hopscope.load(path)
    assert got["tos"] == 4  # the sender: most packets carry its TOS
    want = stage_stats(df[df["tos"] == 4]).set_index("stage")
    assert got["d_p_p50"] == pytest.approx(want.loc["d_p", "p50"])
    assert got["d_iq_count"] == want.loc["d_iq", "count"] > 5000
    assert got["d_oq_hist_sum"] == pytest.approx(1)


def test_competitive_reads_the_run_it_is_given(tmp_path):
    """Pointed at a copy of the recording through HOPSCOPE_RECORDING."""
    path = str(tmp_path / "run.hsr")
    shutil.copy(os.path.join(DATA, "competitive.hsr"), path)
    got, images = execute("competitive", {"HOPSCOPE_RECORDING": path}, tmp_path)
    assert got["path"] == path and got["senders"] == [4, 5]
    assert images >= FIGURES["competitive"]
    df = hopscope.load(path)
    want = stage_stats(df, by="tos").set_index(["tos", "stage"])
    for tos in (4, 5):
        assert got["d_oq_p99"][str(tos)] == pytest.approx(want.loc[(tos, "d_oq"), "p99"])
        assert got["dropped"][str(tos)] == int(((df["tos"] == tos)
                                                & (df["status"] == "dropped")).sum())
    assert sum(got["dropped"].values()) > 0


def test_queues_coffee(tmp_path):
    got, images = execute("queues_coffee", {}, tmp_path)
    path = os.path.join(DATA, "competitive.hsr")
    assert got["path"] == path and images >= FIGURES["queues_coffee"]
    df = hopscope.load(path)
    assert got["breaks"] == len(coffee_breaks(df, max(DEFAULT_MIN_NS, idle_floor_ns(df)))) > 0
    assert got["output_max"] == occupancy(df, "output").n.max() > 1


def test_overhead(tmp_path):
    got, images = execute("overhead", {}, tmp_path)
    path = os.path.join(DATA, "overhead.json")
    assert got["path"] == path and images >= FIGURES["overhead"]
    with open(path) as f:
        bench = json.load(f)
    assert got["untraced_64"] == pytest.approx(bench["summary"]["64"]["untraced_kpps"])
    assert got["programs"] == sum(len(progs) for by_config in bench["ns_per_run"].values()
                                  for progs in by_config.values())
