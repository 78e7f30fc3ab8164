"""The CI campaign (traffic/campaigns/ci.toml: 2 conditions x 2 repetitions)
end to end on the real testbed, recorder and generators, interrupted twice on
the way: Ctrl-C during the second run, then kill -9 during the third. The
third invocation must finish the campaign without redoing finished runs; then
the summary, the dataset and the documented DuckDB and Spark queries are
checked against the record files themselves: the expected values are computed
here from each record's raw instants, not by the code that wrote them."""
import fcntl
import json
import os
import re
import signal
import time

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import hopscope
from hopscope.record.dataset import PART, partition
from hopscope.traffic.scenario.load import load_scenario
from campaignkit import (PREFIX, ROOT, hopscope as cli, our_namespaces, our_processes,
                               stop_group, take_testbed_down)
from spark import local_spark
from testlib import wait_for

CI = os.path.join(ROOT, "traffic", "campaigns", "ci.toml")
DOC = os.path.join(ROOT, "docs", "campaigns.md")
RUNS = 4
# each stage's delay: (later instant, earlier instant); an instant of 0 was not seen
STAGES = {"d_iq": ("t2", "t1"), "d_p": ("t3", "t2"), "d_oq": ("t4", "t3"),
          "transit": ("t4", "t1")}


def run_dirs(out):
    base = os.path.join(out, "runs")
    return sorted(os.path.join(base, c, r) for c in sorted(os.listdir(base))
                  for r in os.listdir(os.path.join(base, c))) if os.path.isdir(base) else []


