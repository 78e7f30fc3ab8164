"""hopscope.load: every column against what synth.py wrote, and every way a file
can be damaged: truncated, killed, corrupt, not a record file at all."""
import ipaddress
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hopscope
from hopscope.record import format as fmt
from hopscope.record import load as loader
from hopscope.record.load import _interface_lut
from hopscope.record.synth import recompute_checksums, write_synthetic
from hopscope.report.describe import describe

N = 20_000
CHUNK = 4096


@pytest.fixture
def quiet():
    """Any warning is a test failure inside this fixture's tests."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _synth(tmp_path, name="run.hsr", **kw):
    kw.setdefault("chunk_records", CHUNK)
    return write_synthetic(tmp_path / name, kw.pop("n", N), **kw)


def _address(family, raw):
    raw = bytes(raw)
    return str(ipaddress.ip_address(raw if family == 6 else raw[:4]))


def _patch(path, offset, data, checksums=True):
    """Change bytes of a file; by default its CRCs are made to match again, so
    the change reads as written (the checks below are not CRC checks)."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
    if checksums:
        recompute_checksums(path)


def _replace_header_json(path, text):
    """Overwrite the header JSON, padded to the length the file header gives."""
    head = np.frombuffer(Path(path).read_bytes()[:fmt.FILE_HEADER_SIZE], fmt.FILE_HEADER_DTYPE)
    _patch(path, fmt.FILE_HEADER_SIZE, text.ljust(int(head[0]["header_bytes"])))


def _records_before(s, chunk_index):
    """Records in the RECORDS chunks that come before chunk chunk_index."""
    return sum(min(CHUNK, len(s.records) - CHUNK * i)
               for i, t in enumerate(t for t in s.chunk_types[:chunk_index]
                                     if t == fmt.CHUNK_RECORDS))


def _nth_chunk(s, ctype, nth):
    return [i for i, t in enumerate(s.chunk_types) if t == ctype][nth]


# ---- a whole file ----

def test_columns_equal_what_was_written(tmp_path, quiet):
    s = _synth(tmp_path)
    r = s.records
    df = hopscope.load(s.path)
    assert len(df) == N
    for t in ("t1", "t2", "t3", "t4", "seq", "key", "drop_reason", "flags", "tos", "proto",
              "sport", "dport", "flow", "in_ifindex", "out_ifindex", "cpu_in", "cpu_out",
              "ip_len"):
        np.testing.assert_array_equal(df[t].to_numpy(), r[t], err_msg=t)
    assert "t0" not in df and "d_rxq" not in df and "d_qdisc" not in df
    assert list(df["status"]) == [fmt.STATUS_NAMES[v - 1] for v in r["status"]]
    dropped = r["status"] == fmt.STATUS["dropped"]
    assert dropped.sum() > 0
    stage = df["drop_stage"]
    assert stage[~dropped].isna().all()
    assert list(stage[dropped]) == [fmt.STAGE_NAMES[v] for v in r["drop_stage"][dropped]]
    np.testing.assert_array_equal(df["dscp"], r["tos"] >> 2)
    np.testing.assert_array_equal(df["family"], np.where(r["flags"] & fmt.F_IPV6, 6, 4))
    assert (df["family"] == 6).any()
    assert list(df["src"]) == [_address(f, a) for f, a in zip(df["family"], r["saddr"])]
    assert list(df["dst"]) == [_address(f, a) for f, a in zip(df["family"], r["daddr"])]
    names = {i["ifindex"]: i["name"] for i in s.header["interfaces"]}
    assert list(df["in_if"]) == [names[i] for i in r["in_ifindex"]]
    out = df["out_if"]
    assert out[r["out_ifindex"] == 0].isna().all()
    assert set(out.dropna()) == {"r-rx"}
    assert set(df["tos"]) == {4, 5}


def test_a_file_of_the_older_record_layout(quiet):
    """tests/data's recordings have 144-byte records, from before the tail:
    read with the tail's fields as not seen, the rest as written."""
    data = Path(__file__).resolve().parents[1] / "data" / "single.hsr"
    with open(data, "rb") as f:
        assert int.from_bytes(f.read(16)[12:16], "little") == fmt.h.RECORD_SIZE_V1
    df = hopscope.load(data)
    assert len(df) > 1000 and (df["status"] == "complete").sum() > 1000
    assert (df["out_segs"] == 1).all() and (df["segs"] == 1).all()
    for c in ("t4_span_ns", "tun_in_ns", "tun_out_ns"):
        assert (df[c] == 0).all(), c
    assert (df["t4"] > df["t1"])[df["status"] == "complete"].all()


