"""Checksum-valid mutations: files that are intact (every CRC and chunk
index recomputed by tests/rawrecord.py, not by hopscope) but say the
impossible, each class with its own expectation written here from
docs/record-format.md ("The file's invariants"), not from the loader:

  time     a time of 2^63 ns or more, before the start, after END
  order    a later stage before an earlier one by more than CPUs' clocks differ
  status   a status, flag or field the stages recorded rule out
  header   the header against the records and the file header
  counts   END's and COUNTERS' counts against the rows
  chunks   a chunk of records (RECORDS or COLUMNS) repeated
and JSON that is odd but valid (lone surrogates, deep nesting): read with a
note. Every mutation goes through hopscope.load and `verify` in this
process: load names a problem of the class (a warning, or a refusal), verify
exits 1 and prints it; the odd JSON loads and verify exits 0; nothing
raises. The recordings unchanged keep every invariant. Fixed seed, bounded
time.
"""
import contextlib
import copy
import io
import json
import os
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import hopscope
from hopscope import cli
from hopscope.record.invariants import CROSS_CPU_NS, Problem
from hopscope.record.synth import write_synthetic

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.path.join(ROOT, "tests"))
from rawrecord import COUNTERS, END, RECORD_KINDS, STAGE, STATUS, Raw, write  # noqa: E402

SEED = 29
PER_CLASS = 10  # mutations per class and source file
TIME_BUDGET_S = 30
T4_UNSEEN, IPV6 = 0x80, 0x01


class Parts:
    """A recording's parts (rawrecord), copied for each mutation."""

    def __init__(self, path):
        raw = Raw(path)
        self.header, self.chunks = raw.header, raw.chunks

    def copy(self):
        c = copy.copy(self)
        c.header = copy.deepcopy(self.header)
        c.chunks = [[k, p.copy() if isinstance(p, np.ndarray) else copy.deepcopy(p)]
                    for k, p in self.chunks]
        return c

    @property
    def records(self):
        return [p for k, p in self.chunks if k in RECORD_KINDS]

    @property
    def end(self):
        return next(p for k, p in self.chunks if k == END)

    def pick(self, rng, where):
        """(a RECORDS chunk, one of its rows where where(chunk) holds), or None"""
        found = [(r, i) for r in self.records for i in np.flatnonzero(where(r))]
        return rng.choice(found) if found else None


def _t(r, stage):
    return r["t"][:, STAGE[stage]]


def _stamped(r, *stages):
    return np.logical_and.reduce([_t(r, s) != 0 for s in stages])


# ---- the classes: each mutates p (a copy) and returns what must be said, or
# None when this file has nothing to mutate that way ----

def time_class(p, rng):
    kind = rng.choice(["high", "before", "after"])
    stage = rng.choice(["t1", "t2", "t3", "t4"])
    got = p.pick(rng, lambda r: _t(r, stage) != 0)
    r, i = got
    if kind == "high":
        _t(r, stage)[i] = (1 << 63) + rng.randrange(1 << 62)
    elif kind == "before":
        _t(r, stage)[i] = p.header["start_monotonic_ns"] - 61 * 10**9 - rng.randrange(10**12)
    else:
        _t(r, stage)[i] = p.end["monotonic_ns"] + 1 + rng.randrange(10**15)
    return "time"


def order_class(p, rng):
    by = CROSS_CPU_NS + 1 + rng.randrange(100_000)
    if rng.random() < 0.5:  # t4 before t3 on every complete record of a chunk
        r = rng.choice(p.records)
        c = (r["status"] == STATUS["complete"]) & _stamped(r, "t3", "t4")
        if not c.any():
            return None
        _t(r, "t4")[c] = _t(r, "t3")[c] - by
    else:
        r, i = p.pick(rng, lambda r: _stamped(r, "t1", "t2"))
        _t(r, "t2")[i] = _t(r, "t1")[i] - by
    return "order"


