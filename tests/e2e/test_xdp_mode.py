"""--xdp-mode auto: native where the driver has it, generic where it
refuses, said on stderr and in the header; native asked and refused is an
error. A bridge (no native XDP) and a veth pair in a namespace of the
test's own ("hst-xd-"); no traffic needed."""
import pytest

import hopscope
from testlib import HOPSCOPE, hs_programs, last_prog_id, sh, wait_for

NS = "hst-xd-t"


@pytest.fixture
def netns():
    sh("ip", "netns", "del", NS, check=False)
    since = last_prog_id()
    sh("ip", "netns", "add", NS)
    try:
        for cmd in (["link", "set", "lo", "up"], ["link", "add", "br0", "type", "bridge"],
                    ["link", "set", "br0", "up"],
                    ["link", "add", "va", "type", "veth", "peer", "name", "vb"],
                    ["link", "set", "va", "up"], ["link", "set", "vb", "up"]):
            sh("ip", "-n", NS, *cmd)
        yield NS
    finally:
        sh("ip", "netns", "del", NS, check=False)
    # a program is freed a moment after its last holder exits
    assert wait_for(lambda: not hs_programs(since), timeout=10), "BPF programs left loaded"


def record(tmp_path, iface, *extra):
    out = tmp_path / f"{iface}.hsr"
    r = sh(HOPSCOPE, "record", "-q", "-n", NS, "-i", iface, "-O", iface, "-d", "0.5",
           "-o", str(out), *extra, check=False)
    return r, out


def xdp(out):
    return next(i for i in hopscope.load(out).attrs["header"]["interfaces"] if i["role"] != "out")


def test_auto_falls_back_to_generic_where_the_driver_refuses_native(netns, tmp_path):
    r, out = record(tmp_path, "br0")
    assert r.returncode == 0, r.stderr
    assert "br0 (driver bridge) refuses native XDP (Operation not supported): using generic" \
        in r.stderr
    i = xdp(out)
    assert i["xdp_mode"] == "generic" and "refused native XDP" in i["xdp_mode_why"]
    d = sh(HOPSCOPE, "describe", str(out)).stdout
    assert "xdp_mode generic (auto: the driver refused native XDP" in d


def test_native_asked_and_refused_is_an_error(netns, tmp_path):
    r, _ = record(tmp_path, "br0", "--xdp-mode", "native")
    assert r.returncode == 1
    assert "cannot attach XDP (native) to br0: Operation not supported" in r.stderr
    assert "using generic" not in r.stderr


def test_auto_says_why_it_chose(netns, tmp_path):
    r, out = record(tmp_path, "va")
    assert r.returncode == 0, r.stderr
    assert (xdp(out)["xdp_mode"], xdp(out)["xdp_mode_why"]) == \
        ("generic", "auto: generic on veth, where native costs more")
    assert hopscope.load(out).attrs["trailer"]["xdp_modes"] == {"va": "generic"}
    r, out = record(tmp_path, "va", "--xdp-mode", "native")
    assert r.returncode == 0, r.stderr
    assert (xdp(out)["xdp_mode"], xdp(out)["xdp_mode_why"]) == \
        ("native", "asked (--xdp-mode native)")
    # the END chunk: the mode each input ended in (auto may switch one)
    assert hopscope.load(out).attrs["trailer"]["xdp_modes"] == {"va": "native"}