def test_dtypes(tmp_path, quiet):
    df = hopscope.load(_synth(tmp_path, n=100).path)
    expected = {
        "t1": "int64", "t2": "int64", "t3": "int64", "t4": "int64",
        "d_iq": "float64", "d_p": "float64", "d_oq": "float64", "transit": "float64",
        "drop_reason": "uint32", "flags": "uint8", "tos": "uint8", "dscp": "uint8",
        "proto": "uint8", "family": "uint8", "sport": "uint16", "dport": "uint16",
        "flow": "uint32", "in_ifindex": "uint32", "out_ifindex": "uint32",
        "cpu_in": "uint16", "cpu_out": "uint16", "ip_len": "uint16", "key": "uint32",
        "seq": "uint64", "segs": "uint32", "out_segs": "uint16", "t4_span_ns": "uint32",
        "tun_in_ns": "uint32", "tun_out_ns": "uint32",
    }
    assert {c: str(df[c].dtype) for c in expected} == expected
    for c in ("status", "drop_stage", "src", "dst", "in_if", "out_if"):
        assert isinstance(df[c].dtype, pd.CategoricalDtype), c
    assert list(df["status"].cat.categories) == list(fmt.STATUS_NAMES)
    assert list(df["drop_stage"].cat.categories) == list(fmt.STAGE_NAMES)


def test_delays_exact_and_nan_where_a_stage_is_missing(tmp_path, quiet):
    s = _synth(tmp_path)
    r = s.records
    df = hopscope.load(s.path)
    for name, later, earlier in (("d_iq", "t2", "t1"), ("d_p", "t3", "t2"),
                                 ("d_oq", "t4", "t3"), ("transit", "t4", "t1")):
        seen = (r[later] > 0) & (r[earlier] > 0)
        assert (~seen).any() and seen.any()
        got = df[name].to_numpy()
        np.testing.assert_array_equal(got[seen], (r[later] - r[earlier])[seen], err_msg=name)
        assert np.isnan(got[~seen]).all(), name
        assert (got[seen] > 0).all()


def test_delays_exact_beyond_float_precision_of_the_timestamps(tmp_path, quiet):
    """After 104 days of uptime t no longer fits a float64 exactly; delays still must."""
    big = 2**62
    s = _synth(tmp_path, n=1000, start_mono=big)
    df = hopscope.load(s.path)
    r = s.records
    seen = (r["t3"] > 0) & (r["t2"] > 0)
    assert float(r["t3"][0]) - float(r["t2"][0]) != r["t3"][0] - r["t2"][0]
    np.testing.assert_array_equal(df["d_p"].to_numpy()[seen], (r["t3"] - r["t2"])[seen])
    assert df["t1"].iloc[0] == r["t1"][0] > big


def test_optional_stages_give_their_columns(tmp_path, quiet):
    s = _synth(tmp_path, stages=["t0", "t_tceg"])
    r = s.records
    df = hopscope.load(s.path)
    assert [c for c in df.columns if c.startswith("t")][:6] == \
        ["t0", "t1", "t2", "t3", "t_tceg", "t4"]
    assert "t_tcin" not in df and "t_fwd" not in df
    for name, later, earlier in (("d_rxq", "t1", "t0"), ("d_opath", "t_tceg", "t3"),
                                 ("d_qdisc", "t4", "t_tceg")):
        seen = (r[later] > 0) & (r[earlier] > 0)
        got = df[name].to_numpy()
        np.testing.assert_array_equal(got[seen], (r[later] - r[earlier])[seen])
        assert np.isnan(got[~seen]).all()


def test_attrs(tmp_path, quiet):
    s = _synth(tmp_path)
    df = hopscope.load(s.path)
    a = df.attrs
    assert a["header"] == s.header
    assert a["trailer"]["stop_reason"] == "count"
    assert a["counters"] == a["trailer"]
    assert a["trailer"]["userspace"]["records_written"] == N
    assert a["truncated"] is False
    assert a["path"] == s.path
    assert a["problems"] == []


def test_empty_recording(tmp_path, quiet):
    df = hopscope.load(_synth(tmp_path, n=0).path)
    assert len(df) == 0 and "d_iq" in df and "src" in df
    assert df.attrs["truncated"] is False


