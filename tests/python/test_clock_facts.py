"""Clock honesty in the loader and `describe`: the cross_cpu flag and count, the
header's clock facts (unknown when absent or of the wrong type) and the
problems a doubtful clock gives. Files from synth.py, patched."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import hopscope
from hopscope.record import format as fmt
from hopscope.record.load import UNKNOWN
from hopscope.record.synth import recompute_checksums, write_synthetic
from hopscope.report.describe import describe

CLOCK = {"clocksource": "tsc", "available_clocksources": ["tsc", "kvm-clock"],
         "constant_tsc": True, "nonstop_tsc": True, "stamp_clock": "CLOCK_MONOTONIC",
         "stamp_read": "bpf_ktime_get_ns", "resolution_ns": 1, "user_read_cost_ns": 20,
         "user_read_cost_reads": 10000, "boot_id": "0b3e6c1a-8d1e-4f0e-9a55-2f1c3b7d9e01",
         "realtime_sync": {"synced": False, "maxerror_ns": 16_000_000_000,
                           "esterror_ns": 16_000_000_000, "status": 0x40, "tai_offset_s": 0},
         "mono_to_realtime_err_ns": 45}


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the patched files must read as whole
        return hopscope.load(path)


def _records_views(data, s):
    """Writable views of every RECORDS chunk's records in data (the file's bytes)."""
    views = []
    for off, kind in zip(s.chunk_offsets, s.chunk_types):
        if kind == fmt.CHUNK_RECORDS:
            count = int(np.frombuffer(data, fmt.CHUNK_DTYPE, 1, off)[0]["count"])
            views.append(np.frombuffer(data, fmt.RECORD_DTYPE, count,
                                       off + fmt.CHUNK_HEADER_SIZE))
    return views


def _with_header(tmp_path, change, machine="x86_64"):
    """A synthetic file whose header JSON is changed by change(header)."""
    s = write_synthetic(tmp_path / "run.hsr", 500)
    h = dict(s.header, kernel=dict(s.header["kernel"], machine=machine))
    change(h)
    data = bytearray(Path(s.path).read_bytes())
    head = np.frombuffer(bytes(data[:fmt.FILE_HEADER_SIZE]), fmt.FILE_HEADER_DTYPE)[0]
    text = json.dumps(h).encode()
    assert len(text) <= head["header_bytes"]
    data[fmt.FILE_HEADER_SIZE:fmt.FILE_HEADER_SIZE + head["header_bytes"]] = \
        text.ljust(head["header_bytes"])
    Path(s.path).write_bytes(data)
    recompute_checksums(s.path)
    return s.path


def test_cross_cpu_flags_complete_records_on_two_cpus(tmp_path):
    s = write_synthetic(tmp_path / "run.hsr", 20_000, chunk_records=4096)
    data = bytearray(Path(s.path).read_bytes())
    want = []
    for recs in _records_views(data, s):
        complete = recs["status"] == fmt.STATUS["complete"]
        move = complete & (np.arange(len(recs)) % 7 == 3)
        recs["cpu_out"][move] = recs["cpu_in"][move] ^ 1
        # a dropped record on another CPU is not a transit: never flagged
        dropped = np.flatnonzero(recs["status"] == fmt.STATUS["dropped"])
        recs["cpu_out"][dropped] = recs["cpu_in"][dropped] + 1
        want.append(complete & (recs["cpu_in"] != recs["cpu_out"]))
    want = np.concatenate(want)
    Path(s.path).write_bytes(data)
    recompute_checksums(s.path)

    df = _load(s.path)
    assert df["cross_cpu"].dtype == bool
    assert 2000 < want.sum() < 4000
    assert (df["cross_cpu"].to_numpy() == want).all()
    assert df.attrs["cross_cpu"] == want.sum()
    # the synthetic inflight records have cpu_out 0: no t4, so not flagged
    assert (df["cpu_in"] != df["cpu_out"])[df.status != "complete"].any()
    assert not df["cross_cpu"][df.status != "complete"].any()
    line = dict(describe(df))["cross-cpu"]
    assert line.startswith(f"{want.sum()} of {(df.status == 'complete').sum()} complete")


def test_same_cpu_file_has_no_cross_cpu(tmp_path):
    df = _load(write_synthetic(tmp_path / "run.hsr", 2000).path)
    assert df.attrs["cross_cpu"] == 0 and not df["cross_cpu"].any()


def test_clock_facts_from_the_header(tmp_path):
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=CLOCK)))
    assert df.attrs["clock"] == CLOCK
    assert df.attrs["clock_problems"] == []
    lines = dict(describe(df))
    assert "clocksource tsc (available: tsc kvm-clock)" in lines["clock"]
    assert "resolution 1 ns" in lines["clock"] and "20 ns (median of 10000)" in lines["clock"]
    assert "boot_id 0b3e6c1a-8d1e-4f0e-9a55-2f1c3b7d9e01" in lines["clock"]
    assert ("realtime NOT synced (maxerror 16000000000 ns, esterror 16000000000 ns, "
            "status 0x40, TAI offset 0 s), monotonic to realtime ± 45 ns") in lines["clock"]
    assert lines["problems"] == "none"


def test_synthetic_files_carry_every_clock_fact(tmp_path):
    s = write_synthetic(tmp_path / "run.hsr", 500, boot_id="b00t")
    clock = _load(s.path).attrs["clock"]
    assert set(clock) == set(CLOCK) and UNKNOWN not in clock.values()
    assert clock["boot_id"] == "b00t"


def test_older_file_clock_facts_unknown(tmp_path):
    """A header of before "clock": only the clocksource; of before boot_id,
    realtime_sync and mono_to_realtime_err_ns: those unknown."""
    df = _load(_with_header(tmp_path, lambda h: h.pop("clock")))
    assert df.attrs["clock"] == dict({k: UNKNOWN for k in CLOCK}, clocksource="tsc")
    path = _with_header(tmp_path, lambda h: (h.pop("clock"), h.pop("clocksource")))
    assert _load(path).attrs["clock"] == {k: UNKNOWN for k in CLOCK}
    new = ("boot_id", "realtime_sync", "mono_to_realtime_err_ns")
    older = {k: v for k, v in CLOCK.items() if k not in new}
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=older)))
    assert df.attrs["clock"] == dict(CLOCK, **{k: UNKNOWN for k in new})
    assert "boot_id unknown; realtime unknown, monotonic to realtime ± unknown" in \
        dict(describe(df))["clock"]


def test_clock_facts_of_wrong_type_or_null_are_unknown(tmp_path):
    bad = {"clocksource": 5, "available_clocksources": ["tsc", 1], "constant_tsc": "yes",
           "nonstop_tsc": None, "stamp_clock": None, "stamp_read": [],
           "resolution_ns": True, "user_read_cost_ns": 1.5, "user_read_cost_reads": "x",
           "boot_id": 7, "realtime_sync": {"synced": 1, "maxerror_ns": 0, "esterror_ns": 0,
                                           "status": 0, "tai_offset_s": 0},
           "mono_to_realtime_err_ns": False}
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=bad)))
    assert df.attrs["clock"] == {k: UNKNOWN for k in CLOCK}
    assert df.attrs["clock_problems"] == []
    assert "resolution unknown" in dict(describe(df))["clock"]
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=[1])))
    assert df.attrs["clock"]["clocksource"] == "tsc"  # the top-level key, as before


@pytest.mark.parametrize("sync", [
    None, [], {}, {"synced": True},
    dict(CLOCK["realtime_sync"], maxerror_ns=True),
    dict(CLOCK["realtime_sync"], status="0x40"),
    dict(CLOCK["realtime_sync"], tai_offset_s=None),
])
def test_realtime_sync_is_whole_or_unknown(tmp_path, sync):
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=dict(CLOCK,
                                                                    realtime_sync=sync))))
    assert df.attrs["clock"] == dict(CLOCK, realtime_sync=UNKNOWN)


@pytest.mark.parametrize("change, machine, problem", [
    ({"clocksource": "hpet"}, "x86_64", "clocksource hpet, not tsc"),
    ({"clocksource": "kvm-clock"}, "x86_64", "clocksource kvm-clock, not tsc"),
    ({"constant_tsc": False}, "x86_64", "the TSC is not constant"),
    ({"nonstop_tsc": False}, "x86_64", "the TSC is not non-stop"),
    # no TSC off x86: its own clocksource is the right one
    ({"clocksource": "arch_sys_counter", "constant_tsc": None, "nonstop_tsc": None},
     "aarch64", None),
])
def test_doubtful_clock_is_a_problem(tmp_path, change, machine, problem):
    df = _load(_with_header(tmp_path, lambda h: h.update(clock=dict(CLOCK, **change)),
                            machine=machine))
    lines = dict(describe(df))
    if problem is None:
        assert df.attrs["clock_problems"] == [] and lines["problems"] == "none"
    else:
        assert len(df.attrs["clock_problems"]) == 1
        assert df.attrs["clock_problems"][0].startswith(problem)
        assert lines["problems"].startswith(problem)
    assert df.attrs["problems"] == []  # the file itself is whole: verify still passes
