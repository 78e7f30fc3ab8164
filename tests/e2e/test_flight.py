"""The flight recorder (record --aggregate --flight N) through the testbed's
router: a packet planted slow (a burst into a TBF on the router's output)
fires a d_oq trigger, and the dump holds it and the packets around it, and
only the last N that left before the freeze; SIGUSR1 dumps too, a dump cap
counts what it skips, and a drop of a chosen reason triggers. Every packet
has its own source port (BASE + its index in the sending order), so a
record says which packet it is. Own prefix (hst-fl-)."""
import glob
import os
import signal
import sys
import warnings

import numpy as np
import pytest

import hopscope
import livebed
from testlib import HOPSCOPE, sh, wait_for
from livebed import RX4, ipv4_only, ns, recorder, tb  # noqa: F401

BASE = 20000
STEADY, BURST, AFTER = 300, 40, 40  # packets before, in and after the burst
N = 128             # records a dump keeps: fewer than STEADY, more than BURST + AFTER
SLOW_NS = 2_000_000  # the trigger: d_oq > 2 ms; the burst waits up to ~45 ms


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    """livebed's helpers on this file's own namespaces"""
    monkeypatch.setattr(livebed, "P", "hst-fl-")


def send(phases):
    """from sender1, (count, size, gap_s) phase after phase; packet i (over all
    phases) from source port BASE + i, so no two share a port"""
    code = ("import socket, time\n"
            "i = 0\n"
            f"for n, size, gap in {phases!r}:\n"
            "    for _ in range(n):\n"
            "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"        s.bind(('', {BASE} + i))\n"
            f"        s.sendto(i.to_bytes(4, 'big') * (size // 4), ('{RX4}', 9))\n"
            "        s.close()\n"
            "        i += 1\n"
            "        if gap:\n"
            "            time.sleep(gap)\n")
    ns("sender1", sys.executable, "-c", code, timeout=120)


def up(tb, qdisc):
    """the testbed with qdisc on the router's output, the receiver's address
    resolved first (a packet waiting for ARP would wait in d_oq)"""
    tb.up()
    ipv4_only()
    ns("router", "tc", "qdisc", "replace", "dev", "r-rx", "root", *qdisc)
    ns("sender1", "ping", "-c", "2", "-i", "0.2", "-W", "2", RX4)


def flight(rec, tmp_path, *extra):
    return rec("--aggregate", "--flight", str(N), "--flight-dir", str(tmp_path), *extra)


def dumps(tmp_path):
    return sorted(glob.glob(str(tmp_path / "flight-*.hsr")))


def checked_dump(path):
    """a dump read as any recording: verify passes, it loads whole and
    strict, and its END counts its records"""
    v = sh(HOPSCOPE, "verify", path, check=False)
    assert v.returncode == 0 and ": OK: " in v.stdout, v.stdout + v.stderr
    df = hopscope.load(path, strict=True)
    end = df.attrs["trailer"]
    assert end["stop_reason"] == "flight_dump" and end["userspace"]["records_written"] == len(df)
    assert df.attrs["header"]["flight_dump"]["records"] == len(df)
    return df