def test_verify_passes_on_an_intact_file(tmp_path, quiet):
    df = hopscope.load(_synth(tmp_path).path, verify=True, strict=True)
    assert len(df) == N


def test_header_without_optional_keys(tmp_path, quiet):
    """Only the binary header is required; the JSON may hold nothing but {}."""
    s = _synth(tmp_path, n=500)
    _replace_header_json(s.path, b"{}")
    df = hopscope.load(s.path)
    assert df.attrs["header"] == {}
    assert len(df) == 500 and df["in_if"].isna().all()
    assert df["src"].notna().all()


# ---- damaged files: keep what is whole, say where it stops ----

def test_killed_run_without_end_chunk(tmp_path):
    s = _synth(tmp_path, end=False)
    with pytest.warns(hopscope.RecordFileWarning, match="no END chunk"):
        df = hopscope.load(s.path)
    assert len(df) == N
    assert df.attrs["truncated"] is True
    assert df.attrs["trailer"] is None
    assert df.attrs["counters"]["userspace"]["records_written"] == N  # last snapshot
    with pytest.raises(hopscope.RecordFileError, match="no END chunk"):
        hopscope.load(s.path, strict=True)


def test_truncated_inside_a_records_chunk(tmp_path):
    s = _synth(tmp_path)
    k = _nth_chunk(s, fmt.CHUNK_RECORDS, 2)
    cut = s.chunk_offsets[k] + fmt.CHUNK_HEADER_SIZE + 1000
    size = (tmp_path / "run.hsr").stat().st_size
    s = _synth(tmp_path, truncate_bytes=size - cut)
    with pytest.warns(hopscope.RecordFileWarning) as w:
        df = hopscope.load(s.path)
    msg = str(w[0].message)
    assert f"chunk {k} (RECORDS, {CHUNK} records) at byte {s.chunk_offsets[k]}" in msg
    assert f"bytes 0..{s.chunk_offsets[k]} of {cut}" in msg
    assert len(df) == 2 * CHUNK == _records_before(s, k)
    np.testing.assert_array_equal(df["key"], s.records["key"][:2 * CHUNK])
    assert df.attrs["truncated"] is True and df.attrs["trailer"] is None
    with pytest.raises(hopscope.RecordFileError, match=f"at byte {s.chunk_offsets[k]}"):
        hopscope.load(s.path, strict=True)


def test_truncated_inside_a_chunk_header(tmp_path):
    s = _synth(tmp_path)
    k = _nth_chunk(s, fmt.CHUNK_RECORDS, 3)
    size = (tmp_path / "run.hsr").stat().st_size
    s = _synth(tmp_path, truncate_bytes=size - s.chunk_offsets[k] - 10)
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"10 bytes into the chunk header at byte {s.chunk_offsets[k]}"):
        df = hopscope.load(s.path)
    assert len(df) == 3 * CHUNK


def test_corrupt_chunk_magic(tmp_path):
    probe = _synth(tmp_path)
    k = _nth_chunk(probe, fmt.CHUNK_RECORDS, 1)
    s = _synth(tmp_path, corrupt_chunk=k)
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"no chunk header at byte {s.chunk_offsets[k]}.*damaged"):
        df = hopscope.load(s.path)
    assert len(df) == CHUNK
    assert df.attrs["truncated"] is True
    with pytest.raises(hopscope.RecordFileError):
        hopscope.load(s.path, strict=True)


def test_chunk_size_inconsistent_with_count(tmp_path):
    s = _synth(tmp_path)
    k = _nth_chunk(s, fmt.CHUNK_RECORDS, 2)
    _patch(s.path, s.chunk_offsets[k] + 8, np.uint32(CHUNK + 1).tobytes())  # count
    with pytest.warns(hopscope.RecordFileWarning, match="chunk header damaged"):
        df = hopscope.load(s.path)
    assert len(df) == 2 * CHUNK


