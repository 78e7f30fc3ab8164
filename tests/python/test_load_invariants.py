"""The file's invariants (docs/record-format.md): files whose every CRC is
right but that say the impossible, made with tests/rawrecord.py from the
recorder's own files, one test per class. Each violation is one problem
naming its count and first record: load warns, verify exits 1.

The recordings in tests/data were written by the C recorder: they must keep
every invariant, and so must what the recorder writes that looks odd but
is not (a cross-CPU delay a little below 0, an inflight record flagged
t4_unseen, a drop before t2)."""
import contextlib
import io
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hopscope
from hopscope import cli
from hopscope.record.invariants import CROSS_CPU_NS, Problem
from hopscope.record.synth import write_synthetic

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.path.join(ROOT, "tests"))
from rawrecord import (COLUMNS, COUNTERS, END, PATH, RECORD_KINDS, RECORDS, STAGE,  # noqa: E402
                       STATUS, Raw, write)

DATA = ROOT / "tests" / "data"
T4_UNSEEN, IPV6 = 0x80, 0x01
KIND_NAMES = {RECORDS: "RECORDS", COLUMNS: "COLUMNS"}


def _load(path):
    """(frame, the problems of the file's invariants)"""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        df = hopscope.load(path)
    problems = [p for p in df.attrs["problems"] if isinstance(p, Problem)]
    if problems:
        assert any(str(problems[0]) in str(x.message) for x in w)
    return df, problems


def _verify(path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["verify", str(path)])
    return rc, err.getvalue()


class File:
    """A recording's parts, to change and write back with every CRC right."""

    def __init__(self, src):
        self.raw = Raw(src)
        self.header, self.chunks = self.raw.header, self.raw.chunks
        self.records = [p for k, p in self.chunks if k in RECORD_KINDS]
        self.end = next(p for k, p in self.chunks if k == END)

    def as_kind(self, kind):
        """every chunk of records written as kind (RECORDS or COLUMNS)"""
        for c in self.chunks:
            c[0] = kind if c[0] in RECORD_KINDS else c[0]
        return self

    def t(self, stage):
        """every record's stage time, as a view per chunk of records"""
        return [r["t"][:, STAGE[stage]] for r in self.records]

    def write(self, path):
        write(path, self.header, self.chunks)
        return path

    def row(self, chunk, i):
        """(row in the file, seq) of record i of chunk of records chunk"""
        return (sum(len(r) for r in self.records[:chunk]) + i,
                int(self.records[chunk]["seq"][i]))


@pytest.fixture(params=["single.hsr", "competitive.hsr"])
def rec(request):
    return File(DATA / request.param)


def _one(problems, kind, count, row_seq=None):
    """The one problem of the file, of kind and count (and first record)."""
    assert len(problems) == 1, problems
    p = problems[0]
    assert (p.kind, p.count) == (kind, count), str(p)
    if row_seq:
        assert (p.row, p.seq) == row_seq, str(p)
        assert f"first: row {p.row}, seq {p.seq:#x}" in p
    return p


def _recount(rec, chunk, was, now):
    """One record of chunk of records chunk moved from status was to now: the
    counts of every COUNTERS and END chunk after it follow (the kernel's too)"""
    records = 0
    for kind, part in rec.chunks:
        records += kind in RECORD_KINDS
        if kind in (COUNTERS, END) and records > chunk:
            for counts in (part["userspace"]["records_by_status"], part["counters"]):
                counts[was] -= 1
                counts[now] = counts.get(now, 0) + 1
            by_path = part["userspace"].get("complete_by_path")
            if by_path and was == "complete":
                by_path["stack"] -= 1


def _refused_by_verify(path, problem):
    rc, err = _verify(path)
    assert rc == 1 and str(problem) in err


# ---- what the recorder writes keeps every invariant ----

@pytest.mark.parametrize("name", ["single.hsr", "competitive.hsr"])
def test_recordings_keep_every_invariant(tmp_path, name):
    df, problems = _load(DATA / name)
    assert problems == [] and df.attrs["problems"] == []
    assert _verify(DATA / name)[0] == 0
    # rewritten by the tests' own writer, as RECORDS and as COLUMNS: the same records
    for kind in RECORD_KINDS:
        again, problems = _load(File(DATA / name).as_kind(kind).write(tmp_path / name))
        assert problems == [] and again.equals(df)