def status_class(p, rng):
    kind = rng.choice(["t4_0", "t4_unseen", "dropped_t4", "reason", "segs", "ipv6"])
    complete = lambda r: r["status"] == STATUS["complete"]  # noqa: E731
    dropped = lambda r: r["status"] == STATUS["dropped"]  # noqa: E731
    if kind in ("dropped_t4", "reason"):
        got = p.pick(rng, dropped)
        if got is None or (kind == "reason" and not p.header.get("drop_reasons")):
            return None
        r, i = got
        if kind == "dropped_t4":
            _t(r, "t4")[i] = _t(r, "t1")[i] + 5000
            r["drop_stage"][i] = STAGE["t4"]
        else:
            r["drop_reason"][i] = rng.choice([0, 1, 99999])
        return "status"
    r, i = p.pick(rng, lambda r: complete(r) & ((r["flags"] & IPV6) == 0)
                  & (r["flow"] != 0xFFFFFFFF))
    if kind == "t4_0":
        _t(r, "t4")[i] = 0
    elif kind == "t4_unseen":
        r["flags"][i] |= T4_UNSEEN
        p.end["userspace"]["t4_unseen"] = p.end["userspace"].get("t4_unseen", 0) + 1
    elif kind == "segs":
        r["segs"][i] = rng.choice([0x10000, 0xFFFFFFFF])
    else:
        r["flags"][i] |= IPV6
    return "status"


def header_class(p, rng):
    kind = rng.choice(["stage", "ifindex", "version", "record_size"])
    if kind == "stage":
        # a stage every record of the file has: every 16th record shows it
        have = [s for s in p.header["stages"]
                if all((_t(r, s) != 0).all() for r in p.records)]
        gone = rng.choice(have)
        p.header["stages"] = [s for s in p.header["stages"] if s != gone]
        p.header["stages"] += ["t1", "t2", "t3", "t4"] * (gone in ("t1", "t2", "t3", "t4"))
        if gone in ("t1", "t2", "t3", "t4"):
            return None  # the core four are columns whatever stages says
    elif kind == "ifindex":
        iface = rng.choice([i for i in p.header["interfaces"] if i["role"] == "in"])
        if not any((r["in_ifindex"] == iface["ifindex"]).any() for r in p.records):
            return None
        iface["ifindex"] += 100 + rng.randrange(1000)
    elif kind == "version":
        p.header["version"] = rng.choice([1, 3, 7]) if p.header.get("version") == 2 else 2
    else:
        p.header["record_size"] = rng.choice([128, 136, 152])
    return "header"


def counts_class(p, rng):
    user, k = p.end["userspace"], p.end["counters"]
    what = rng.choice(["by_status", "snapshot", "flows", "t4_unseen", "inflight", "kernel"])
    n = rng.choice([1, 2, 1000, 2**64 - 1])
    if what == "snapshot":  # a COUNTERS chunk counts the records before it
        user = rng.choice([c for kind, c in p.chunks if kind == COUNTERS])["userspace"]
    if what in ("by_status", "snapshot"):
        status = rng.choice(sorted(user["records_by_status"]))
        old = user["records_by_status"][status]
        user["records_by_status"][status] = (old + n) % 2**64
    elif what == "flows":
        user["flows"] = (user["flows"] + n) % 2**64
    elif what == "t4_unseen":
        user["t4_unseen"] = (user.get("t4_unseen", 0) + n) % 2**64
    elif what == "inflight":
        user["inflight_at_stop"] = (user.get("inflight_at_stop", 0) + n) % 2**64
    else:
        name = rng.choice(["complete", "dropped", "evicted", "other_out"])
        k[name] = (k[name] + n) % 2**64
    return "counts"