def test_crc_checked_by_default(tmp_path):
    """A flipped payload byte is never returned as if whole: the chunk is left
    out, its records counted, the warning names the chunk and its offset."""
    probe = _synth(tmp_path)
    k = _nth_chunk(probe, fmt.CHUNK_RECORDS, 1)
    s = _synth(tmp_path, bad_crc_chunk=k)
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"chunk {k} .* at byte {s.chunk_offsets[k]}: CRC mismatch, chunk "
                            f"left out \\({CHUNK} records dropped\\)"):
        df = hopscope.load(s.path)
    assert len(df) == N - CHUNK  # the bad chunk is left out, the rest kept
    assert df.attrs["dropped_records"] == CHUNK
    np.testing.assert_array_equal(df["key"][:CHUNK], s.records["key"][:CHUNK])
    np.testing.assert_array_equal(df["key"][CHUNK:], s.records["key"][2 * CHUNK:])
    with pytest.raises(hopscope.RecordFileError, match="CRC mismatch"):
        hopscope.load(s.path, strict=True)
    with warnings.catch_warnings():  # the explicit opt-out reads the damaged bytes
        warnings.simplefilter("error")
        assert len(hopscope.load(s.path, verify=False)) == N


def test_header_crc_catches_a_flipped_byte(tmp_path, quiet):
    s = _synth(tmp_path, n=500)
    data = Path(s.path).read_bytes()
    at = data.index(b'"r-s1"')
    _patch(s.path, at + 2, b"/", checksums=False)  # r-s1 -> r/s1: relabels in_if
    with pytest.raises(hopscope.RecordFileError, match="header .*fails its CRC32"):
        hopscope.load(s.path)
    df = hopscope.load(s.path, verify=False)
    assert "r/s1" in list(df["in_if"].cat.categories)


def test_file_header_reserved_bytes_must_be_zero(tmp_path, quiet):
    """The 4 bytes after the header CRC cannot be covered by it: any other value
    than 0 is damage (the fuzz test found a flip there loaded as if whole)."""
    s = _synth(tmp_path, n=100)
    _patch(s.path, 31, b"\x80", checksums=False)
    with pytest.raises(hopscope.RecordFileError, match="bytes 28..31 should be 0"):
        hopscope.load(s.path)
    assert len(hopscope.load(s.path, verify=False)) == 100


def test_version_1_file_reads_with_a_note(tmp_path):
    """Files from before the header CRC: read, with a warning that the header is
    not covered."""
    s = _synth(tmp_path, n=300)
    data = Path(s.path).read_bytes()
    head = np.frombuffer(data[:fmt.FILE_HEADER_SIZE], fmt.FILE_HEADER_DTYPE)[0]
    text = data[fmt.FILE_HEADER_SIZE:fmt.FILE_HEADER_SIZE + int(head["header_bytes"])]
    rest = data[fmt.FILE_HEADER_SIZE + len(text):]
    text = text.replace(f'"version": {fmt.FILE_VERSION}'.encode(),
                        b'"version": 1')  # as version 1 recorders wrote it
    Path(s.path).write_bytes(fmt.file_header(text, version=1) + text + rest)
    with pytest.warns(hopscope.RecordFileWarning, match="version 1: the header .* not covered"):
        df = hopscope.load(s.path)
    assert len(df) == 300 and df.attrs["problems"] == []


def test_version_2_file_of_records_reads_as_it_did(tmp_path):
    """Files from before COLUMNS (version 2, RECORDS chunks of 160-byte
    records) read whole, with nothing to say, and the same as in columns."""
    s = _synth(tmp_path, n=300)
    data = Path(s.path).read_bytes()
    head = np.frombuffer(data[:fmt.FILE_HEADER_SIZE], fmt.FILE_HEADER_DTYPE)[0]
    text = data[fmt.FILE_HEADER_SIZE:fmt.FILE_HEADER_SIZE + int(head["header_bytes"])]
    rest = data[fmt.FILE_HEADER_SIZE + len(text):]
    text = text.replace(f'"version": {fmt.FILE_VERSION}'.encode(), b'"version": 2')
    Path(s.path).write_bytes(fmt.file_header(text, version=2) + text + rest)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = hopscope.load(s.path)
    assert hopscope.RecordFile(s.path).version == 2 and df.attrs["problems"] == []
    columns = hopscope.load(_synth(tmp_path, "c.hsr", n=300, columns=True).path)
    pd.testing.assert_frame_equal(df, columns)


def test_damaged_end_chunk_is_not_called_missing(tmp_path):
    probe = _synth(tmp_path)
    s = _synth(tmp_path, bad_crc_chunk=len(probe.chunk_offsets) - 1)
    with pytest.warns(hopscope.RecordFileWarning) as w:
        df = hopscope.load(s.path, verify=True)
    msg = str(w[0].message)
    assert "(END) at byte" in msg and "CRC mismatch" in msg and "no END chunk" not in msg
    assert len(df) == N and df.attrs["trailer"] is None


