"""The path join in SQL (analysis/path_sql.py) on DuckDB gives load_path's
packets table, case by case."""
import json

import numpy as np
import pandas as pd
import pytest

from hopscope.analysis import path_sql
from hopscope.analysis.path import load_path
from path_frames import chain, cut, same_table, to_parquet
from spark import local_spark

duckdb = pytest.importorskip("duckdb")


def sql_packets(frames, p, folder):
    con = duckdb.connect()
    for k, f in enumerate(to_parquet(frames, folder), 1):
        con.execute(f"CREATE VIEW hop{k} AS SELECT * FROM read_parquet('{f}')")
    return con.execute(path_sql.query(p)).df()


@pytest.mark.parametrize("case", [
    dict(hops=2),
    dict(hops=3, queue_hop=2, theta=[0, 3_000_000, -9_000_000], drift_ppm=10,
         boots=["a", "b", "c"]),
    dict(hops=1, n_rev=0),
    dict(hops=3, unseen_every=100),
    dict(hops=2, backlog_ns=700, theta=[0, -5_000_000], boots=["a", "b"]),
])
def test_query_gives_load_paths_table(case, tmp_path):
    frames, _ = chain(**case)
    p = load_path(frames)
    same_table(p, sql_packets(frames, p, tmp_path), case["hops"])


def test_collisions_nat_and_mid_path(tmp_path):
    frames, _ = chain(n_rev=300, hops=3, drop_every=10**9)
    up = frames[0]
    twin = up.iloc[[100]].copy()
    twin[["t1", "t2", "t3", "t4"]] += 1000
    twin["seq"] = np.uint64(99)
    nat = up.index < 50
    up["nat_src"] = pd.Categorical(np.where(nat, "192.0.2.1", None))
    frames[0] = pd.concat([up, twin], ignore_index=True)
    frames[0].attrs = up.attrs
    mid = frames[1]
    extra = mid.iloc[:5].copy()
    extra["key"] = np.arange(1, 6, dtype=np.uint32)
    extra["in_if"] = pd.Categorical(["side"] * 5)
    extra["seq"] = np.arange(1, 6, dtype=np.uint64)
    # a drop recorded at hop 2 whose packet hop 3 saw
    mid.loc[300, ["t4", "status", "drop_stage", "out_if"]] = [0, "dropped", "t3", None]
    frames[1] = pd.concat([mid.iloc[50:], extra], ignore_index=True)
    frames[1].attrs = mid.attrs
    p = load_path(frames)
    fates = p.packets["fate"].astype(str).value_counts()
    assert fates["collision at the next hop"] == 2 and fates["NAT changed its key"] == 50
    assert (p.packets["first_hop"] == 2).sum() == 5 + 1
    same_table(p, sql_packets(frames, p, tmp_path), 3)


# pyspark warns about pandas 3 as a session starts, and in toPandas
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
def test_query_on_spark(tmp_path):
    frames, _ = chain(hops=3, queue_hop=2, theta=[0, 3_000_000, -9_000_000], drift_ppm=10,
                      boots=["a", "b", "c"], n_fwd=1500, n_rev=500)
    p = load_path(frames)
    with local_spark() as spark:
        for k, f in enumerate(to_parquet(frames, tmp_path), 1):
            spark.read.parquet(f).createOrReplaceTempView(f"hop{k}")
        got = spark.sql(path_sql.query(p)).toPandas()
    same_table(p, got, 3)


def test_from_path_json_with_recordings_edges(tmp_path):
    """The query made from path.json alone (hopscope path's), on recordings
    that start and stop at different times."""
    from hopscope.report.path import as_json
    frames, _ = chain(theta=[0, 2_000_000], drift_ppm=-30, boots=["a", "b"])
    cut(frames)
    p = load_path(frames)
    assert (p.packets["fate"] == "next hop not recording").sum() > 0
    con = duckdb.connect()
    for k, f in enumerate(to_parquet(frames, tmp_path), 1):
        con.execute(f"CREATE VIEW hop{k} AS SELECT * FROM read_parquet('{f}')")
    j = json.loads(json.dumps(as_json(p)))
    same_table(p, con.execute(path_sql.from_json(j)).df(), 2)