def test_synthetic_files_keep_every_invariant(tmp_path):
    for kw in ({}, {"stages": ["t0", "t_tcin", "t_fwd", "t_tceg"]}, {"inflight": 50},
               {"max_flows": 2, "flows_per_sender": 30}, {"drop_fraction": 0.3}):
        s = write_synthetic(tmp_path / "s.hsr", 5000, chunk_records=1000, **kw)
        assert _load(s.path)[1] == [], kw


def test_what_looks_odd_but_is_written_so_passes(tmp_path, rec):
    """A delay across CPUs a little below 0 (their clocks' offset), t2 just
    before t1 (RPS: another CPU), t0 long before t1 (a full backlog)."""
    t1, t2, t3, t4 = (rec.t(s)[0] for s in ("t1", "t2", "t3", "t4"))
    r = rec.records[0]
    complete = np.flatnonzero(r["status"] == STATUS["complete"])
    i, j = complete[:2]
    r["cpu_out"][i] = r["cpu_in"][i] + 1  # t4 on the other CPU: its delays may go back
    t4[i] = t3[i] - (CROSS_CPU_NS - 1)
    t2[j] = t1[j] - 1  # t2 (RPS: any CPU) just before t1
    rec.t("t0")[0][j] = t1[j] - 10**9
    assert _load(rec.write(tmp_path / "odd.hsr"))[1] == []


# ---- one test per class ----

def test_time(tmp_path, rec):
    t1, t4 = rec.t("t1")[0], rec.t("t4")[0]
    t1[5], t4[5] = 1 << 63, (1 << 63) - 1  # transit -1 if read as signed
    high, after = _load(rec.write(tmp_path / "a.hsr"))[1]  # and no delay below 0
    assert (high.kind, high.count, high.row, high.seq) == ("time", 1, *rec.row(0, 5))
    assert "1 records have a time of 2^63 ns or more" in high
    assert "1 records have a time after the END chunk" in after
    t1[5], t4[5] = rec.t("t2")[0][5] - 500, rec.t("t3")[0][5] + 500  # whole again
    start, end = rec.header["start_monotonic_ns"], rec.end["monotonic_ns"]
    rec.t("t0")[0][7] = start - 61 * 10**9
    p = _one(_load(rec.write(tmp_path / "b.hsr"))[1], "time", 1, rec.row(0, 7))
    assert "before the run's start" in p
    rec.t("t0")[0][7] = rec.t("t1")[0][7] - 1000
    t4[-1] = end + 1  # 11.6 days of transit, after END
    p = _one(_load(rec.write(tmp_path / "c.hsr"))[1], "time", 1, rec.row(0, len(t4) - 1))
    assert "after the END chunk" in p
    _refused_by_verify(tmp_path / "c.hsr", p)


def test_order(tmp_path, rec):
    """t4 before t3 on every complete record of a chunk, by more than two
    CPUs' clocks can differ."""
    r = rec.records[0]
    t3, t4 = rec.t("t3")[0], rec.t("t4")[0]
    complete = r["status"] == STATUS["complete"]
    t4[complete] = t3[complete] - CROSS_CPU_NS - 1
    # and those whose t4 is now before their t1, on one CPU
    t1 = rec.t("t1")[0]
    back = complete & (t4 < t1) & (r["cpu_in"] == r["cpu_out"])
    df, problems = _load(rec.write(tmp_path / "a.hsr"))
    assert [(p.kind, p.count, p.row, p.seq) for p in problems] == [
        ("order", int(complete.sum()), *rec.row(0, int(np.argmax(complete)))),
        ("order", int(back.sum()), *rec.row(0, int(np.argmax(back))))]
    assert "t4 more than 1000 ns" in problems[0] and "d_oq below 0" in problems[0]
    assert "t1 and t4 on one CPU have t4 before t1" in problems[1]
    _refused_by_verify(tmp_path / "a.hsr", problems[0])


