"""NAT's translations in a record file (docs/record-format.md, FLOWS): a
recording of the C recorder with translation items planted by the tests'
own writer (tests/rawrecord.py), loaded and described. A record gets its
flow's translated tuple when it reached t3, and none where the file cannot
tell which tuple it had."""
import contextlib
import io
import ipaddress
import os
import struct
import sys
import warnings
from pathlib import Path

import pytest

import hopscope
from hopscope import cli
from hopscope.report.describe import describe

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.path.join(ROOT, "tests"))
from rawrecord import END, FLOWS, Raw, write  # noqa: E402

DATA = ROOT / "tests" / "data"
NAT, NAT_CHANGED = 1, 2  # hs_flow.kind
UDP_FLOW = 1  # single.hsr: 198.18.1.2:42152 > 198.18.3.2:10001, 6000 records, all past t3
COLS = ["nat_src", "nat_sport", "nat_dst", "nat_dport"]


def item(flow, kind, src, sport, dst, dport, packets, proto=17):
    """one struct hs_flow of a translation, as docs/record-format.md lays it out"""
    family = ipaddress.ip_address(src).version
    addr = lambda a: ipaddress.ip_address(a).packed.ljust(16, b"\0")
    return struct.pack("<IBBHHH16s16sI", flow, family, proto, kind, sport, dport, addr(src),
                       addr(dst), packets)


def planted(tmp_path, items, recorded=True, nat=None, nat_full=0):
    """single.hsr with a FLOWS chunk of these items before its END, the
    header saying whether the backend records translations, and the END's
    nat counters (nat: the packets NAT changed; default the items' last counts)"""
    raw = Raw(DATA / "single.hsr")
    header = dict(raw.header, nat_translations=recorded)
    chunks = [c for c in raw.chunks if c[0] != END]
    end = raw.trailer
    if items:
        chunks.append([FLOWS, b"".join(items)])
    last = {}
    for it in items:
        last[struct.unpack_from("<I", it)[0]] = struct.unpack_from("<I", it, 44)[0]
    end["counters"].update(nat=sum(last.values()) + nat_full if nat is None else nat,
                           nat_new=len(last), nat_changed=0, nat_full=nat_full)
    chunks.append([END, end])
    path = tmp_path / "nat.hsr"
    write(path, header, chunks)
    with warnings.catch_warnings(record=True):  # its problems: df.attrs["problems"]
        warnings.simplefilter("always")
        return hopscope.load(str(path))


def nat_lines(df):
    return [text for label, text in describe(df) if label == "nat"]


def test_a_translated_flow_gives_its_records_the_tuple(tmp_path):
    df = planted(tmp_path, [item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001, 6000)])
    udp = df[df.flow == UDP_FLOW]
    assert len(udp) == 6000 and (udp.t3 > 0).all()
    assert set(map(tuple, udp[COLS].astype(object).to_numpy())) == \
        {("198.18.3.1", 5000, "198.18.3.2", 10001)}
    # every other record: none (other flows untranslated)
    assert df[df.flow != UDP_FLOW][COLS].isna().all().all()
    assert str(df.nat_sport.dtype) == "UInt16" and str(df.nat_src.dtype) == "category"
    assert df.attrs["problems"] == []
    assert nat_lines(df) == ["198.18.1.2:42152 > 198.18.3.2:10001 -> "
                             "198.18.3.1:5000 > 198.18.3.2:10001: 6000 packets"]


def test_a_later_item_carries_the_final_count(tmp_path):
    first = item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001, 10)
    df = planted(tmp_path, [first, first[:44] + struct.pack("<I", 6000)])
    assert df.nat_src.notna().sum() == 6000 and df.attrs["problems"] == []
    assert nat_lines(df)[0].endswith(": 6000 packets")


@pytest.mark.parametrize("how", ["kind", "two tuples"])
def test_a_changed_translation_gives_no_tuple_and_says_so(tmp_path, how):
    a = item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001, 100)
    b = item(UDP_FLOW, NAT_CHANGED if how == "kind" else NAT, "198.18.3.1", 5001,
             "198.18.3.2", 10001, 6000)
    df = planted(tmp_path, [b] if how == "kind" else [a, b])
    assert df[COLS].isna().all().all()
    [line] = nat_lines(df)
    assert line.startswith("198.18.1.2:42152 > 198.18.3.2:10001 -> 198.18.3.1:5001 > "
                           "198.18.3.2:10001: 6000 packets; CHANGED during the run")
    assert df.attrs["nat"]["flows"][0]["changed"]


def test_more_records_at_t3_than_translated_gives_none(tmp_path):
    # the kernel saw 5990 of the flow's 6000 packets translated (a rule added
    # while the flow's conntrack entry lived): which ones is not in the file,
    # and nothing is wrong with the file
    df = planted(tmp_path, [item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001,
                                 5990)])
    assert df[COLS].isna().all().all()
    assert "6000 records reached t3, more than NAT changed" in nat_lines(df)[0]
    assert df.attrs["nat"]["flows"][0]["mixed"] and df.attrs["problems"] == []


def test_counters_that_disagree_with_the_translations_are_a_problem(tmp_path):
    df = planted(tmp_path, [item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001,
                                 6000)], nat=6001)
    assert df.attrs["problems"] == ["the translations count 6000 packets and nat_full 0, "
                                    "the kernel's nat counter 6001"]
    assert df.attrs["problems"][0].kind == "nat"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["verify", df.attrs["path"]]) == 1
    assert "the kernel's nat counter 6001" in err.getvalue()
    # a full map: the packets it refused are in nat, not in a translation
    df = planted(tmp_path, [item(UDP_FLOW, NAT, "198.18.3.1", 5000, "198.18.3.2", 10001,
                                 6000)], nat_full=7)
    assert df.attrs["problems"] == []


def test_ports_only_where_the_kernel_compares_them(tmp_path):
    # an ICMP flow's translation: addresses alone
    df = planted(tmp_path, [item(2, NAT, "fe80::1", 0, "ff02::16", 0, 0, proto=58)])
    assert nat_lines(df) == ["fe80::c6ff:fe12:102 > ff02::16 -> fe80::1 > ff02::16: 0 packets"]
    # its records never reached t3 (the router took them): none
    assert df[COLS].isna().all().all()


def test_a_backend_that_records_none_says_so(tmp_path):
    df = planted(tmp_path, [], recorded=False)
    assert nat_lines(df) == ["not recorded: this file's backend does not read NAT's "
                             "translations (columns nat_* are empty)"]
    assert df[COLS].isna().all().all()


def test_a_file_from_before_translations_loads_without_them():
    df = hopscope.load(str(DATA / "single.hsr"))
    assert df.attrs["nat"] == {"recorded": None, "flows": [], "unknown_ids": 0}
    assert df[COLS].isna().all().all() and nat_lines(df) == []


@pytest.mark.parametrize("value, kind", [("yes", "a string"), (1, "an integer")])
def test_a_header_whose_nat_translations_is_not_a_boolean_is_refused(tmp_path, value, kind):
    with pytest.raises(hopscope.RecordFileError, match=f"'nat_translations' is {kind}, "
                                                       "expected true or false"):
        planted(tmp_path, [], recorded=value)
