"""Scenarios, runs and campaigns on a chain of routers: the scenario keys
(`routers`, a shape per router) refused with their line when wrong; then a
real campaign of one 2-router condition (r2's output the bottleneck, two
senders) and one single-router condition, checked against what the
generators sent, the receiver's kernel counted and the routers' qdiscs
dropped, packet by packet; its dataset's hop and router columns, its
tables, and the documented DuckDB and Spark path queries against
load_path."""
import json
import os
import re
import subprocess

import duckdb
import numpy as np
import pandas as pd
import pytest

import hopscope
from hopscope.analysis import path_sql
from hopscope.record.dataset import PART, partition
from hopscope.traffic.scenario.load import ScenarioError, parse_scenario
from hopscope.traffic.testbed import Testbed, up_options
from campaignkit import ROOT, hopscope as cli
from path_frames import same_table
from spark import local_spark
from testlib import namespaces

PREFIX = "hst-ch-"
T4_UNSEEN = 0x80  # hs_record.flags: left the router, its t4 missed (docs/record-format.md)
DOC = os.path.join(ROOT, "docs", "campaigns.md")
BASE = """\
duration = 2
[senders.sender1]
generator = "iperf3"
size = 1000
rate = 1000
"""


def conditions(text):
    return parse_scenario(text, "chain.toml").conditions()


def problems(text):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "chain.toml")
    return str(e.value).splitlines()


# ---- the scenario's keys


def test_routers_and_a_shape_per_router_reach_the_testbeds_options():
    (c,) = conditions(BASE + '[testbed]\nrouters = 3\n[testbed.shape]\nr2 = "tbf:20mbit:30p"\n'
                             'r3 = "htb:5mbit"\n')
    assert c.testbed["routers"] == 3
    assert c.testbed["shape"] == {"r2": "tbf:20mbit:30p", "r3": "htb:5mbit"}
    args = up_options(**c.testbed)
    assert args[:2] == ["--routers", "3"]
    assert [args[i + 1] for i, a in enumerate(args) if a == "--shape"] == \
        ["r2=tbf:20mbit:30p", "r3=htb:5mbit"]
    # the inline form is the same table; a string is still the last router's
    (d,) = conditions(BASE + '[testbed]\nrouters = 3\nshape = {r2 = "tbf:20mbit:30p", '
                             'r3 = "htb:5mbit"}\n')
    assert d.testbed == c.testbed
    (e,) = conditions(BASE + '[testbed]\nrouters = 2\nshape = "tbf:8mbit"\n')
    assert e.testbed["shape"] == "tbf:8mbit"
    (one,) = conditions(BASE)
    assert one.testbed["routers"] == 1 and "--routers" not in up_options(**one.testbed)


def test_routers_vary_like_any_key_and_a_condition_replaces_the_shape_table():
    conds = conditions(BASE + '[testbed]\nshape = {r1 = "tbf:8mbit"}\n'
                              '[vary]\n"testbed.routers" = [1, 2]\n')
    assert [(c.name, c.testbed["routers"]) for c in conds] == [("routers=1", 1),
                                                               ("routers=2", 2)]
    a, b = conditions(BASE + '[testbed]\nrouters = 2\nshape = {r1 = "tbf:8mbit"}\n'
                             '[[conditions]]\nname = "a"\n[[conditions]]\nname = "b"\n'
                             'testbed.shape = {r2 = "tbf:4mbit"}\n')
    assert a.testbed["shape"] == {"r1": "tbf:8mbit"} and b.testbed["shape"] == {"r2": "tbf:4mbit"}


@pytest.mark.parametrize("testbed, line, words", [
    ("routers = 5", 7, "testbed.routers: --routers '5': expected a number of routers from 1 to 4"),
    ("routers = 0", 7, "testbed.routers: must be at least 1, not 0"),
    ("routers = 'two'", 7, "testbed.routers: must be a whole number, not 'two'"),
    ("routers = 2\nshape = {r3 = 'tbf:1mbit'}", 8,
     "testbed.shape.r3: not a router of this chain: it has r1 .. r2 (routers = 2)"),
    ("shape = {r2 = 'tbf:1mbit'}", 7, "testbed.shape.r2: not a router of this chain: it has r1 "
                                      "(routers = 1)"),
    ("routers = 2\n[testbed.shape]\nrouter2 = 'tbf:1mbit'", 9,
     "testbed.shape.router2: not a router of this chain"),
    ("routers = 2\n[testbed.shape]\nr1 = 'none'\nr2 = 'tbf:fast'", 10,
     "testbed.shape.r2: --shape r2= 'tbf:fast': rate 'fast' is not a tc rate"),
    ("routers = 2\nshape = {r2 = 5}", 8, "testbed.shape.r2: must be a shaper such as"),
    ("shape = 3", 7, "testbed.shape: must be a shaper (\"tbf:10mbit\") or a table of router to "
                     "shaper"),
])
def test_bad_chain_keys_name_their_line(testbed, line, words):
    got = problems(BASE + "[testbed]\n" + testbed + "\n")
    assert any(m.startswith(f"chain.toml:{line}: ") and words in m for m in got), got