def test_bytes_after_end_are_reported(tmp_path):
    s = _synth(tmp_path)
    with open(s.path, "ab") as f:
        f.write(b"\0" * 16)
    with pytest.warns(hopscope.RecordFileWarning, match="16 bytes after the END chunk ignored"):
        df = hopscope.load(s.path)
    assert len(df) == N and df.attrs["truncated"] is False


def test_unknown_chunk_type_is_skipped_and_reported(tmp_path):
    s = _synth(tmp_path)
    k = _nth_chunk(s, fmt.CHUNK_COUNTERS, 0)
    _patch(s.path, s.chunk_offsets[k] + 4, np.uint32(99).tobytes())
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"chunk {k} \\(type 99\\) at byte {s.chunk_offsets[k]}: unknown"):
        df = hopscope.load(s.path)
    assert len(df) == N and df.attrs["truncated"] is False


def test_trailer_count_disagrees_with_the_file(tmp_path):
    s = _synth(tmp_path)
    data = Path(s.path).read_bytes()
    at = data.index(f'"records_written": {N}'.encode(), s.chunk_offsets[-1])  # in END
    _patch(s.path, at, f'"records_written": {N + 9999}'.encode())  # as many digits
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"END chunk says {N + 9999} records were written, "
                            f"the file holds {N}"):
        hopscope.load(s.path)


def test_unknown_status_and_flow_values_are_counted(tmp_path):
    s = _synth(tmp_path, n=100, chunk_records=100)
    first = s.chunk_offsets[s.chunk_types.index(fmt.CHUNK_RECORDS)] + fmt.CHUNK_HEADER_SIZE
    status_at = fmt.RECORD_DTYPE.fields["status"][1]
    flow_at = fmt.RECORD_DTYPE.fields["flow"][1]
    _patch(s.path, first + status_at, bytes([9]))
    _patch(s.path, first + fmt.RECORD_SIZE + status_at, bytes([0]))
    _patch(s.path, first + 2 * fmt.RECORD_SIZE + flow_at, np.uint32(77).tobytes())
    with pytest.warns(hopscope.RecordFileWarning) as w:
        df = hopscope.load(s.path)
    msg = str(w[0].message)
    assert "2 records have a status value this reader does not know" in msg
    assert "1 records name a flow that is not in the FLOWS table" in msg
    assert df["status"][:2].isna().all() and df["status"][2:].notna().all()
    # the address still comes from the record itself
    assert df["src"][2] == _address(4 if not s.records["flags"][2] & 1 else 6,
                                    s.records["saddr"][2])
    with pytest.raises(hopscope.RecordFileError, match="status value"):
        hopscope.load(s.path, strict=True)


def test_segs_counts_the_wire_packets_of_a_merged_record(tmp_path, quiet):
    """segs: 0 in the file (one packet, and every file before the field) reads
    as 1; a merged packet's count as it is."""
    s = _synth(tmp_path, n=100, chunk_records=100)
    first = s.chunk_offsets[s.chunk_types.index(fmt.CHUNK_RECORDS)] + fmt.CHUNK_HEADER_SIZE
    segs_at = fmt.RECORD_DTYPE.fields["segs"][1]
    assert not s.records["segs"].any()
    _patch(s.path, first + segs_at, np.uint32(7).tobytes())
    _patch(s.path, first + 2 * fmt.RECORD_SIZE + segs_at, np.uint32(1).tobytes())
    df = hopscope.load(s.path)
    assert list(df["segs"][:4]) == [7, 1, 1, 1]
    assert df["segs"].sum() == 100 + 6
    complete = df["segs"][(df["status"] == "complete").to_numpy()].sum()
    assert dict(describe(df))["merged"] == (f"1 records are GRO-merged packets; the complete "
                                            f"records hold {complete} wire packets (column segs)")


def test_describe_names_an_input_re_attached_during_the_run(tmp_path, quiet):
    """The header has the XDP mode at the start, END the one each input ended in."""
    df = hopscope.load(_synth(tmp_path, n=100).path)
    iface = next(i for i in df.attrs["header"]["interfaces"] if i["role"] == "in")
    iface["xdp_mode"] = "native"
    def line():
        return next(t for k, t in describe(df) if k == "interface" and
                    t.startswith(iface["name"] + " "))

    df.attrs["trailer"]["xdp_modes"] = {iface["name"]: "native"}
    assert "re-attached" not in line()
    df.attrs["trailer"]["xdp_modes"] = {iface["name"]: "generic"}
    assert "xdp_mode native" in line() and "re-attached in generic XDP during the run" in line()


