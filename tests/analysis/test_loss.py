"""loss_table: the router's drops apart from the tracer's losses."""
import pandas as pd

from frames import frame
from hopscope.analysis.loss import loss_table
from hopscope.record import format as fmt


def _row(table, source, what_starts, stage=None):
    sel = (table["source"] == source) & table["what"].str.startswith(what_starts)
    if stage is not None:
        sel &= table["stage"] == stage
    assert sel.sum() == 1, table[sel]
    return table[sel].iloc[0]


def _run():
    n = None
    return frame(
        [0, 0, 0, 0, 0, 0, 0, 0],
        [1, 1, n, 1, 1, 1, 1, 1],
        [2, n, n, n, 2, 2, 2, 2],
        [3, n, n, n, n, n, n, 3],
        ["complete", "dropped", "dropped", "dropped", "evicted", "collision", "inflight",
         "other_out"],
        drop_stage=[None, "t2", "t1", "t2", None, None, None, None],
        drop_reason=[0, 6, 2, 6, 0, 0, 0, 0],
        counters={"rb_fail": 5, "race": 1, "pre_nometa": 7})


def test_router_drops_by_stage_and_reason():
    df = _run()
    df.attrs["header"] = {"drop_reasons": {"2": "NOT_SPECIFIED", "6": "NETFILTER_DROP"}}
    t = loss_table(df)
    router = t[t["source"] == "router"]
    assert list(zip(router["stage"], router["drop_reason"], router["reason"],
                    router["packets"])) == \
        [("t1", 2, "NOT_SPECIFIED", 1), ("t2", 6, "NETFILTER_DROP", 2)]


def test_a_file_without_the_kernels_table_names_the_number():
    router = loss_table(_run())
    assert list(router[router["source"] == "router"]["reason"]) == ["reason 2", "reason 6"]


def test_tracer_losses_apart():
    t = loss_table(_run())
    assert _row(t, "tracer", "evicted")["stage"] == "t3"  # last stage it was seen at
    assert _row(t, "tracer", "collision")["packets"] == 1
    assert _row(t, "tracer", "record lost: ring buffer full")["packets"] == 5
    assert _row(t, "tracer", "record discarded")["packets"] == 1
    assert _row(t, "tracer", "probe runs")["packets"] == 0  # zero rows are shown too
    assert _row(t, "other", "still in the router")["packets"] == 1
    assert _row(t, "other", "forwarded out of")["stage"] == "t4"
    assert _row(t, "other", "seen without metadata", "t2")["packets"] == 7
    assert t["packets"].dtype == "Int64" and t["drop_reason"].dtype == "Int64"


def test_without_counters_the_counts_are_unknown_not_zero():
    df = _run()
    df.attrs["counters"] = None
    t = loss_table(df)
    assert pd.isna(_row(t, "tracer", "record lost")["packets"])
    assert _row(t, "router", "dropped", "t2")["packets"] == 2


def test_clean_and_empty_runs():
    clean = loss_table(frame([0], [1], [2], [3], counters={}))
    assert (clean["source"] != "router").all() and (clean["packets"] == 0).all()
    assert len(loss_table(frame([], [], [], []))) == len(clean)


def test_all_dropped():
    df = frame([0, 0, 0], [None] * 3, [None] * 3, [None] * 3, ["dropped"] * 3,
               drop_stage=["t1"] * 3, drop_reason=[80] * 3, counters={})
    router = loss_table(df).query("source == 'router'")
    assert list(router["packets"]) == [3] and list(router["drop_reason"]) == [80]


# The recorder judges a t4 it did not see (tests/e2e/test_writer.py tests the
# rule); the loss table only reads its verdict, the HS_F_T4_UNSEEN bit.
UNSEEN = fmt.FLAGS["t4_unseen"]


def test_an_inflight_packet_the_recorder_flagged_lost_its_t4_to_the_tracer():
    n = None
    df = frame([0, 1000, 2000], [1, 1001, 2001], [2, 1002, 2002], [3, n, 2003],
               ["complete", "inflight", "complete"], flags=[0, UNSEEN, 0])
    t = loss_table(df)
    assert _row(t, "tracer", "t4 not seen", "t3")["packets"] == 1
    assert not t["what"].str.startswith("still in the router").any()


def test_an_unflagged_inflight_packet_is_still_in_the_router():
    """the recorder's verdict stands, even where the flows alone would say otherwise
    (a file written before the recorder judged never has the bit)"""
    n = None
    df = frame([0, 1000, 2000], [1, 1001, 2001], [2, 1002, 2002], [3, n, 2003],
               ["complete", "inflight", "complete"])
    t = loss_table(df)
    assert _row(t, "other", "still in the router", "t3")["packets"] == 1
    assert not t["what"].str.startswith("t4 not seen").any()