def test_transit_below_zero_on_one_cpu(tmp_path, rec):
    """t1 and t4 read one CPU's clock: t4 before t1 by 1 ns is impossible
    there, and allowed across CPUs."""
    r = rec.records[0]
    i = int(np.flatnonzero(r["status"] == STATUS["complete"])[3])
    assert r["cpu_in"][i] == r["cpu_out"][i]
    for s in ("t0", "t1", "t2", "t3"):
        rec.t(s)[0][i] = rec.t("t4")[0][i] + 1 if s != "t0" else rec.t("t4")[0][i] - 5000
    _one(_load(rec.write(tmp_path / "a.hsr"))[1], "order", 1, rec.row(0, i))
    r["cpu_out"][i] += 1
    assert _load(rec.write(tmp_path / "b.hsr"))[1] == []


@pytest.mark.parametrize("change, what", [
    ("complete_t4_0", "complete records lack t1 or t4"),
    ("complete_t1_0", "complete records lack t1 or t4"),
    ("complete_t4_unseen", "the t4_unseen flag and are not inflight or evicted"),
    ("dropped_t4", "a t4 and an output interface other than their status says"),
    ("dropped_out_if", "a t4 and an output interface other than their status says"),
    ("reason_0", "drop reason the header's drop_reasons does not name as a drop"),
    ("reason_1", "drop reason the header's drop_reasons does not name as a drop"),
    ("reason_99999", "drop reason the header's drop_reasons does not name as a drop"),
    ("drop_stage", "drop stage that is not their last stage with a time"),
    ("ipv6_flag", "IPv6 flag other than their flow's family"),
    ("ipopts_v6", "IPv4 options on IPv6"),
    ("segs", "segs above 65535"),
    ("out_segs_1", "out_segs 1 (0: left whole"),
    ("span_whole", "a t4_span_ns without pieces"),
    ("stack_t2_0", "complete records lack a stage of their path"),
    ("fast_t2", "complete records lack a stage of their path"),
    ("partial_both", "partial records have both t2 and t3 or neither"),
    ("partial_out_if", "a t4 and an output interface other than their status says"),
])
def test_status_flags_and_fields(tmp_path, change, what):
    rec = File(DATA / "competitive.hsr")
    chunk = next(k for k, r in enumerate(rec.records) if (r["status"] == 2).any())
    r = rec.records[chunk]
    status = r["status"]
    c = int(np.flatnonzero((status == STATUS["complete"]) & ((r["flags"] & IPV6) == 0))[0])
    d = int(np.flatnonzero(status == STATUS["dropped"])[0])
    i = d if change.startswith(("dropped", "reason", "drop_stage")) else c
    ts = r["t"][i]
    if change == "complete_t4_0":
        ts[STAGE["t4"]] = 0
    elif change == "complete_t1_0":
        ts[STAGE["t1"]] = 0
    elif change == "complete_t4_unseen":
        r["flags"][i] |= T4_UNSEEN
        rec.end["userspace"]["t4_unseen"] = 1  # as the recorder counts them
    elif change == "dropped_t4":
        ts[STAGE["t4"]] = ts[STAGE["t2"]] + 5000
        r["drop_stage"][i] = STAGE["t4"]
    elif change == "dropped_out_if":
        r["out_ifindex"][i] = 4
    elif change.startswith("reason_"):
        r["drop_reason"][i] = int(change.split("_")[1])
    elif change == "drop_stage":
        r["drop_stage"][i] = STAGE["t1"]
    elif change == "ipv6_flag":
        r["flags"][i] |= IPV6
    elif change == "ipopts_v6":
        i = int(np.flatnonzero(r["flags"] & IPV6)[0])
        r["flags"][i] |= 0x04
    elif change == "segs":
        r["segs"][i] = 0xFFFFFFFF
    elif change == "out_segs_1":
        r["out_segs"][i] = 1
    elif change == "span_whole":
        r["t4_span_ns"][i] = 500
    elif change == "stack_t2_0":
        ts[STAGE["t2"]] = 0
    elif change == "fast_t2":  # a fast path's record has no t2, t3
        r["path"][i] = PATH["flowtable"]
        ts[STAGE["t3"]] = 0
    elif change.startswith("partial"):
        r["status"][i] = STATUS["partial"]
        if change == "partial_out_if":
            ts[STAGE["t3"]] = 0
            r["out_ifindex"][i] = 0
        _recount(rec, chunk, "complete", "partial")
    p = _one(_load(rec.write(tmp_path / "a.hsr"))[1], "status", 1, rec.row(chunk, i))
    assert what in p
    _refused_by_verify(tmp_path / "a.hsr", p)