def test_a_re_created_interface_keeps_its_name(tmp_path, quiet):
    """An interface made again under a new ifindex during the run: records of
    either ifindex are named by it (the trailer's ifaces), and describe
    tells its life."""
    df = hopscope.load(_synth(tmp_path, n=100).path)
    h = df.attrs["header"]
    iface = next(i for i in h["interfaces"] if i["role"] == "out")
    counters = {"ifaces": {iface["name"]: {"state": "up", "ifindexes": [iface["ifindex"], 99],
                                           "gone": 1, "down": 0}}}
    names, lut = _interface_lut(h, counters)
    assert names[lut[99]] == names[lut[iface["ifindex"]]] == iface["name"]
    df.attrs["counters"] = counters
    line = next(t for k, t in describe(df) if k == "interface" and
                t.startswith(iface["name"] + " "))
    assert f"seen gone 1x, down 0x, ifindexes {iface['ifindex']} 99, up at the end" in line


def test_full_flow_table_takes_addresses_from_the_records(tmp_path, quiet):
    s = _synth(tmp_path, max_flows=2, flows_per_sender=40)
    r = s.records
    assert (r["flow"] == fmt.FLOW_NONE).sum() > N / 2
    df = hopscope.load(s.path)
    assert list(df["src"]) == [_address(f, a) for f, a in zip(df["family"], r["saddr"])]
    assert list(df["dst"]) == [_address(f, a) for f, a in zip(df["family"], r["daddr"])]


# ---- not a usable record file at all ----

@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_text("time,delay\n1,2\n"), "not a hopscope record file"),
    (lambda p: p.write_bytes(b""), "empty file"),
    (lambda p: p.write_bytes(b"HOPSCOPE\x01\x00"), "inside the 24-byte file header"),
    (lambda p: _patch(p, 8, np.uint32(fmt.FILE_VERSION + 1).tobytes()),
     f"format version {fmt.FILE_VERSION + 1}"),
    (lambda p: _patch(p, 12, np.uint32(128).tobytes()), "record size 128 bytes"),
    (lambda p: _patch(p, 20, bytes([1, 2, 3, 4])), "big-endian"),
    (lambda p: _patch(p, 20, bytes([9, 9, 9, 9])), "endian mark"),
    (lambda p: _replace_header_json(p, b"not json"), "header JSON is not valid"),
    (lambda p: _replace_header_json(p, b"[1, 2]"), "header JSON is not an object"),
    (lambda p: _replace_header_json(p, b'{"format": "pcap"}'), "format 'pcap'"),
    (lambda p: os.truncate(p, 100), "inside the .*header JSON"),
])
def test_not_a_usable_file(tmp_path, damage, message):
    path = tmp_path / "bad.hsr"
    write_synthetic(path, 100)
    damage(path)
    with pytest.raises(hopscope.RecordFileError, match=message):
        hopscope.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(hopscope.RecordFileError, match="No such file"):
        hopscope.load(tmp_path / "nothing.hsr")


# ---- damage that used to pass silently ----

def test_drop_stage_255_is_counted_not_silently_nan(tmp_path):
    s = _synth(tmp_path, n=2000, chunk_records=2000, drop_fraction=0.05)
    dropped = np.flatnonzero(s.records["status"] == fmt.STATUS["dropped"])
    first = s.chunk_offsets[s.chunk_types.index(fmt.CHUNK_RECORDS)] + fmt.CHUNK_HEADER_SIZE
    at = fmt.RECORD_DTYPE.fields["drop_stage"][1]
    for i in dropped[:3]:
        _patch(s.path, first + int(i) * fmt.RECORD_SIZE + at, bytes([255]))
    with pytest.warns(hopscope.RecordFileWarning,
                      match="3 dropped records have a drop stage this reader does not know"):
        df = hopscope.load(s.path)
    assert df["drop_stage"].iloc[dropped[:3]].isna().all()
    assert df["drop_stage"].iloc[dropped[3:]].notna().all()