def metadata(run_dir):
    try:
        with open(os.path.join(run_dir, "metadata.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def finished(out):
    return [d for d in run_dirs(out) if ((metadata(d) or {}).get("campaign") or {}).get("finished")]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """Runs the campaign in three invocations; returns what each did."""
    out = str(tmp_path_factory.mktemp("campaign") / "ci")
    take_testbed_down()
    procs = []
    try:
        # 1: Ctrl-C (SIGINT to the job's process group) once run 2 is under way
        p = cli("campaign", CI, "-o", out, "--prefix", PREFIX)
        procs.append(p)
        assert wait_for(lambda: len(finished(out)) == 1 and len(run_dirs(out)) == 2, 120), \
            "first run did not finish: " + str(run_dirs(out))
        stop_group(p, signal.SIGINT)
        _, err1 = p.communicate(timeout=60)
        assert p.returncode == 130, err1
        assert not our_namespaces(), "Ctrl-C left the testbed up"
        first = {d: metadata(d)["campaign"]["started"] for d in finished(out)}

        # 2: kill -9 of the campaign once run 3 is under way: it cleans nothing up,
        # but the recorder and generators it started must end with it
        p = cli("campaign", CI, "-o", out, "--prefix", PREFIX)
        procs.append(p)
        assert wait_for(lambda: len(finished(out)) == 2 and len(run_dirs(out)) == 3, 120)
        time.sleep(1)  # into the run: testbed up, generators started
        # on a busy machine the testbed can take longer to come up
        assert wait_for(our_processes, 60), "run 3 should be under way"
        os.kill(p.pid, signal.SIGKILL)
        p.communicate()
        assert wait_for(lambda: not our_processes(), 15), \
            f"kill -9 of the campaign left {our_processes()}"
        second = {d: metadata(d)["campaign"]["started"] for d in finished(out)}
        half = [d for d in run_dirs(out) if d not in second]

        # 3: to the end
        t3 = time.time()
        p = cli("campaign", CI, "-o", out, "--prefix", PREFIX)
        procs.append(p)
        _, err3 = p.communicate(timeout=240)
        assert p.returncode == 0, err3
        yield dict(out=out, err1=err1, err3=err3, first=first, second=second, half=half, t3=t3)
    finally:
        for p in procs:
            if p.poll() is None:
                stop_group(p)
        take_testbed_down()


@pytest.fixture(scope="module")
def records(campaign):
    """Each run's record file, loaded: {(condition, repetition): DataFrame}."""
    out = {}
    for d in run_dirs(campaign["out"]):
        c = metadata(d)["campaign"]
        out[(c["condition_name"], c["repetition"])] = hopscope.load(os.path.join(d, "run.hsr"))
    return out


def test_interrupted_campaign_resumes_without_redoing_finished_runs(campaign):
    out = campaign["out"]
    assert "interrupted; 1 of 4 runs finished" in campaign["err1"]
    assert len(campaign["first"]) == 1 and len(campaign["second"]) == 2
    assert len(campaign["half"]) == 1, "kill -9 should leave run 3 half done"
    assert "2 of 4 runs already finished" in campaign["err3"]
    assert "4 of 4 runs finished" in campaign["err3"]
    done = {d: metadata(d)["campaign"]["started"] for d in finished(out)}
    assert len(done) == RUNS == len(run_dirs(out))
    for d, started in campaign["second"].items():  # finished before: kept as they were
        assert done[d] == started
    for d in set(done) - set(campaign["second"]):  # the killed run was done again
        assert done[d] >= campaign["t3"]
    assert not our_namespaces()


def test_every_run_folder_has_its_files(campaign):
    for d in run_dirs(campaign["out"]):
        names = os.listdir(d)
        for want in ("run.hsr", "scenario.toml", "metadata.json"):
            assert want in names, (d, names)
        with open(os.path.join(d, "scenario.toml")) as f, open(CI) as g:
            assert f.read() == g.read()


def test_each_run_counts_what_its_generators_router_and_recorder_did(campaign, records):
    asked = {c.name: sum(s.packets() for s in c.senders)
             for c in load_scenario(CI).conditions()}
    for d in run_dirs(campaign["out"]):
        meta = metadata(d)
        c, n = meta["campaign"], meta["campaign"]["counts"]
        assert n["sent"] == asked[c["condition_name"]] == sum(
            s["sent"] for s in meta["senders"].values()), (d, n)
        # every packet reached the receiver, and no socket refused one. Not
        # counted by the generators, which may miss a few (iperf3's server
        # stops reading at its test's end, ITGRecv leaves the last ones
        # unread on a busy CPU: testlib), nor by UDP's InDatagrams, which
        # counts what an application read (udp_recvmsg), not what arrived
        udp = meta["interfaces"]["receiver_udp"]
        rx = meta["interfaces"]["receiver"]["rx-eth0"]["rx_packets"]
        assert rx >= n["sent"] and udp["RcvbufErrors"] == udp["InErrors"] == 0, (d, rx, udp)
        assert n["received"] <= n["sent"], (d, n)
        # the generators' control traffic crosses the router too
        assert n["forwarded"] >= n["received"], (d, n)
        df = records[(c["condition_name"], c["repetition"])]
        assert n["records"] == len(df)
        # every data packet left the router: complete, or flagged t4_unseen
        # where the kernel skipped the t4 probe (docs/troubleshooting.md); the control
        # packets too
        unseen = int(((df["flags"] & 0x80) != 0).sum())
        assert n["complete"] == int((df["status"] == "complete").sum())
        assert n["complete"] + unseen >= n["sent"], (d, n, unseen)


def test_dataset_holds_every_record_with_portable_types(campaign, records):
    ds = pads.dataset(os.path.join(campaign["out"], "packets"), format="parquet",
                      partitioning="hive")
    allowed = {pa.bool_(), pa.int16(), pa.int32(), pa.int64(), pa.float64(), pa.string()}
    for f in ds.schema:
        if f.name == "repetition":
            continue
        # Spark reads these as boolean, short, int, long, double, string: no unsigned,
        # no dictionary-only categoricals, no null-typed columns
        assert f.type in allowed, (f.name, f.type)
    t = ds.to_table()
    assert t.num_rows == sum(len(df) for df in records.values())
    for (cond, rep), df in records.items():
        part = pd.read_parquet(os.path.join(partition(campaign["out"], cond, rep), PART))
        assert len(part) == len(df)
        np.testing.assert_array_equal(part["t1"], df["t1"])
        np.testing.assert_array_equal(part["key"], df["key"].astype(np.int64))
        assert list(part["status"]) == list(df["status"].astype(str))
        assert part["d_iq"].isna().sum() == df["d_iq"].isna().sum()


def documented(lang):
    """The one ```lang block of docs/campaigns.md."""
    with open(DOC) as f:
        blocks = re.findall(rf"```{lang}\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, f"docs/campaigns.md should have one {lang} block"
    return blocks[0]


def stage_delays(df, stage):
    """(delays, missing) of a stage over df's complete records, computed from
    the raw instants: the differences where both were seen (negative ones
    too), and how many records missed one of them."""
    later, earlier = STAGES[stage]
    done = df[df["status"] == "complete"]
    t_late, t_early = done[later].to_numpy(np.int64), done[earlier].to_numpy(np.int64)
    seen = (t_late != 0) & (t_early != 0)
    return t_late[seen] - t_early[seen], int(np.count_nonzero(~seen))


def expected_stats(df, stage):
    """What runs.csv should say of a stage: statistics of the delays that were
    seen and are not negative (those two counted apart), quantiles
    interpolated linearly."""
    d, missing = stage_delays(df, stage)
    v = d[d >= 0]
    return dict(count=len(v), mean=v.mean(), p50=np.quantile(v, 0.5), p99=np.quantile(v, 0.99),
                p99_9=np.quantile(v, 0.999), max=v.max(), negative=len(d) - len(v),
                missing=missing)


def test_documented_duckdb_query_gives_each_runs_delays(campaign, records):
    sql = documented("sql").replace("results/ci/", campaign["out"] + "/")
    got = duckdb.sql(sql).df()
    assert len(got) == RUNS
    for row in got.itertuples():
        df = records[(row.condition, row.repetition)]
        d_iq, _ = stage_delays(df, "d_iq")
        assert row.packets == int((df["status"] == "complete").sum())
        assert row.d_iq_p50_us == pytest.approx(np.quantile(d_iq, 0.5) / 1e3)
        assert row.d_iq_p99_us == pytest.approx(np.quantile(d_iq, 0.99) / 1e3)


# pyspark warns about pandas 3 as a session starts; nothing here goes through pandas
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_documented_spark_query_gives_each_runs_delays(campaign, records):
    code = documented("python").replace("results/ci/", campaign["out"] + "/")
    scope = {}
    with local_spark() as spark:
        from pyspark.sql import functions as F
        exec(code, scope)
        assert scope["spark"] is spark
        rows = scope["per_run"].collect()
        # every record, whatever its status, with its instants as recorded
        whole = scope["df"].groupBy("condition", "repetition").agg(
            F.count("*").alias("n"), F.sum("t1").alias("t1"), F.sum("t4").alias("t4")).collect()
    assert sorted((r["condition"], r["repetition"]) for r in rows) == sorted(records)
    for r in rows:
        df = records[(r["condition"], r["repetition"])]
        d_iq, _ = stage_delays(df, "d_iq")
        assert r["packets"] == int((df["status"] == "complete").sum())
        # percentile_approx gives the smallest value with at least that share of
        # the values at or below it (exact under `accuracy` values): numpy's
        # inverted_cdf
        for name, p in (("d_iq_p50_us", 0.5), ("d_iq_p99_us", 0.99)):
            assert r[name] == pytest.approx(np.quantile(d_iq, p, method="inverted_cdf") / 1e3)
    assert len(whole) == RUNS
    for r in whole:
        df = records[(r["condition"], r["repetition"])]
        assert (r["n"], r["t1"], r["t4"]) == (len(df), int(df["t1"].sum()), int(df["t4"].sum()))


def test_summary_tables_and_pdf(campaign, records):
    out = campaign["out"]
    runs = pd.read_csv(os.path.join(out, "runs.csv"))
    summary = pd.read_csv(os.path.join(out, "summary.csv"))
    pd.testing.assert_frame_equal(pd.read_parquet(os.path.join(out, "summary.parquet")), summary,
                                  check_dtype=False)
    want = {(cond, rep, stage): expected_stats(df, stage)
            for (cond, rep), df in records.items() for stage in STAGES}
    assert len(runs) == len(want) == RUNS * len(STAGES)
    for row in runs.itertuples():
        key = (row.condition, row.repetition, row.stage)
        for stat, value in want[key].items():
            assert getattr(row, stat) == pytest.approx(value), (key, stat)
    assert len(summary) == 2 * len(STAGES) and (summary["runs"] == 2).all()
    for row in summary.itertuples():  # summary = mean and std over the repetitions
        reps = [w for (cond, _, stage), w in want.items()
                if (cond, stage) == (row.condition, row.stage)]
        assert len(reps) == 2
        p99 = [w["p99"] for w in reps]
        assert row.p99_mean == pytest.approx(np.mean(p99))
        assert row.p99_std == pytest.approx(np.std(p99, ddof=1))
        assert row.count_mean == pytest.approx(np.mean([w["count"] for w in reps]))
    # per sender: the CI campaign's two senders, TOS 4 and 5, apart
    senders = pd.read_csv(os.path.join(out, "senders.csv"))
    for row in senders[senders["tos"].isin([4, 5])].itertuples():
        reps = [df for (cond, _), df in records.items() if cond == row.condition]
        p99 = [expected_stats(df[df["tos"] == row.tos], row.stage)["p99"] for df in reps]
        assert row.runs == 2 and row.p99_mean == pytest.approx(np.mean(p99)), row
    assert len(senders[senders["tos"].isin([4, 5])]) == 2 * 2 * len(STAGES)
    with open(os.path.join(out, "summary.pdf"), "rb") as f:
        pdf = f.read()
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page\n") + pdf.count(b"/Type /Page ") >= 3


def test_list_says_every_run_is_finished(campaign):
    p = cli("campaign", CI, "-o", campaign["out"], "--list")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.count(": finished (") == RUNS and f"{RUNS} of {RUNS} runs finished" in out


def test_a_changed_scenario_is_refused_before_anything_runs(campaign, tmp_path):
    with open(CI) as f:
        text = f.read()
    changed = tmp_path / "ci.toml"
    changed.write_text(_change_a_setting(text))
    p = cli("campaign", changed, "-o", campaign["out"], "--prefix", PREFIX)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "other settings" in err, err
    with open(os.path.join(campaign["out"], "scenario.toml")) as f:
        assert f.read() == text  # the campaign's copy is untouched


def _change_a_setting(text):
    """ci.toml with its payload size changed (every condition's settings differ)."""
    new, n = re.subn(r"(?m)^(\s*size\s*=\s*)(\d+)", lambda m: f"{m[1]}{int(m[2]) + 1}", text)
    assert n, "ci.toml has no size = N line to change"
    return new


def test_user_errors_are_named(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    p = cli("campaign", CI, "-o", other)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "holds no campaign" in err, err
    assert os.listdir(other) == ["notes.txt"]

    bad = tmp_path / "bad.toml"
    bad.write_text("no_such_key = 1\n")
    p = cli("campaign", bad, "-o", tmp_path / "new")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "bad.toml" in err, err  # a bad file: a usage error
    assert not (tmp_path / "new").exists()

    p = cli("campaign", CI)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "-o" in err


def test_a_folder_is_locked_while_a_campaign_writes_it(tmp_path):
    out = tmp_path / "locked"
    out.mkdir()
    (out / "campaign.json").write_text('{"format": "hopscope-campaign/1"}')
    with open(out / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("12345")
        held.flush()
        p = cli("campaign", CI, "-o", out, "--prefix", PREFIX)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "another campaign (pid 12345)" in err, err
