"""An always-on recorder outlives its interfaces: an input and the output
deleted and made again (new ifindexes), an input down and up, an input gone
for a while; every packet forwarded while the path was there is in the
histograms, the END chunk tells each interface's life, SIGTERM ends the run
cleanly and nothing stays attached. Own prefix (hst-ic-)."""
import os
import signal

import pytest

import hopscope
import livebed
from testlib import HOPSCOPE, TESTBED, sh, wait_for
from hopscope.live import snapshot
from livebed import links, ns, recorder, send_udp, tb  # noqa: F401

N = 200


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    monkeypatch.setattr(livebed, "P", "hst-ic-")


def relink(role):
    sh(TESTBED, "relink", role, env=dict(os.environ, HS_PREFIX="hst-ic-"))


def life(path, name):
    """what the recorder's last snapshot says of interface name"""
    return snapshot.read(path).counters["ifaces"][name]


def both_senders(tos):
    """N datagrams from each sender, TOS tos from sender1 and tos + 4 from
    sender2; returns once r-rx has sent them all"""
    before = links()
    send_udp(N, port=5001, tclass=tos)
    send_udp(N, port=5002, tclass=tos + 4, role="sender2")
    assert wait_for(lambda: links()["r-rx"]["tx"]["packets"] -
                    before["r-rx"]["tx"]["packets"] >= 2 * N, timeout=60)


def test_interfaces_deleted_recreated_down_and_up(tb, recorder, tmp_path):
    tb.up()
    path = tmp_path / "live.json"
    rec = recorder("--aggregate", "--snapshot", str(path))
    assert wait_for(path.exists, timeout=30)
    first = {n: v["ifindexes"] for n, v in snapshot.read(path).counters["ifaces"].items()}
    both_senders(4)

    relink("sender1")  # an input, deleted and made again
    assert wait_for(lambda: len(life(path, "r-s1")["ifindexes"]) == 2, timeout=30)
    relink("receiver")  # the output
    assert wait_for(lambda: len(life(path, "r-rx")["ifindexes"]) == 2, timeout=30)
    both_senders(4)

    ns("router", "ip", "link", "set", "r-s2", "down")
    assert wait_for(lambda: life(path, "r-s2")["state"] == "down", timeout=30)
    ns("router", "ip", "link", "del", "r-s2")  # gone for a while
    assert wait_for(lambda: life(path, "r-s2")["state"] == "gone", timeout=30)
    relink("sender2")
    assert wait_for(lambda: life(path, "r-s2")["state"] == "up", timeout=30)
    both_senders(4)

    rec.p.send_signal(signal.SIGTERM)
    text = rec.stop()
    df = hopscope.load(rec.out, strict=True)
    end = df.attrs["trailer"]
    assert end["stop_reason"] == "signal"
    ifaces = end["ifaces"]
    assert ifaces["r-s1"]["ifindexes"][0] == first["r-s1"][0]
    assert len(ifaces["r-s1"]["ifindexes"]) == len(ifaces["r-rx"]["ifindexes"]) == 2, ifaces
    assert len(ifaces["r-s2"]["ifindexes"]) == 2 and ifaces["r-s2"]["gone"] == 1, ifaces
    assert ifaces["r-s2"]["down"] == 1 and ifaces["r-s2"]["state"] == "up", ifaces
    assert "r-s1 is back as ifindex" in text and "r-s2 is gone" in text, text
    # every test datagram, before and after each change, in its series (one
    # per TOS and output, the same series across the output's two ifindexes)
    transit = {s["tos"]: s["count"] for s in df.attrs["histograms"]
               if s["delay"] == "transit" and s["out_if"] == "r-rx"}
    assert transit.get(4) == transit.get(8) == 3 * N, (transit, end["counters"])
    assert end["counters"]["evicted"] == 0, end["counters"]
    d = sh(HOPSCOPE, "describe", rec.out).stdout
    assert "r-s2 (in):" in d and "seen gone 1x, down 1x" in d, d
