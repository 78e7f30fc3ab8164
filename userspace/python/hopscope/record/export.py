"""Write a loaded record file as Parquet or CSV (also `hopscope export`).

Parquet keeps the categorical columns (as dictionaries) and the run's metadata:
the header, trailer and final counters as JSON under the key-value metadata
keys "hopscope.header", "hopscope.trailer" and "hopscope.counters" (with
"hopscope.truncated", "hopscope.problems", "hopscope.dropped_records": records
of damaged chunks left out, and "hopscope.notes"), and
df.attrs for pandas (pd.read_parquet restores it). CSV holds the rows only.
"""
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .load import add_verify_options, load

META_KEYS = ("header", "trailer", "counters", "truncated", "problems", "dropped_records",
             "notes")


def _table(df):
    return pa.Table.from_pandas(df, preserve_index=False)


def to_parquet(df, path):
    """Write df (from hopscope.load) to a Parquet file with the run's metadata."""
    table = _table(df)
    meta = dict(table.schema.metadata or {})
    for key in META_KEYS:
        if key in df.attrs:
            meta[f"hopscope.{key}".encode()] = json.dumps(df.attrs[key]).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def metadata(path):
    """The hopscope.* metadata of a Parquet file written by to_parquet, as a dict."""
    meta = pq.read_schema(path).metadata or {}
    return {k.decode()[len("hopscope."):]: json.loads(v)
            for k, v in meta.items() if k.startswith(b"hopscope.")}


def to_csv(df, path):
    """Write df as CSV: a header line, then one line per packet; missing values empty."""
    pacsv.write_csv(_table(df), path)


# ---- `hopscope export` ----

def add_arguments(p):
    p.add_argument("file", help="record file (.hsr) written by `hopscope record`")
    p.add_argument("--parquet", metavar="OUT", help="write Parquet here")
    p.add_argument("--csv", metavar="OUT", help="write CSV here (rows only, no run metadata)")
    add_verify_options(p, "exported as if whole")
    p.add_argument("--strict", action="store_true",
                   help="fail on a truncated or damaged file instead of exporting what is whole")
    p.epilog = ("examples:\n"
                "  hopscope export run.hsr --parquet run.parquet\n"
                "  hopscope export run.hsr --csv run.csv --strict")


def run(args, parser):
    if not (args.parquet or args.csv):
        parser.error("say where to write: --parquet OUT and/or --csv OUT")
    df = load(args.file, verify=args.verify, strict=args.strict)
    for out, write in ((args.parquet, to_parquet), (args.csv, to_csv)):
        if out:
            write(df, out)
            print(f"{out}: {len(df)} records, {len(df.columns)} columns")
    return 0