def test_a_vary_beyond_a_shapes_routers_is_refused_for_that_condition():
    got = problems(BASE + '[testbed]\nrouters = 2\nshape = {r2 = "tbf:8mbit"}\n'
                          '[vary]\n"testbed.routers" = [1, 2]\n')
    assert got == ["chain.toml:8: testbed.shape.r2: not a router of this chain: it has r1 "
                   "(routers = 1)"], got


# ---- a real campaign: one chain run, one single-router run

SCENARIO = """\
duration = 2
[testbed]
routers = 2
# r2's output carries 959 frames of 1042 B a second: the senders offer 1500
shape = { r2 = "tbf:8mbit:20p" }
[senders.sender1]
generator = "iperf3"
tos = 4
size = 1000
rate = 1000
[senders.sender2]
generator = "ditg"
tos = 5
size = 1000
rate = 500
[[conditions]]
name = "high"
[[conditions]]
name = "one"
testbed = { routers = 1, shape = "tbf:8mbit:20p" }
"""


def take_testbed_down():
    Testbed(PREFIX).down()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    base = tmp_path_factory.mktemp("chain")
    scenario = base / "chain.toml"
    scenario.write_text(SCENARIO)
    out = base / "out"
    take_testbed_down()
    try:
        p = cli("campaign", scenario, "-o", out, "--prefix", PREFIX, "--no-path-pdf")
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    finally:
        take_testbed_down()
    assert not namespaces(PREFIX), "the campaign left its testbed up"
    return out


def meta_of(out, cond):
    with open(out / "runs" / cond / "rep1" / "metadata.json") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def chain(campaign):
    run = campaign / "runs" / "high" / "rep1"
    return run, meta_of(campaign, "high"), hopscope.load_path([str(run / "r1.hsr"),
                                                                str(run / "r2.hsr")])


def flow(packets, meta, name):
    """The data packets of one sender in the path's packets table."""
    s, cfg = meta["senders"][name], meta["condition"]["senders"][name]
    return packets[(packets["src"] == s["address"]) & (packets["sport"] == s["sport"])
                   & (packets["dport"] == cfg["port"]) & (packets["proto"] == 17)
                   & (packets["ip_len"] == 28 + cfg["size"]["value"])]


def test_each_router_recorded_into_its_file_with_its_id(chain):
    run, meta, p = chain
    names = set(os.listdir(run))
    assert {"r1.hsr", "r2.hsr", "path", "truth.parquet"} <= names and "run.hsr" not in names
    assert [h.router for h in p.hops] == ["r1", "r2"]
    for role in ("r1", "r2"):
        rec = meta["recorders"][role]
        assert rec["exit"] == 0 and rec["command"][rec["command"].index("--router-id") + 1] == role
        ifs = ",".join(i["name"] for i in meta["testbed"]["interfaces"][role])
        cmd = rec["command"]
        assert cmd[cmd.index("--in") + 1] == cmd[cmd.index("--out") + 1] == ifs
    assert meta["record_problems"] == []
    # the accounting holds at whatever rate a sender reached on a busy machine,
    # and whatever ITGRecv left unread at its flow's end (testlib.ditg_logged_but_a_tail)
    assert [w for w in meta["warnings"]
            if "did not reach the rate" not in w and "ITGRecv logged" not in w] == []
    assert sorted(os.listdir(run / "path")) == ["hops.parquet", "packets.parquet", "path.json"]