def test_inflight_records_flagged_t4_unseen_pass(tmp_path):
    s = write_synthetic(tmp_path / "s.hsr", 3000, inflight=20)
    rec = File(s.path)
    r = rec.records[-1]
    inflight = np.flatnonzero(r["status"] == STATUS["inflight"])
    r["flags"][inflight[:5]] |= T4_UNSEEN
    rec.end["userspace"]["t4_unseen"] = 5
    assert _load(rec.write(tmp_path / "a.hsr"))[1] == []
    r["flow"][inflight[0]] = 0xFFFFFFFF  # never flagged without a flow
    rec.end["userspace"]["flow_overflow"] = 1
    _one(_load(rec.write(tmp_path / "b.hsr"))[1], "status", 1,
         rec.row(len(rec.records) - 1, int(inflight[0])))


@pytest.mark.parametrize("kind", RECORD_KINDS, ids=KIND_NAMES.get)
def test_header_against_records(tmp_path, rec, kind):
    """Stages the header leaves out lose their columns: said, not silent
    (and their times still count for the drop stage's check).
    An ifindex the header does not name leaves in_if empty: said."""
    rec.as_kind(kind)
    n = sum(len(r) for r in rec.records)
    rec.header["stages"] = ["t1", "t2", "t3", "t4"]
    df, problems = _load(rec.write(tmp_path / "a.hsr"))
    assert "t0" not in df and "d_rxq" not in df
    has_t0 = np.concatenate([t0[::16] for t0 in rec.t("t0")]) != 0
    p = _one(problems, "header", int(has_t0.sum()))
    assert "stage the header's stages do not list" in p
    rec.header["stages"] = ["t0", "t1", "t2", "t3", "t4"]
    s1 = next(i for i in rec.header["interfaces"] if i["name"] == "r-s1")
    s1["ifindex"] = 12
    from_s1 = np.concatenate([r["in_ifindex"] for r in rec.records]) == 2
    df, problems = _load(rec.write(tmp_path / "b.hsr"))
    assert df["in_if"].isna().sum() == from_s1.sum() > 0
    first = int(np.argmax(from_s1))
    p = _one(problems, "header", int(from_s1.sum()))
    assert p.row == first and "input ifindex no interface of the header" in p
    s1["ifindex"] = 2
    assert _load(rec.write(tmp_path / "c.hsr"))[1] == []
    assert n == len(df)


@pytest.mark.parametrize("kind", RECORD_KINDS, ids=KIND_NAMES.get)
def test_a_drop_at_a_stage_the_header_leaves_out(tmp_path, kind):
    """A record dropped at t_fwd, a stage the header does not list, after
    its t2: its last time is t_fwd's, read from the record though the
    column is not loaded, so its drop stage is right; said as such a time
    (when on a sampled row), never as a wrong drop stage."""
    rec = File(DATA / "competitive.hsr").as_kind(kind)
    rec.header["stages"] = ["t0", "t1", "t2", "t3", "t4"]
    r = next(r for r in rec.records if ((r["status"] == STATUS["dropped"])
                                        & (r["t"][:, STAGE["t2"]] != 0)
                                        & (r["t"][:, STAGE["t3"]] == 0)).any())
    dropped = (r["status"] == STATUS["dropped"]) & (r["t"][:, STAGE["t2"]] != 0) \
        & (r["t"][:, STAGE["t3"]] == 0)
    i = int(np.flatnonzero(dropped & (np.arange(len(r)) % 16 != 0))[0])  # not sampled
    r["t"][i, STAGE["t_fwd"]] = r["t"][i, STAGE["t2"]] + 700
    r["drop_stage"][i] = STAGE["t_fwd"]
    df, problems = _load(rec.write(tmp_path / "a.hsr"))
    assert problems == [] and "t_fwd" not in df


@pytest.mark.parametrize("key, value", [("version", 7), ("record_size", 100)])
def test_header_json_against_the_file_header(tmp_path, key, value):
    rec = File(DATA / "single.hsr")
    rec.header[key] = value
    p = _one(_load(rec.write(tmp_path / "a.hsr"))[1], "header", None)
    assert f"the header JSON says {key} {value}, the file header" in p


