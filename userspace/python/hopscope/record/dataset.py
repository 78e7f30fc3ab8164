"""A campaign's packets as one Parquet dataset, hive-partitioned by run:

    OUT/packets/condition=NAME/repetition=K/part-0.parquet

one row per record of the run's record file (the columns of hopscope.load).
DuckDB reads it with read_parquet('OUT/packets/**/*.parquet',
hive_partitioning=true), Spark with spark.read.parquet('OUT/packets'): the
types are ones both know without conversion. Unsigned integers are widened to
the next signed type (Spark has no unsigned types), categorical columns are
plain strings (dictionary-encoded on disk all the same), missing delays are
nulls. The partition columns live in the folder names only, as both expect.
A condition name's '=' is written %3D there (hive folders are KEY=VALUE);
both readers give back the name.
Files are written under a hidden name and renamed, so a reader never sees half
a file (Spark and DuckDB's globs skip names that start with '.').
"""
import os
import shutil
import urllib.parse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..files import atomic

PACKETS = "packets"
PART = "part-0.parquet"

# unsigned -> the signed type that holds every value
_WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}
_INT64_MAX = np.iinfo(np.int64).max


class DatasetError(Exception):
    pass


def partition(root, condition, repetition):
    """The folder of one run's part of the dataset. The condition is
    percent-encoded past letters, digits and ._-~+ (a name's '=' as %3D), as
    Spark writes partition values; DuckDB and Spark decode it."""
    value = urllib.parse.quote(condition, safe="+")
    return os.path.join(root, PACKETS, f"condition={value}", f"repetition={repetition}")


def portable(table):
    """table with only types DuckDB and Spark both read: see the module text."""
    fields, columns = [], []
    for field, column in zip(table.schema, table.columns):
        t = field.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_large_string(t) or pa.types.is_null(t):
            t = pa.string()
        if t in _WIDER:
            t = _WIDER[t]
        elif t == pa.uint64():
            biggest = pc.max(column).as_py()
            if biggest is not None and biggest > _INT64_MAX:
                raise DatasetError(f"column {field.name}: value {biggest} does not fit a "
                                   "signed 64-bit integer (Spark's largest)")
            t = pa.int64()
        fields.append(pa.field(field.name, t))
        columns.append(column.cast(t))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def write_run(df, root, condition, repetition):
    """Write one run's records (a hopscope.load DataFrame); returns the file's path."""
    table = portable(pa.Table.from_pandas(df, preserve_index=False))
    folder = partition(root, condition, repetition)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, PART)
    with atomic(path) as tmp:  # hidden while written: readers of the dataset skip dot files
        pq.write_table(table, tmp)
    return path


def remove_run(root, condition, repetition):
    """Forget one run's part (before the run is done again)."""
    shutil.rmtree(partition(root, condition, repetition), ignore_errors=True)
