"""Which router a file recorded: the header's router_id (given or the
recorder's default, hostname/netns), the same rule for files written before
it (record.load.router_id, df.attrs["router_id"]), its types checked as every
header key's, and `describe`'s router line."""
import warnings
from pathlib import Path

import pytest

import hopscope
from hopscope.record.load import router_id
from hopscope.record.synth import write_synthetic
from hopscope.report.describe import describe
from rawrecord import Raw, write

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return hopscope.load(str(path))


def _rewritten(tmp_path, change, source=None):
    """source (default: a synthetic file) with its header changed by change(header)."""
    raw = Raw(source or write_synthetic(tmp_path / "synth.hsr", 300).path)
    change(raw.header)
    path = tmp_path / "run.hsr"
    write(path, raw.header, raw.chunks)
    return path


@pytest.mark.parametrize("header, want", [
    ({"router_id": "edge-1", "hostname": "box", "netns": {"name": "r1"}}, "edge-1"),
    ({"hostname": "box", "netns": {"name": "r1", "inode": 5}}, "box/r1"),
    ({"hostname": "box", "netns": {"name": None, "inode": 5}}, "box"),
    ({"hostname": "box"}, "box"),
    ({"router_id": None, "hostname": "box", "netns": {"name": ""}}, "box"),
])
def test_router_id_rule(header, want):
    assert router_id(header) == want


def test_synthetic_files_carry_a_router_id(tmp_path):
    s = write_synthetic(tmp_path / "a.hsr", 200)
    df = _load(s.path)
    assert df.attrs["router_id"] == "synthetic/router"  # the default: hostname/netns
    assert df.attrs["header"]["router_id_given"] is False
    s = write_synthetic(tmp_path / "b.hsr", 200, router_id="core-2", boot_id="other-boot")
    df = _load(s.path)
    assert df.attrs["router_id"] == "core-2" and df.attrs["header"]["router_id_given"] is True
    assert df.attrs["clock"]["boot_id"] == "other-boot"
    assert dict(describe(df))["router"] == \
        "core-2 (given), hostname synthetic, netns router"


def test_a_file_before_router_id_is_named_by_hostname_and_netns(tmp_path):
    """single.hsr was recorded before router_id: hostname vm, netns hsnb-router."""
    df = _load(DATA / "single.hsr")
    assert "router_id" not in df.attrs["header"]
    assert df.attrs["router_id"] == "vm/hsnb-router"
    assert dict(describe(df))["router"] == ("vm/hsnb-router (from hostname and netns: a file "
                                            "before router_id), hostname vm, netns hsnb-router")
    # recorded in the recorder's own namespace: the hostname alone
    path = _rewritten(tmp_path, lambda h: h["netns"].update(name=None), DATA / "single.hsr")
    df = _load(path)
    assert df.attrs["router_id"] == "vm"
    assert dict(describe(df))["router"].endswith("hostname vm, the recorder's own netns")


@pytest.mark.parametrize("key, value, message", [
    ("router_id", 5, "'router_id' is an integer, expected a string"),
    ("router_id", ["r1"], "'router_id' is a list, expected a string"),
    ("router_id_given", "yes", "'router_id_given' is a string, expected true or false"),
    ("router_id_given", 1, "'router_id_given' is an integer, expected true or false"),
])
def test_a_router_id_of_the_wrong_type_is_refused(tmp_path, key, value, message):
    path = _rewritten(tmp_path, lambda h: h.update({key: value}))
    with pytest.raises(hopscope.RecordFileError, match=message):
        hopscope.load(str(path))
