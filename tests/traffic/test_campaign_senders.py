"""The campaign summary per sender (TOS): each run's statistics of each
sender's complete packets, their mean and spread over the repetitions, and
the same from a finished run's part of the dataset when its metadata was
written before it had them. Expected values are computed here from the
records' instants."""
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

from hopscope.analysis.runs import sender_stats
from hopscope.record import dataset, synth
from hopscope.record.load import load
from hopscope.report.campaign import write
from hopscope.traffic.campaign import KEY, _summary_entry


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    out = {}
    for rep, seed in ((1, 4), (2, 5)):
        synth.write_synthetic(d / f"r{rep}.hsr", 5000, seed=seed)
        out[rep] = load(d / f"r{rep}.hsr")
    return out


def d_p(df, tos):
    c = df[(df["status"] == "complete") & (df["tos"] == tos)]
    v = (c["t3"].astype("int64") - c["t2"].astype("int64")).to_numpy()
    return v[v >= 0]


def test_each_sender_summarised_apart(runs, tmp_path):
    entries = [{"condition": "c", "repetition": rep, "router": "r", "stats": {}, "counts": {},
                "senders": sender_stats(df)} for rep, df in runs.items()]
    toses = sorted(int(t) for t in runs[1]["tos"].unique())
    assert {4, 5} <= set(toses)  # the synthetic run's two senders
    write(entries, str(tmp_path), "t")
    got = pd.read_csv(tmp_path / "senders.csv")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "senders.parquet"), got,
                                  check_dtype=False)
    assert sorted(got["tos"].unique()) == toses
    for tos in (4, 5):
        row = got[(got["tos"] == tos) & (got["stage"] == "d_p")].iloc[0]
        p99 = [np.quantile(d_p(df, tos), 0.99) for df in runs.values()]
        assert row["runs"] == 2
        assert row["p99_mean"] == pytest.approx(np.mean(p99))
        assert row["p99_std"] == pytest.approx(np.std(p99, ddof=1))
        assert row["count_mean"] == np.mean([len(d_p(df, tos)) for df in runs.values()])
    assert (tmp_path / "summary.pdf").read_bytes().startswith(b"%PDF")


def test_a_run_finished_before_per_sender_stats_reads_its_dataset_part(runs, tmp_path):
    part = dataset.write_run(runs[1], str(tmp_path), "c", 1)
    meta = {KEY: {"condition_name": "c", "repetition": 1, "stats": {}, "counts": {},
                  "dataset": os.path.relpath(part, tmp_path)}}
    entry = _summary_entry(meta, str(tmp_path))
    want = sender_stats(runs[1])
    assert entry["senders"].keys() == want.keys()
    for tos in want:
        for stage, stats in want[tos].items():
            assert entry["senders"][tos][stage] == pytest.approx(stats, nan_ok=True), (tos, stage)


def test_a_control_is_set_beside_its_twin(runs, tmp_path):
    entries = [{"condition": cond, "repetition": 1, "router": "r", "stats": {}, "counts": {},
                "senders": sender_stats(df)}
               for cond, df in (("c", runs[1]), ("control-cpu_c", runs[2]),
                                ("control-lonely_x", runs[2]))]
    write(entries, str(tmp_path), "t")
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "summary.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "Controls: a condition named control-WHAT_TWIN against TWIN" in text
    twin, control = (np.quantile(d_p(runs[k], 4), 0.99) / 1e3 for k in (1, 2))
    page = text.split("Controls:")[1].split("Per run:")[0]
    line = next(x for x in page.splitlines() if "sender1 (TOS 4)" in x and " d_p " in x)
    assert "control-cpu_c" in line, page
    assert f"{twin:.3g} → {control:.3g}" in line and f"{control - twin:+.3g}" in line, line
    assert "control-lonely_x" not in page  # no twin, nothing to compare
