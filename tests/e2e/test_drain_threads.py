"""The recorder's drain threads (--drain-threads): with the router's receive
work spread over both CPUs by RPS, two threads each drain one CPU's ring
into one file. Exact accounting, as for one thread: every packet that left
is a record or a counted loss, the file's COUNTERS chunks count the records
before them, and END says how many threads drained."""
import os

import pytest

from testlib import HOPSCOPE, left_router, sh
from livebed import links, ns, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

FLOWS, N = 16, 300


def spread_rps():
    """RPS on the router's inputs to every CPU: flows hash to either"""
    mask = format((1 << os.cpu_count()) - 1, "x")
    for ifc in ("r-s1", "r-s2"):
        ns("router", "sh", "-c", f"echo {mask} > /sys/class/net/{ifc}/queues/rx-0/rps_cpus")


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two CPUs")
def test_two_drain_threads_record_every_packet_of_both_cpus(tb, recorder):
    tb.up()
    spread_rps()
    rec = recorder("--drain-threads", "2")
    before = links()
    for f in range(FLOWS):
        send_udp(N, port=9000 + f, sport=41000 + f, role="sender1" if f % 2 else "sender2")
    wait_out(before, FLOWS * N)
    df, c = stopped(rec)
    end = df.attrs["trailer"]["userspace"]
    assert end["drain_threads"] == 2, end
    mine = df[(df.dport >= 9000) & (df.dport < 9000 + FLOWS)]
    # every packet left (wait_out counted them on r-rx): each is a record that
    # left, or, where the kernel skipped t4's probe for every packet of a
    # flow, so that no later packet could flag one t4_unseen (left_router),
    # still inside past routing: whole flows only
    left = left_router(mine)
    past = (mine.status == "inflight").to_numpy() & (mine.t3.to_numpy() > 0)
    stuck = mine[~left].dport.unique()
    assert len(mine) == FLOWS * N and (left | past).all(), mine.status.value_counts()
    assert not (left & mine.dport.isin(stuck).to_numpy()).any(), mine.status.value_counts()
    assert len(stuck) < FLOWS
    # both CPUs forwarded, so both rings (and both threads) had records
    gone = mine[left]  # cpu_out is where t4 ran
    assert set(gone.cpu_out.unique()) == set(range(os.cpu_count())), gone.cpu_out.value_counts()
    # each flow's records under its own flow id, and in its order (one CPU each)
    for f, g in mine.groupby("dport"):
        assert g.flow.nunique() == 1 and g.sport.unique().tolist() == [41000 + f - 9000]
    for f, g in gone.groupby("dport"):
        assert g.cpu_out.nunique() == 1


def test_drain_threads_is_checked():
    for bad in ("0", "65", "x", "2x"):
        r = sh(HOPSCOPE, "record", "--drain-threads", bad, "-i", "lo", "-O", "lo", "-o",
               "/dev/null", check=False)
        assert r.returncode == 2 and "--drain-threads must be auto or 1 to 64" in r.stderr, \
            r.stderr