@pytest.mark.parametrize("key, change", [
    ("records_by_status.complete", lambda e: e["userspace"]["records_by_status"].update(
        complete=e["userspace"]["records_by_status"]["complete"] + 1)),
    ("records_by_status.dropped", lambda e: e["userspace"]["records_by_status"].update(
        dropped=2**64 - 1)),
    ("flows", lambda e: e["userspace"].update(flows=e["userspace"]["flows"] + 1)),
    ("t4_unseen", lambda e: e["userspace"].update(t4_unseen=3)),
    ("inflight_at_stop", lambda e: e["userspace"].update(inflight_at_stop=2)),
    ("counters.complete - rb_fail_complete", lambda e: e["counters"].update(
        complete=e["counters"]["complete"] - 1)),
    ("counters complete + dropped + evicted + other_out - rb_fail",
     lambda e: e["counters"].update(evicted=4)),
    ("complete_by_path.stack", lambda e: e["userspace"].update(
        complete_by_path={"stack": 1, "flowtable": 0})),
])
def test_end_counts_against_the_rows(tmp_path, key, change):
    rec = File(DATA / "single.hsr")
    change(rec.end)
    problems = _load(rec.write(tmp_path / "a.hsr"))[1]
    assert {p.kind for p in problems} == {"counts"}
    p = next(p for p in problems if f"the END chunk says {key} " in p)
    _refused_by_verify(tmp_path / "a.hsr", p)


def test_a_negative_count_is_refused(tmp_path):
    rec = File(DATA / "single.hsr")
    rec.end["userspace"]["records_by_status"]["complete"] = -1
    with pytest.raises(hopscope.RecordFileError, match="records_by_status is not an object "
                                                        "of counts"):
        hopscope.load(rec.write(tmp_path / "a.hsr"))


def test_a_file_cut_at_a_chunk_boundary_with_a_consistent_end(tmp_path):
    """The last RECORDS chunk left out, END's records_written made to match:
    its by-status counts and the kernel's still count the missing records."""
    rec = File(DATA / "single.hsr")
    last = max(k for k, (kind, _) in enumerate(rec.chunks) if kind in RECORD_KINDS)
    gone = rec.chunks.pop(last)[1]
    rec.end["userspace"]["records_written"] -= len(gone)
    df, problems = _load(rec.write(tmp_path / "a.hsr"))
    assert len(df) == 6010 and len(gone) == 3
    assert {p.kind for p in problems} == {"counts"}
    said = rec.end["userspace"]["records_by_status"]["complete"]
    have = said - int((gone["status"] == STATUS["complete"]).sum())
    assert f"records_by_status.complete {said}, the file's records give {have}" in \
        " ".join(df.attrs["problems"])


@pytest.mark.parametrize("kind, name", [(RECORDS, "RECORDS"), (COLUMNS, "COLUMNS")])
def test_a_records_chunk_repeated_with_valid_crcs(tmp_path, rec, kind, name):
    rec.as_kind(kind)
    first = next(k for k, (kind, _) in enumerate(rec.chunks) if kind in RECORD_KINDS)
    rec.chunks.insert(first + 1, [kind, rec.chunks[first][1].copy()])
    df, problems = _load(rec.write(tmp_path / "a.hsr"))
    assert len(df) == sum(len(r) for r in rec.records)  # the repeat left out
    p = _one(problems, "chunks", len(rec.chunks[first][1]))
    assert f"chunk {first + 1} ({name}" in p and f"repeats chunk {first} ({name}" in p
    _refused_by_verify(tmp_path / "a.hsr", p)


def test_verify_false_opts_out_of_the_invariants(tmp_path, rec):
    rec.t("t1")[0][0] = 1 << 63
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = hopscope.load(rec.write(tmp_path / "a.hsr"), verify=False)
    assert df["t1"].iloc[0] < 0


def test_counters_snapshot_counts_against_the_rows_before_it(tmp_path):
    rec = File(DATA / "competitive.hsr")
    at = [k for k, (kind, _) in enumerate(rec.chunks) if kind == COUNTERS]
    rec.chunks[at[1]][1]["userspace"]["records_by_status"]["dropped"] += 5
    p = _one(_load(rec.write(tmp_path / "a.hsr"))[1], "counts", 5)
    assert f"chunk {at[1]} (COUNTERS) at byte" in p and "says records_by_status.dropped" in p