def test_dump_holds_the_slow_packets_and_only_the_last_n(tb, recorder, tmp_path):
    # 10 Mbit/s from a 10 kB bucket: the paced packets never wait; the burst's
    # 1400 B packets after the bucket's first seven wait 1.1 ms more each
    up(tb, ("tbf", "rate", "10mbit", "burst", "10kb", "limit", "200kb"))
    # the burst's queue outlasts a dump: one dump, its later triggers skipped
    rec = flight(recorder, tmp_path, "--flight-trigger", f"d_oq>{SLOW_NS // 1000}us",
                 "--flight-after", "50ms", "--flight-max-dumps", "1")
    send([(STEADY, 200, 0.002), (BURST, 1400, 0), (AFTER, 200, 0.002)])
    assert wait_for(lambda: dumps(tmp_path), timeout=30)
    text = rec.stop()
    files = dumps(tmp_path)
    assert len(files) == 1, (files, text)
    assert f"flight dump {files[0]}: {N} records, trigger d_oq>2000us" in text, text
    df = checked_dump(files[0])
    d = df.attrs["header"]["flight_dump"]
    assert d["trigger"] == "d_oq>2000us" and d["delay"] == "d_oq" and d["delay_ns"] > SLOW_NS, d
    assert 1 <= d["triggers"] <= BURST + AFTER, d
    # every record whole: one packet of this test each, all four instants in order
    assert len(df) == N and (df.status == "complete").all(), df.status.value_counts()
    t = df[["t1", "t2", "t3", "t4"]].to_numpy(np.int64)
    assert (t > 0).all() and (np.diff(t, axis=1) >= 0).all()
    assert (df.in_if == "r-s1").all() and (df.out_if == "r-rx").all()
    assert (np.diff(df.t1.to_numpy(np.int64)) >= 0).all(), "not in t1 order"
    # with their packet keys, as any recording's (a truth join needs them)
    assert (df.key != 0).all() and df.key.is_unique
    idx = df.sport.to_numpy(np.int64) - BASE
    # the trigger's packet is in it, one of the burst's or queued behind it
    trig = df[df.seq == d["trigger_seq"]]
    assert len(trig) == 1 and trig.d_oq.iloc[0] == d["delay_ns"], (d, trig)
    assert STEADY <= trig.sport.iloc[0] - BASE < STEADY + BURST + AFTER
    # the packets leave in the order sent (one FIFO): the dump is the N that
    # left last before the freeze, one run of consecutive packets but for
    # those whose t4 probe the kernel skipped (docs/troubleshooting.md: they
    # stay in their slots, and --aggregate writes no record of them): at most
    # as many as the run counts in their slots at the stop; the first steady
    # packets, more than N before the end, are not in it
    run = hopscope.load(rec.out, strict=True)
    missing = sorted(set(range(idx[0], idx[-1] + 1)) - set(idx.tolist()))
    assert len(idx) == N and (np.diff(idx) > 0).all(), idx
    assert len(missing) <= run.attrs["trailer"]["userspace"]["inflight_at_stop"], \
        (missing, run.attrs["trailer"]["userspace"])
    assert 0 < idx[0] < STEADY, idx[0]
    slow = df[df.d_oq > SLOW_NS]
    assert len(slow) >= 10 and (slow.sport - BASE >= STEADY).all(), slow.sport
    assert (df[idx < STEADY].d_oq < SLOW_NS).all()
    # the run's own file counts it, and describe names the dump
    f = run.attrs["trailer"]["flight"]
    assert f["dumps"] == 1 and f["triggers"] >= len(slow) and f["dumps_skipped"] == 0, f
    c, u = run.attrs["trailer"]["counters"], run.attrs["trailer"]["userspace"]
    # every record the kernel made was kept, or counted as not kept (frozen)
    assert f["records_kept"] + f["records_not_kept"] == c["complete"], (f, c)
    # every packet sent left complete, or with its t4 probe skipped by the
    # kernel (docs/troubleshooting.md): still in its slot at the stop
    assert c["complete"] + u["inflight_at_stop"] == STEADY + BURST + AFTER, (c, u)
    out = sh(HOPSCOPE, "describe", files[0]).stdout
    assert "FLIGHT DUMP 1: trigger d_oq>2000us (d_oq " in out, out
    assert "recorder on: last 128 records, triggers d_oq>2000us, signal; 1 dumps" in \
        sh(HOPSCOPE, "describe", rec.out).stdout


