"""Real runs through the testbed, recorder and generators (a few thousand
packets each): the generators' per-packet truth joined to the records must
account for every packet, exactly; and a failed or interrupted run leaves no
namespace and no process behind."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import hopscope
from hopscope.traffic import run as runner
from hopscope.traffic.result import RunError
from hopscope.traffic.run import run_condition
from hopscope.traffic.scenario.load import parse_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "hst-tr-t-"
ADDR = {"sender1": "198.18.1.2", "sender2": "198.18.2.2"}


def take_testbed_down():
    subprocess.run([runner.TESTBED, "down"], env=dict(os.environ, HS_PREFIX=PREFIX),
                   capture_output=True)


def our_namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def netns_inodes():
    return {os.stat(f"/run/netns/{n}").st_ino for n in our_namespaces()}


def processes_in(inodes):
    """pids of processes whose network namespace is one of inodes."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in inodes:
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture
def clean():
    take_testbed_down()
    yield
    take_testbed_down()
    assert not our_namespaces()


def condition(text):
    (c,) = parse_scenario(text, "test.toml").conditions()
    return c


def run(text, tmp_path):
    out = tmp_path / "run"
    r = run_condition(condition(text), out, prefix=PREFIX)
    assert not our_namespaces(), "the run left its testbed up"
    with open(out / "metadata.json") as f:
        meta = json.load(f)
    df = hopscope.load(str(out / "run.hsr"))
    truth = pd.read_parquet(out / "truth.parquet")
    return r, meta, df, truth, out


def flow_records(df, meta, name):
    s = meta["senders"][name]
    port = meta["condition"]["senders"][name]["port"]
    return df[(df.proto == 17) & (df.src == s["address"]) & (df.sport == s["sport"])
              & (df.dport == port)]


def check_accounting(r, meta, df, truth):
    """Every packet sent is one truth row; every record of a flow is one of them."""
    for name, c in r.truth.items():
        t = truth[truth.sender == name]
        assert c["sent"] == r.sent[name] == len(t)
        assert c["sent"] == c["forwarded"] + c["dropped"] + c["untraced"] + c["not_recorded"]
        assert c["records_unmatched"] == 0
        recs = flow_records(df, meta, name)
        size = meta["condition"]["senders"][name]["size"]
        if meta["senders"][name]["generator"] == "iperf3":
            recs = recs[recs.ip_len == 28 + size["value"]]  # not the 4-byte handshake
        assert c["recorded"] == len(recs)
        assert (t.status.astype(str).value_counts().drop("not_recorded", errors="ignore")
                .sort_index().to_dict()) == \
            recs.status.astype(str).value_counts().sort_index().to_dict()
        rec = t[t.recorded]
        assert (rec.tx_ns < rec.t1).all()  # sent before the router saw it
        assert ((rec.t1 - rec.tx_ns) < 50e6).all()
        assert t.seq.notna().all() and t.seq.is_unique
    assert meta["warnings"] == []


def test_ditg_run_every_packet_joined(clean, tmp_path):
    r, meta, df, truth, out = run("""
duration = 1.5
[senders.sender1]
tos = 4
size = 550
rate = 3000
[senders.sender2]
tos = 5
size = { dist = "normal", mean = 600, std = 200 }
rate = 2000
gaps = "exponential"
cpu = "receiver"
seed = 0.25
""", tmp_path)
    check_accounting(r, meta, df, truth)
    for name, tos in (("sender1", 4), ("sender2", 5)):
        t = truth[truth.sender == name]
        table = pd.read_parquet(out / f"{name}.packets.parquet")
        assert len(t) == len(table) > 2000
        assert r.received[name] == int(table.rx_ns.notna().sum()) == int(t.received.sum())
        assert set(flow_records(df, meta, name).tos) == {tos}
        got = t[t.received & t.forwarded]
        assert len(got) > 0.95 * len(t)
        # ITGRecv's clock and the records' agree: received after the router sent it
        assert (got.rx_ns > got.t4).all()
        assert (got.owd_ns > got.t4 - got.tx_ns).all()
    sizes = truth[truth.sender == "sender2"]["size"]
    assert sizes.nunique() > 100 and 550 < sizes.mean() < 650