def test_every_packet_is_accounted_for_along_the_path(chain):
    """Per sender: every packet it sent entered at r1 and was delivered
    toward the receiver, dropped by r2's shaper, or flagged t4_unseen,
    nothing else; r1 dropped none. A t4_unseen record (docs/record-format.md)
    is one the recorder judged to have left: the kernel did not run the t4
    probe. Behind a dropping qdisc it may instead be a drop whose kfree_skb
    was skipped alike; the receiver's kernel count and r2's qdisc counter
    tell the two apart in number, exactly, never by a margin."""
    run, meta, p = chain
    packets = pd.read_parquet(run / "path" / "packets.parquet")
    assert len(packets) == len(p.packets)
    flags = [h.df.set_index("seq")["flags"] for h in p.hops]
    silent = data_unseen = 0  # data packets flagged as left r2 but never received
    for name in ("sender1", "sender2"):
        f = flow(packets, meta, name)
        assert (f["first_hop"] == 1).all()
        assert len(f) == meta["senders"][name]["sent"] == meta["truth"][name]["sent"]
        fate = f["fate"]
        assert set(fate) <= {"delivered", "dropped", "not followed by the tracer"}, set(fate)
        assert (f.loc[fate == "dropped", "fate_hop"] == 2).all()
        lost = f[fate == "not followed by the tracer"]
        assert (lost["fate_hop"] == 2).all() and all(flags[1].loc[lost["h2_seq"]] & T4_UNSEEN)
        delivered, received = int((fate == "delivered").sum()), meta["senders"][name]["received"]
        # what reached the receiver left r2: delivered, or flagged so
        assert delivered <= received <= delivered + len(lost) and received > 0
        silent += delivered + len(lost) - received
        data_unseen += len(lost)
        # the generators' truth is r1's: it dropped none
        t = meta["truth"][name]
        assert t["dropped"] == t["not_recorded"] == 0 and t["forwarded"] + t["untraced"] == len(f)
    queues = meta["interfaces"]["router_out_queues"]
    # what the senders sent the receiver, control packets too (not, say, the
    # MLD reports a router takes in itself)
    path = p.packets[p.packets["dst"] == meta["addresses"]["receiver"]]
    dropped = path[path["fate"] == "dropped"]
    assert set(dropped["fate_hop"]) == {2} and set(dropped["h2_reason"]) == {"QDISC_DROP"}
    assert queues["r1"]["dropped"] == 0
    # r2's qdisc dropped what was recorded dropped, and the flagged data packets
    # that never arrived; control packets flagged at r2 may be such drops too
    all_unseen = int(((path["fate"] == "not followed by the tracer")
                      & (path["fate_hop"] == 2)).sum())
    unseen_drops = queues["r2"]["dropped"] - len(dropped)
    assert silent <= unseen_drops <= silent + all_unseen - data_unseen
    assert meta["interfaces"]["router_out_queue"]["dropped"] == queues["r2"]["dropped"]
    # every packet that entered the path has one fate
    entered = p.loss.groupby("entered")["packets"].sum()
    assert entered[1] == (p.packets["first_hop"] == 1).sum()


def test_metadata_counts_each_router_and_summarises_the_path(chain):
    run, meta, p = chain
    routers = meta["counts"]["routers"]
    assert list(routers) == ["r1", "r2"]
    for role, c in routers.items():
        ifs = meta["interfaces"][role]
        r = next(x for x in meta["testbed"]["routers"] if x["role"] == role)
        assert c["forwarded"] == ifs[r["out"]]["tx_packets"]
        assert c["received"] == sum(ifs[i]["rx_packets"] for i in r["in"])
        assert c["out_queue_dropped"] == meta["interfaces"]["router_out_queues"][role]["dropped"]
    assert meta["counts"]["forwarded"] == routers["r2"]["forwarded"]
    # r2 sent on every packet the path delivered (and whatever it made itself)
    assert routers["r2"]["forwarded"] >= s_delivered(p)
    s = meta["path"]
    assert s["routers"] == ["r1", "r2"] and s["problems"] == p.problems == []
    assert [(o["hop"], o["method"], o["uncertainty_ns"]) for o in s["offsets"]] == \
        [(1, "reference", 0.0), (2, "same clock", 0.0)]
    fates = p.packets["fate"].astype(str).value_counts()
    assert s["entered"] == len(p.packets) == sum(s["fates"].values())
    assert s["fates"] == {k: int(v) for k, v in fates.items() if v}
    dropped = p.packets[p.packets["fate"] == "dropped"]["fate_hop"].value_counts()
    assert s["dropped_by_hop"] == {p.hops[k - 1].router: int(n) for k, n in dropped.items()}
    assert s["dropped_by_hop"]["r2"] > 0
    transit = p.packets.loc[p.packets["fate"] == "delivered", "transit"].to_numpy()
    assert s["transit_packets"] == len(transit) == fates["delivered"]
    assert (s["transit_p50_ns"], s["transit_p99_ns"]) == tuple(np.quantile(transit, [0.5, 0.99]))


def s_delivered(p):
    return int((p.packets["fate"] == "delivered").sum())


def test_a_single_router_run_is_as_before(campaign):
    run = campaign / "runs" / "one" / "rep1"
    names = set(os.listdir(run))
    assert "run.hsr" in names and not names & {"r1.hsr", "path"}
    meta = meta_of(campaign, "one")
    assert "path" not in meta and "recorders" not in meta
    assert "--router-id" not in meta["recorder"]["command"]
    assert list(meta["counts"]["routers"]) == ["router"]


