"""Parquet and CSV export, and the `python3 -m hopscope` command line
(export, verify, describe): output, messages and exit status."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import hopscope
from hopscope.record import format as fmt
from hopscope.record.export import metadata, to_csv, to_parquet
from hopscope.record.synth import write_synthetic

N = 5000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "run.hsr"
    return write_synthetic(path, N, chunk_records=1024, stages=["t0", "t1", "t2", "t3", "t4"])


@pytest.fixture(scope="module")
def df(run):
    return hopscope.load(run.path)


def hopscope_cli(*args):
    return subprocess.run([sys.executable, "-m", "hopscope", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


# ---- library ----

def test_parquet_round_trip_keeps_values_categories_and_metadata(df, run, tmp_path):
    out = tmp_path / "run.parquet"
    to_parquet(df, out)
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, df, check_like=False)
    for c in ("status", "drop_stage", "src", "dst", "in_if", "out_if"):
        assert isinstance(back[c].dtype, pd.CategoricalDtype), c
        assert list(back[c].cat.categories) == list(df[c].cat.categories), c
    meta = metadata(out)
    assert meta["header"] == run.header
    assert meta["trailer"] == df.attrs["trailer"]
    assert meta["counters"] == df.attrs["counters"]
    assert meta["truncated"] is False
    assert meta["dropped_records"] == 0 and meta["problems"] == []
    assert back.attrs["header"] == run.header


def test_csv_has_every_row_and_empty_missing_values(df, tmp_path):
    out = tmp_path / "run.csv"
    to_csv(df, out)
    back = pd.read_csv(out)
    assert list(back.columns) == list(df.columns)
    assert len(back) == N
    np.testing.assert_array_equal(back["t1"], df["t1"])
    np.testing.assert_array_equal(back["seq"].astype(np.uint64), df["seq"])
    assert back["d_oq"].isna().sum() == df["d_oq"].isna().sum() > 0
    assert list(back["status"]) == list(df["status"].astype(str))
    assert list(back["src"]) == list(df["src"].astype(str))


# ---- command line ----

def test_help_lists_subcommands():
    r = hopscope_cli("--help")
    assert r.returncode == 0
    for name in ("export", "verify", "describe"):
        assert name in r.stdout
    r = hopscope_cli("export", "--help")
    assert r.returncode == 0 and "--parquet" in r.stdout and "example" in r.stdout


@pytest.mark.parametrize("args, message", [
    ((), "usage: hopscope SUBCOMMAND"),
    (("frobnicate",), "unknown subcommand 'frobnicate'"),
    (("export",), "the following arguments are required: file"),
    (("export", "x.hsr"), "say where to write: --parquet OUT and/or --csv OUT"),
    (("describe", "x.hsr", "--bogus"), "unrecognized arguments: --bogus"),
    (("verify",), "the following arguments are required: FILE"),
])
def test_usage_errors_exit_2(args, message):
    r = hopscope_cli(*args)
    assert r.returncode == 2, r
    assert message in r.stderr


def test_export_cli(run, tmp_path):
    pq, csv = tmp_path / "o.parquet", tmp_path / "o.csv"
    r = hopscope_cli("export", run.path, "--parquet", pq, "--csv", csv)
    assert r.returncode == 0, r.stderr
    assert f"{pq}: {N} records" in r.stdout and f"{csv}: {N} records" in r.stdout
    assert len(pd.read_parquet(pq)) == N and len(pd.read_csv(csv)) == N


def test_file_errors_exit_1(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    r = hopscope_cli("export", tmp_path / "notes.txt", "--csv", tmp_path / "o.csv")
    assert r.returncode == 1
    assert "not a hopscope record file" in r.stderr
    r = hopscope_cli("describe", tmp_path / "missing.hsr")
    assert r.returncode == 1 and "No such file" in r.stderr
    assert not (tmp_path / "o.csv").exists()


def test_export_of_a_truncated_file_warns_and_strict_refuses(tmp_path):
    s = write_synthetic(tmp_path / "cut.hsr", N, chunk_records=1024, truncate_bytes=3000)
    out = tmp_path / "cut.parquet"
    r = hopscope_cli("export", s.path, "--parquet", out)
    assert r.returncode == 0
    assert "hopscope: warning:" in r.stderr and "at byte" in r.stderr
    assert pd.read_parquet(out).attrs["truncated"] is True
    r = hopscope_cli("export", s.path, "--parquet", tmp_path / "strict.parquet", "--strict")
    assert r.returncode == 1 and "at byte" in r.stderr
    assert not (tmp_path / "strict.parquet").exists()


def test_verify_cli(run, tmp_path):
    r = hopscope_cli("verify", run.path)
    assert r.returncode == 0, r.stderr
    assert f"{run.path}: OK: {N} records" in r.stdout and "END (stopped: count)" in r.stdout
    k = [i for i, t in enumerate(run.chunk_types) if t == fmt.CHUNK_RECORDS][2]
    bad = write_synthetic(tmp_path / "bad.hsr", N, chunk_records=1024, bad_crc_chunk=k)
    r = hopscope_cli("verify", run.path, bad.path)
    assert r.returncode == 1
    assert f"{run.path}: OK" in r.stdout
    assert f"{bad.path}: PROBLEMS" in r.stderr
    assert f"chunk {k} (RECORDS, 1024 records) at byte {bad.chunk_offsets[k]}: CRC mismatch" \
        in r.stderr


def test_describe_cli(run):
    r = hopscope_cli("describe", run.path)
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines()}
    assert f"{N} records" in lines["file"]
    assert "t0 t1 t2 t3 t4" in lines["stages"]
    assert "complete" in lines["status"] and "dropped" in lines["status"]
    assert "4:" in lines["tos"] and "5:" in lines["tos"]
    for col in ("d_iq", "d_p", "d_oq", "transit", "d_rxq"):
        assert "p50" in lines[col], col
    assert lines["problems"].split(None, 1)[1] == "none"
    r = hopscope_cli("describe", run.path, "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["header"] == run.header