def chunks_class(p, rng):
    at = [j for j, (kind, _) in enumerate(p.chunks) if kind in RECORD_KINDS]
    j = rng.choice(at)
    if rng.random() < 0.5:  # repeated, anywhere after itself
        p.chunks.insert(rng.randrange(j + 1, len(p.chunks)),
                        [p.chunks[j][0], p.chunks[j][1].copy()])
        return "chunks"
    # left out, END made to agree on records_written: its other counts do not
    gone = p.chunks.pop(at[-1])[1]
    p.end["userspace"]["records_written"] -= len(gone)
    return "counts"


CLASSES = (time_class, order_class, status_class, header_class, counts_class, chunks_class)


def odd_json(p, rng):
    """Valid JSON no reader expects: read, with a note; never a problem."""
    if rng.random() < 0.5:
        iface = rng.choice(p.header["interfaces"])
        iface["name"] += rng.choice(["\ud800", "\udfff", "\udc80x"])
        p.header["hostname"] = "h\ud801"
        return "escaped lone surrogates"
    levels = rng.randrange(65, 3000)
    deep = "[" * levels + "1" + "]" * levels
    p.header = json.dumps(p.header)[:-1] + f', "unknown_{rng.randrange(100)}": {{"a": {deep}}}}}'
    return "levels deep"


def _sources(tmp):
    s = write_synthetic(tmp / "synthetic.hsr", 6000, seed=3, stages=["t0", "t_tceg"],
                        chunk_records=1000, inflight=40, drop_fraction=0.05, columns=True)
    return [Parts(ROOT / "tests" / "data" / "single.hsr"),
            Parts(ROOT / "tests" / "data" / "competitive.hsr"), Parts(s.path)]


def _verify(path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["verify", str(path)])
    return rc, err.getvalue()


def _said(path):
    """(problems of the file's invariants, or None when refused; warning text)"""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            df = hopscope.load(path)
        except hopscope.RecordFileError as e:
            return None, str(e)
    return ([p for p in df.attrs["problems"] if isinstance(p, Problem)],
            " ".join(str(x.message) for x in w))


def test_checksum_valid_mutations(tmp_path):
    t0 = time.monotonic()
    rng = random.Random(SEED)
    ran = {c.__name__: 0 for c in CLASSES}
    for k, src in enumerate(_sources(tmp_path)):
        path = tmp_path / f"src{k}.hsr"
        write(path, src.header, src.chunks)
        assert _said(path)[0] == [] and _verify(path)[0] == 0
        for cls in CLASSES:
            for n in range(PER_CLASS):
                p = src.copy()
                kind = cls(p, rng)
                if kind is None:
                    continue
                ran[cls.__name__] += 1
                path = tmp_path / f"{k}-{cls.__name__}-{n}.hsr"
                write(path, p.header, p.chunks)
                problems, text = _said(path)
                name = f"{path.name}"
                assert problems is None or kind in {q.kind for q in problems}, \
                    f"{name}: expected a {kind} problem, got {text}"
                rc, err = _verify(path)
                assert rc == 1 and err.strip(), f"{name}: verify passed it\n{err}"
                assert "Traceback" not in err and "internal error" not in err, err
                if problems:
                    assert str(next(q for q in problems if q.kind == kind)) in err
        for n in range(PER_CLASS):
            p = src.copy()
            note = odd_json(p, rng)
            path = tmp_path / f"{k}-json-{n}.hsr"
            write(path, p.header, p.chunks)
            problems, text = _said(path)
            assert problems == [] and note in text, (path.name, text)
            rc, err = _verify(path)
            assert rc == 0 and note in err, err
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                assert cli.main(["describe", str(path)]) == 0
    assert all(ran.values()), ran
    elapsed = time.monotonic() - t0
    assert elapsed < TIME_BUDGET_S, f"took {elapsed:.0f} s"


def test_every_kind_of_problem_is_fuzzed():
    """A kind of problem the loader learns is a class here too."""
    from hopscope.record.invariants import RULES
    assert {kind for kind, _ in RULES.values()} | {"order", "counts", "chunks"} == \
        {cls.__name__.removesuffix("_class") for cls in CLASSES}