def skipped(path):
    """dumps_skipped in the last COUNTERS chunk of a file still being written"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hopscope.RecordFileWarning)
        c = hopscope.load(path).attrs["counters"] or {}
    return (c.get("flight") or {}).get("dumps_skipped")


def test_sigusr1_dumps_and_the_cap_counts_what_it_skips(tb, recorder, tmp_path):
    up(tb, ("pfifo_fast",))
    rec = flight(recorder, tmp_path, "--flight-max-dumps", "1")
    send([(100, 200, 0.001)])
    rec.p.send_signal(signal.SIGUSR1)
    assert wait_for(lambda: dumps(tmp_path), timeout=30)
    rec.p.send_signal(signal.SIGUSR1)  # past the cap: counted, not dumped
    assert wait_for(lambda: skipped(rec.out) == 1, timeout=30)
    text = rec.stop()
    files = dumps(tmp_path)
    assert len(files) == 1, files
    df = checked_dump(files[0])
    d = df.attrs["header"]["flight_dump"]
    assert d["trigger"] == "signal" and "trigger_seq" not in d, d
    # fewer packets than N: every one of them, each once, but one whose t4
    # probe the kernel skipped (docs/troubleshooting.md): it stays inside to the stop
    sports = sorted(df.sport - BASE)
    assert len(set(sports)) == len(sports) and set(sports) <= set(range(100)), df.sport
    assert (df.status == "complete").all()
    assert "later triggers are counted (dumps_skipped)" in text, text
    end = hopscope.load(rec.out, strict=True).attrs["trailer"]
    assert 100 - len(sports) <= end["userspace"]["inflight_at_stop"], (sports, end["userspace"])
    f = end["flight"]
    assert f["dumps"] == 1 and f["dumps_skipped"] == 1 and f["triggers"] == 0, f


def test_a_dump_still_waiting_at_the_stop_is_written(tb, recorder, tmp_path):
    up(tb, ("pfifo_fast",))
    rec = flight(recorder, tmp_path, "--flight-after", "600")
    send([(50, 200, 0.001)])
    rec.p.send_signal(signal.SIGUSR1)
    # a COUNTERS snapshot (the recorder goes on, the dump waits); noticed
    # now or only at the stop, the signal's dump is written then
    assert wait_for(lambda: skipped(rec.out) == 0, timeout=30)
    assert not dumps(tmp_path)
    rec.stop()
    files = dumps(tmp_path)
    assert len(files) == 1, files
    df = checked_dump(files[0])
    assert sorted(df.sport - BASE) == list(range(50))


def test_a_drop_of_the_chosen_reason_triggers(tb, recorder, tmp_path):
    # a queue of 3 packets: a burst of 30 overflows it
    up(tb, ("tbf", "rate", "1mbit", "burst", "2kb", "limit", "4500"))
    rec = flight(recorder, tmp_path, "--flight-trigger", "drop:QDISC_DROP")
    send([(20, 1400, 0.02), (30, 1400, 0)])
    assert wait_for(lambda: dumps(tmp_path), timeout=30)
    rec.stop()
    df = checked_dump(dumps(tmp_path)[0])
    d = df.attrs["header"]["flight_dump"]
    names = df.attrs["header"]["drop_reasons"]
    assert d["trigger"] == "drop:QDISC_DROP" and names[str(d["drop_reason"])] == "QDISC_DROP"
    dropped = df[df.status == "dropped"]
    assert len(dropped) > 0 and (dropped.sport - BASE >= 20).all(), dropped.sport
    assert {names[str(r)] for r in dropped.drop_reason} == {"QDISC_DROP"}
    assert (dropped.drop_stage.astype(str) == "t3").all()
    assert d["trigger_seq"] in set(dropped.seq)


def test_usage_errors(tmp_path):
    def rec(*a):
        return sh(HOPSCOPE, "record", "-i", "x", "-O", "y", "-o", str(tmp_path / "f.hsr"), *a,
                  check=False)
    agg = ("--aggregate", "--flight", "64")
    for args, why in (
            (("--flight", "64"), "it needs --aggregate"),
            (("--aggregate", "--flight", "0"), "--flight takes the records to keep"),
            (("--aggregate", "--flight", "x"), "--flight takes the records to keep"),
            (("--aggregate", "--flight-trigger", "d_oq>1ms"), "need --flight N"),
            ((*agg, "--flight-trigger", "d_oq>1"), "with its unit"),
            ((*agg, "--flight-trigger", "d_xx>1ms"), "--flight-trigger takes DELAY>TIME"),
            ((*agg, "--flight-trigger", "drop:NO_SUCH_REASON"), "no drop reason 'NO_SUCH_REASON'"),
            ((*agg, "--flight-trigger", "drop:any", "--no-drops"), "no --no-drops"),
            ((*agg, "--flight-trigger", "d_rxq>1ms"), "needs --stages t0"),
            ((*agg, "--flight-after", "soon"), "--flight-after takes a time"),
            ((*agg, "--flight-dir", str(tmp_path / "none")), "not a folder"),
            ((*agg, "--backend", "kmod"), "eBPF backend")):
        r = rec(*args)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    assert not os.path.exists(tmp_path / "f.hsr")