def test_unknown_drop_stages_are_counted_over_every_chunk(tmp_path, monkeypatch):
    """Chunks are filled side by side (threads): each one's count adds up."""
    # two threads even where this test runs on one CPU
    monkeypatch.setattr(loader.os, "sched_getaffinity", lambda pid: {0, 1})
    s = _synth(tmp_path, n=2000, chunk_records=500, drop_fraction=0.2)
    starts = [o + fmt.CHUNK_HEADER_SIZE
              for o, t in zip(s.chunk_offsets, s.chunk_types) if t == fmt.CHUNK_RECORDS]
    dropped = np.flatnonzero(s.records["status"] == fmt.STATUS["dropped"])
    # the first dropped record of every chunk
    picked = [int(dropped[dropped >= c * 500][0]) for c in range(len(starts))]
    at = fmt.RECORD_DTYPE.fields["drop_stage"][1]
    for i in picked:
        _patch(s.path, starts[i // 500] + (i % 500) * fmt.RECORD_SIZE + at, bytes([255]))
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"{len(picked)} dropped records have a drop stage this reader"):
        df = hopscope.load(s.path)
    assert len(picked) == 4 and df["drop_stage"].iloc[picked].isna().all()
    assert df["drop_stage"].isna().sum() == (df["status"] != "dropped").sum() + len(picked)


def _chunks(path, s):
    data = Path(path).read_bytes()
    ends = s.chunk_offsets[1:] + [len(data)]
    return data[:s.chunk_offsets[0]], [data[a:b] for a, b in zip(s.chunk_offsets, ends)]


def test_swapped_records_chunks_are_detected(tmp_path):
    s = _synth(tmp_path)
    head, chunks = _chunks(s.path, s)
    i, j = [k for k, t in enumerate(s.chunk_types) if t == fmt.CHUNK_RECORDS][:2]
    chunks[i], chunks[j] = chunks[j], chunks[i]
    Path(s.path).write_bytes(head + b"".join(chunks))
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"chunk {i} .* is numbered {j}: chunks are out of order"):
        hopscope.load(s.path)


def test_killed_file_missing_a_middle_chunk_is_detected(tmp_path):
    """A version 1 file (no chunk numbers): the last snapshot counts more records
    than the file holds before it."""
    s = _synth(tmp_path, end=False)
    head, chunks = _chunks(s.path, s)
    k = _nth_chunk(s, fmt.CHUNK_RECORDS, 1)
    text = head[fmt.FILE_HEADER_SIZE:]
    Path(s.path).write_bytes(fmt.file_header(text, version=1) + text
                             + b"".join(c for n, c in enumerate(chunks) if n != k))
    with pytest.warns(hopscope.RecordFileWarning) as w:
        df = hopscope.load(s.path)
    msg = " ".join(str(x.message) for x in w)
    assert "chunks are missing" in msg and "no END chunk" in msg
    assert len(df) == N - CHUNK


def test_chunk_count_one_too_high_returns_no_garbage_row(tmp_path):
    s = _synth(tmp_path)
    k = _nth_chunk(s, fmt.CHUNK_RECORDS, 1)
    off = s.chunk_offsets[k]
    _patch(s.path, off + 8, np.uint32(CHUNK + 1).tobytes(), checksums=False)
    _patch(s.path, off + 12, np.uint32((CHUNK + 1) * fmt.RECORD_SIZE).tobytes(),
           checksums=False)
    with pytest.warns(hopscope.RecordFileWarning,
                      match=f"chunk {k} .* at byte {off}: no chunk header follows it"):
        df = hopscope.load(s.path)
    assert len(df) == CHUNK  # the chunks before it; no row made of the next chunk's header
    np.testing.assert_array_equal(df["key"], s.records["key"][:CHUNK])


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "run.hsr"
    os.mkfifo(fifo)
    with pytest.raises(hopscope.RecordFileError, match="not a regular file"):
        hopscope.load(fifo)


def test_header_bytes_that_are_not_utf8_do_not_refuse_the_file(tmp_path):
    s = _synth(tmp_path, n=300)
    data = Path(s.path).read_bytes()
    at = data.index(b'"synthetic"')
    _patch(s.path, at + 1, b"\xe9")
    with pytest.warns(hopscope.RecordFileWarning, match="not UTF-8, read as U\\+FFFD"):
        df = hopscope.load(s.path)
    assert len(df) == 300 and "\ufffd" in df.attrs["header"]["tracer_version"]