def test_iperf3_run_every_packet_joined(clean, tmp_path):
    r, meta, df, truth, out = run("""
duration = 1
[senders.sender1]
generator = "iperf3"
tos = 4
size = 200
rate = 4000
[senders.sender2]
generator = "iperf3"
tos = 5
size = 1000
rate = 2500
""", tmp_path)
    check_accounting(r, meta, df, truth)
    for name, n in (("sender1", 4000), ("sender2", 2500)):
        t = truth[truth.sender == name]
        assert r.sent[name] == n
        assert t.seq.tolist() == list(range(1, n + 1))  # every counter found
        c = r.truth[name]
        # what reached the receiver: everything the router did not drop
        assert r.received[name] == n - c["dropped"] - c["not_recorded"]
        assert meta["senders"][name]["server_received"] <= r.received[name]


def test_router_drops_joined_packet_by_packet(clean, tmp_path):
    """A 4 Mbit/s shaper offered ~8 Mbit/s: its queue drops about half, and
    exactly the packets the router dropped never reached the receiver."""
    r, meta, df, truth, out = run("""
duration = 1.5
[testbed]
mode = "inline"
shape = "tbf:4mbit:20p"
[senders.sender1]
tos = 4
size = 1000
rate = 1000
""", tmp_path)
    check_accounting(r, meta, df, truth)
    c = r.truth["sender1"]
    assert 0.3 * c["sent"] < c["dropped"] < 0.7 * c["sent"]
    t = truth[truth.recorded]
    assert not t[t.dropped].received.any()
    assert t[t.forwarded].received.all()
    assert r.received["sender1"] == c["forwarded"] + c["untraced"] - c.get("lost_after_router", 0)
    dropped = flow_records(df, meta, "sender1")
    dropped = dropped[dropped.status == "dropped"]
    assert set(dropped.drop_stage.astype(str)) == {"t3"}  # in the output qdisc


def started_then(exc):
    """A run_senders that starts nothing, notes the testbed's namespaces, and raises exc."""
    seen = {}

    def fake(self, cpus):
        seen["inodes"] = netns_inodes()
        seen["pids"] = processes_in(seen["inodes"])
        raise exc

    return fake, seen


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_failed_run_leaves_nothing(clean, tmp_path, monkeypatch, exc):
    fake, seen = started_then(exc)
    monkeypatch.setattr(runner._Run, "run_senders", fake)
    cond = condition("duration = 1\n[senders.sender1]\nsize = 100\nrate = 100\n"
                     "[senders.sender2]\ngenerator = 'iperf3'\nsize = 100\nrate = 100\n")
    with pytest.raises(type(exc)):
        run_condition(cond, tmp_path / "run", prefix=PREFIX)
    assert len(seen["inodes"]) == 4 and len(seen["pids"]) >= 3  # ITGRecv, iperf3 -s, rxcount
    assert not our_namespaces()
    assert not processes_in(seen["inodes"])
    with open(tmp_path / "run" / "metadata.json") as f:
        assert type(exc).__name__ in json.load(f)["error"]
    # the recorder ran in the root namespace: it is gone too
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).returncode == 1


def test_a_failing_sender_is_reported(clean, tmp_path, monkeypatch):
    monkeypatch.setattr(runner.iperf, "client_command", lambda s, dest: ["sh", "-c", "exit 3"])
    cond = condition("duration = 1\n[senders.sender1]\ngenerator = 'iperf3'\nsize = 100\n"
                     "rate = 100\n")
    with pytest.raises(RunError, match=r"sender sender1 \(iperf3\) failed \(exit 3\)"):
        run_condition(cond, tmp_path / "run", prefix=PREFIX, record=False)
    assert not our_namespaces()


def test_cli_runs_the_quick_example(clean, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    r = subprocess.run([sys.executable, "-m", "hopscope", "scenario", "run",
                        os.path.join(ROOT, "traffic", "examples", "quick.toml"),
                        "-o", str(tmp_path), "--prefix", PREFIX],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    names = set(os.listdir(tmp_path / "quick"))
    assert {"run.hsr", "metadata.json", "scenario.toml", "truth.parquet",
            "sender1.packets.parquet", "sender2.iperf3-client.json"} <= names
    assert "sender1: sent " in r.stderr and "never reached it 0" in r.stderr