def test_the_dataset_holds_every_routers_records_with_hop_and_router(campaign, chain):
    run, _, p = chain
    part = pd.read_parquet(os.path.join(partition(str(campaign), "high", 1), PART))
    for k, h in enumerate(p.hops, 1):
        mine = part[part["hop"] == k]
        assert set(mine["router"]) == {h.router}
        np.testing.assert_array_equal(mine["t1"], h.df["t1"])
        np.testing.assert_array_equal(mine["seq"], h.df["seq"].astype(np.int64))
    assert len(part) == sum(len(h.df) for h in p.hops)
    one = hopscope.load(str(campaign / "runs" / "one" / "rep1" / "run.hsr"))
    got = duckdb.sql(f"""
        SELECT condition, hop, router, count(*) AS n
        FROM read_parquet('{campaign}/packets/*/*/*.parquet', hive_partitioning = true)
        GROUP BY ALL ORDER BY ALL""").fetchall()
    assert got == [("high", 1, "r1", len(p.hops[0].df)), ("high", 2, "r2", len(p.hops[1].df)),
                   ("one", 1, one.attrs["header"]["router_id"], len(one))]


def test_tables_per_router_and_the_paths_table(campaign, chain):
    run, meta, p = chain
    runs = pd.read_csv(campaign / "runs.csv")
    assert list(runs.columns[:4]) == ["condition", "repetition", "router", "stage"]
    high = runs[runs["condition"] == "high"].set_index(["router", "stage"])
    for k, h in enumerate(p.hops, 1):
        complete = h.df[h.df["status"] == "complete"]
        row = high.loc[(h.router, "d_oq")]
        assert row["count"] == len(complete) == row["complete"]
        assert row["p99"] == pytest.approx(np.quantile(complete["d_oq"].dropna(), 0.99))
        assert row["forwarded"] == meta["counts"]["routers"][h.router]["forwarded"]
    summary = pd.read_csv(campaign / "summary.csv")
    assert set(summary.loc[summary["condition"] == "high", "router"]) == {"r1", "r2"}
    # the PDF draws a chain's routers as conditions of their own
    text = subprocess.run(["pdftotext", "-layout", str(campaign / "summary.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "high r1" in text and "high r2" in text
    # the per-run table: one row per router of the chain's run, each its own count
    per_run = text.split("Per run:")[1]
    for h in p.hops:
        forwarded = meta["counts"]["routers"][h.router]["forwarded"]
        rows = re.findall(rf"high\s+1\s+{h.router}\s+\d+\s+\d+\s+(\d+)\s", per_run)
        assert rows == [str(forwarded)], (h.router, rows)
    paths = pd.read_csv(campaign / "paths.csv")
    assert len(paths) == 1  # the chain run only
    row = paths.iloc[0]
    s = meta["path"]
    assert (row["condition"], row["repetition"], row["routers"]) == ("high", 1, 2)
    assert (row["entered"], row["delivered"], row["dropped_hop1"], row["dropped_hop2"],
            row["other"]) == (s["entered"], s["fates"]["delivered"],
                              s["dropped_by_hop"].get("r1", 0), s["dropped_by_hop"]["r2"],
                              s["entered"] - s["fates"]["delivered"]
                              - sum(s["dropped_by_hop"].values()))
    assert (row["transit_p50_ns"], row["transit_p99_ns"]) == pytest.approx(
        (s["transit_p50_ns"], s["transit_p99_ns"]))


def test_documented_duckdb_path_query_gives_load_paths_table(campaign, chain):
    """docs/campaigns.md's ```py block on this campaign's chain run."""
    with open(DOC) as f:
        (code,) = re.findall(r"```py\n(.*?)```", f.read(), re.S)
    scope = {}
    exec(code.replace("results/path/", f"{campaign}/"), scope)
    same_table(scope["p"], scope["packets"], 2)
    assert len(scope["packets"]) == len(chain[2].packets)


# pyspark warns about pandas 3 as a session starts, and in toPandas
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
def test_documented_spark_path_query_gives_load_paths_table(campaign, chain):
    """docs/campaigns.md's Spark sentence: the part filtered by hop as views."""
    p = chain[2]
    part = os.path.join(partition(str(campaign), "high", 1), PART)
    with local_spark() as spark:
        df = spark.read.parquet(part)
        for k in range(1, len(p.hops) + 1):
            df.where(df.hop == k).createOrReplaceTempView(f"hop{k}")
        got = spark.sql(path_sql.query(p)).toPandas()
    same_table(p, got, 2)