@pytest.mark.parametrize("change, message", [
    ({"interfaces": "r-s1"}, "'interfaces' is a string, expected a list"),
    ({"interfaces": [{"name": 7, "ifindex": 2}]}, r"interfaces\[0\].name is an integer"),
    ({"stages": {"t1": 1}}, "'stages' is not a list of strings"),
    ({"kernel": ["6.1"]}, "'kernel' is a list, expected an object"),
    ({"cpu": "x86"}, "'cpu' is a string, expected an object"),
    ({"start_realtime_ns": 10 ** 30}, "'start_realtime_ns' is an integer 1000"),
])
def test_wrong_typed_header_is_refused_with_a_message(tmp_path, change, message):
    s = _synth(tmp_path, n=100)
    h = dict(s.header, **change)
    data = Path(s.path).read_bytes()
    rest = data[s.chunk_offsets[0]:]
    text = json.dumps(h).encode()
    text += b" " * (-len(text) % 8)
    Path(s.path).write_bytes(fmt.file_header(text) + text + rest)
    with pytest.raises(hopscope.RecordFileError, match=message):
        hopscope.load(s.path)


def test_records_the_recorder_could_not_store_are_a_problem(tmp_path):
    """An END chunk written after a failed write (disk full) says how many
    records are not in the file: the file is whole, the recording is not."""
    s = _synth(tmp_path, n=1000)
    data = Path(s.path).read_bytes()[:s.chunk_offsets[-1]]
    end = dict(hopscope.load(s.path).attrs["trailer"], stop_reason="error")
    end["userspace"] = dict(end["userspace"], records_not_stored=4321)
    payload = json.dumps(end).encode()
    head = np.zeros(1, fmt.CHUNK_DTYPE)
    head[0] = (fmt.CHUNK_MAGIC, fmt.CHUNK_END, 0, len(payload), 0, len(s.chunk_offsets) - 1)
    Path(s.path).write_bytes(data + head.tobytes() + payload + bytes(-len(payload) % 8))
    recompute_checksums(s.path)
    with pytest.warns(hopscope.RecordFileWarning,
                      match="could not store 4321 records \\(stopped: error\\)"):
        df = hopscope.load(s.path)
    assert len(df) == 1000 and df.attrs["truncated"] is False


@pytest.mark.parametrize("trailer, message", [
    ({"userspace": [1, 2]}, "'userspace' is a list, expected an object"),
    ({"counters": {"xdp_pkts": "many"}}, "counters.xdp_pkts is a string"),
    ([1, 2], "JSON is not an object"),
])
def test_wrong_typed_trailer_with_a_good_crc_is_refused(tmp_path, trailer, message):
    """Not damage (the CRC is right) but a file of another writer: refused, with
    the chunk named; verify=False skips the chunk and keeps the records."""
    s = _synth(tmp_path, n=500)
    data = Path(s.path).read_bytes()[:s.chunk_offsets[-1]]
    payload = json.dumps(trailer).encode()
    head = np.zeros(1, fmt.CHUNK_DTYPE)
    head[0] = (fmt.CHUNK_MAGIC, fmt.CHUNK_END, 0, len(payload), 0, len(s.chunk_offsets) - 1)
    Path(s.path).write_bytes(data + head.tobytes() + payload + bytes(-len(payload) % 8))
    recompute_checksums(s.path)
    with pytest.raises(hopscope.RecordFileError, match=f"\\(END\\) at byte .*{message}"):
        hopscope.load(s.path)
    with pytest.warns(hopscope.RecordFileWarning, match=message):
        df = hopscope.load(s.path, verify=False)
    assert len(df) == 500 and df.attrs["trailer"] is None


def test_describe_says_what_the_recorder_spent(tmp_path, quiet):
    """END's counts of the recorder's own work in one line; a file of an older
    recorder (none of them) has no such line."""
    df = hopscope.load(_synth(tmp_path, n=100).path)
    us = df.attrs["trailer"]["userspace"]
    assert "recorder" not in dict(describe(df))
    us.update(records_written=1000, records_not_stored=0, cpu_ns=2_000_000,
              drain_cpu_wait_ns=1_500_000,
              drain_max_gap_ns=21_300_000, ring_records=65536, ring_peak_waiting=812,
              write_ns=4_100_000, write_max_ns=310_000)
    assert dict(describe(df))["recorder"] == (
        "CPU 2.0 ms (2000 ns a record), waited 1.5 ms for a CPU; drains at most 21.3 ms apart; a ring held 812 of "
        "65536 records at most; write() 4.1 ms, the longest 310 us")
