"""The JSON a record file carries, however odd, read without a crash: lone
surrogates, deep nesting, a header of megabytes (docs/record-format.md,
"Header JSON")."""
import contextlib
import copy
import io
import json
import time
import warnings
from pathlib import Path

import pytest

import hopscope
from hopscope import cli
from hopscope.record import format as fmt
from hopscope.record.synth import recompute_checksums, write_synthetic


def _with_header(tmp_path, change, n=2000, name="run.hsr"):
    """A synthetic file whose header JSON is its own, changed by change(text)."""
    s = write_synthetic(tmp_path / name, n, chunk_records=500)
    data = Path(s.path).read_bytes()
    text = change(json.dumps(s.header)).encode()
    text += b" " * (-len(text) % 8)
    Path(s.path).write_bytes(fmt.file_header(text) + text + data[s.chunk_offsets[0]:])
    return s


def _with_end(s, change):
    """The file s with its END chunk's JSON text changed by change(text)."""
    data = Path(s.path).read_bytes()
    at = s.chunk_offsets[-1]
    end = json.loads(data[at + fmt.CHUNK_HEADER_SIZE:].rstrip(b"\0"))
    payload = change(json.dumps(end)).encode()
    head = bytearray(data[at:at + fmt.CHUNK_HEADER_SIZE])
    head[12:16] = len(payload).to_bytes(4, "little")
    Path(s.path).write_bytes(data[:at] + bytes(head) + payload + bytes(-len(payload) % 8))
    recompute_checksums(s.path)


def _cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(args))
    return rc, out.getvalue(), err.getvalue()


def test_a_lone_surrogate_in_an_interface_name_is_read_as_u_fffd(tmp_path):
    s = _with_header(tmp_path, lambda t: t.replace('"r-s1"', '"r-s1\\ud800"'))
    with pytest.warns(hopscope.RecordFileWarning, match="1 strings with escaped lone surrogates"):
        df = hopscope.load(s.path)
    assert "r-s1\ufffd" in list(df["in_if"].cat.categories)
    assert df["in_if"].notna().all()
    rc, out, err = _cli("verify", s.path)
    assert rc == 0 and "note: header JSON holds 1 strings" in err
    for args in (["describe", s.path], ["describe", "--json", s.path]):
        rc, out, err = _cli(*args)
        assert rc == 0 and "internal error" not in err, err
        out.encode()  # printable


@pytest.mark.parametrize("where", ["hostname", "stop_reason", "key"])
def test_lone_surrogates_in_any_string_or_key_do_not_crash_the_commands(tmp_path, where):
    if where == "hostname":
        s = _with_header(tmp_path, lambda t: t.replace('"hostname": "synthetic"',
                                                       '"hostname": "\\udc80x\\ud800"'))
    else:
        s = write_synthetic(tmp_path / "run.hsr", 500)
        _with_end(s, (lambda t: t.replace('"stop_reason": "count"',
                                          '"stop_reason": "\\udfff"')) if where == "stop_reason"
                  else (lambda t: t.replace('"counters": {', '"counters\\ud801": {"a": 1}, '
                                                              '"counters": {')))
    with pytest.warns(hopscope.RecordFileWarning, match="escaped lone surrogates"):
        hopscope.load(s.path)
    for args in (["verify", s.path], ["describe", s.path], ["describe", "--json", s.path],
                 ["export", s.path, "--parquet", str(tmp_path / "o.parquet")]):
        rc, out, err = _cli(*args)
        assert rc == 0 and "internal error" not in err and "Traceback" not in err, (args, err)


def _nested(levels, inner):
    for _ in range(levels):
        inner = [inner]
    return inner


@pytest.mark.parametrize("levels", [65, 500, 990, 100_000])
def test_deep_nesting_under_an_unknown_key_is_cut_with_a_message(tmp_path, levels):
    deep = "[" * levels + "1" + "]" * levels
    s = _with_header(tmp_path, lambda t: t[:-1] + f', "extra": {{"x": {deep}}}}}')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        df = hopscope.load(s.path)
    msg = " ".join(str(x.message) for x in w)
    assert "header JSON nests containers more than 64 levels deep (1 places, the first at " \
        "byte" in msg
    assert df.attrs["header"]["extra"]["x"] == _nested(62, None)
    assert df.attrs["problems"] == []
    df2 = df[df["status"] == "complete"]  # pandas copies attrs: no RecursionError
    assert len(df2) and json.dumps(df.attrs["header"])
    assert _cli("verify", s.path)[0] == 0
    assert _cli("describe", s.path)[0] == 0


def test_nesting_within_the_limit_is_kept(tmp_path, recwarn):
    deep = "[" * 60 + "1" + "]" * 60
    s = _with_header(tmp_path, lambda t: t[:-1] + f', "extra": {deep}}}')
    assert hopscope.load(s.path).attrs["header"]["extra"] == _nested(60, 1)
    assert not [w for w in recwarn if issubclass(w.category, hopscope.RecordFileWarning)]


def test_deep_nesting_in_a_key_readers_use_is_refused(tmp_path):
    deep = "[" * 100 + "]" * 100
    s = _with_header(tmp_path, lambda t: t.replace('"interfaces": [', f'"interfaces": [{deep}, '))
    with pytest.raises(hopscope.RecordFileError, match=r"interfaces\[0\] is a list"):
        hopscope.load(s.path)
    assert _cli("verify", s.path)[0] == 1


def test_brackets_and_escapes_inside_strings_are_not_nesting(tmp_path, recwarn):
    text = '[[[[' * 40 + '\\\\' + '\\"' + '{{' * 40
    s = _with_header(tmp_path, lambda t: t[:-1] + f', "extra": "{text}"}}')
    assert hopscope.load(s.path).attrs["header"]["extra"] == json.loads(f'"{text}"')
    assert not [w for w in recwarn if issubclass(w.category, hopscope.RecordFileWarning)]


def _op_seconds(df, repeat=5):
    t = time.perf_counter()
    for _ in range(repeat):
        df[df["status"] == "complete"]["transit"].add(1).describe()
    return (time.perf_counter() - t) / repeat


def test_a_large_header_keeps_pandas_operations_fast(tmp_path):
    """pandas deep-copies df.attrs into every result: the header, trailer and
    counters are shared instead, so an 8 MB header costs an operation nothing."""
    junk = json.dumps([{"name": f"x{i}", "list": list(range(30))} for i in range(60_000)])
    big = _with_header(tmp_path, lambda t: t[:-1] + f', "extra": {junk}}}', name="big.hsr")
    assert Path(big.path).stat().st_size > 8e6
    small = write_synthetic(tmp_path / "small.hsr", 2000, chunk_records=500)
    big_df, small_df = hopscope.load(big.path), hopscope.load(small.path)
    derived = big_df[big_df["status"] == "complete"]
    assert derived.attrs["header"] is big_df.attrs["header"]
    assert copy.deepcopy(big_df.attrs)["header"] is big_df.attrs["header"]
    assert derived.attrs["header"]["interfaces"] == big.header["interfaces"]
    _op_seconds(small_df)
    # a deep copy of this header alone takes about half a second
    assert _op_seconds(big_df) < 5 * _op_seconds(small_df) + 0.05
