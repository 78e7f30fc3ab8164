"""The COLUMNS chunk (format version 3): records a column at a time.

Its layout is HS_COLUMN_LIST in include/hopscope_file.h: a u64 of the
columns stored, then each stored column, padded to 8 bytes; a column left
out is 0 in every record; every stage but t1 is an int32 from t1, UNSEEN
for 0. A Columns reads fields out of the mapped chunk without copying the
records: load copies each field in one pass over its own bytes.
"""
import numpy as np

from . import format as fmt
from . import header as h

COLUMNS = tuple((name, width) for _, width, name in h.COLUMN_LIST)
UNSEEN = np.int32(np.uint32(h.COLUMN_UNSEEN).view(np.int32))
_TYPES = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}
# the stages stored as int32 from t1, in column order
DELTA_STAGES = tuple(s for s in fmt.STAGE_NAMES if s != "t1")
# the address fields are four u32 columns each
_WORDS = {f: [f"{f}{i}" for i in range(4)] for f in ("saddr", "daddr")}


def size(present, count):
    """The payload bytes of count records with these columns stored."""
    return 8 + sum(fmt.padded(count * w) for i, (_, w) in enumerate(COLUMNS)
                   if present >> i & 1)


class Columns:
    """count records of one COLUMNS chunk, or rows lo..hi of them."""

    dtype = fmt.RECORD_DTYPE

    def __init__(self, cols, count):
        self._cols, self._count = cols, count  # name -> array, or None: left out

    @classmethod
    def parse(cls, buf, offset, nbytes, count):
        """The chunk's columns in buf (mapped); ValueError saying why if its
        length does not match the columns it says it stores."""
        if nbytes < 8:
            raise ValueError(f"{nbytes} payload bytes, shorter than its column list")
        present = int(np.frombuffer(buf, "<u8", 1, offset)[0])
        if present >> len(COLUMNS):
            raise ValueError(f"column list {present:#x} names columns this reader does not "
                             "know")
        want = size(present, count)
        if want != nbytes:
            raise ValueError(f"{nbytes} payload bytes, but {count} records of column list "
                             f"{present:#x} are {want}")
        cols, at = {}, offset + 8
        for i, (name, width) in enumerate(COLUMNS):
            if present >> i & 1:
                cols[name] = np.frombuffer(buf, _TYPES[width], count, at)
                if name in DELTA_STAGES:
                    cols[name] = cols[name].view("<i4")
                at += fmt.padded(count * width)
            else:
                cols[name] = None
        return cls(cols, count)

    def __len__(self):
        return self._count

    def __getitem__(self, key):
        """A field's values (a new array) by name; rows by slice."""
        if isinstance(key, slice):
            lo, hi, step = key.indices(self._count)
            assert step == 1, "rows of a chunk are a range"
            return Columns({k: None if v is None else v[lo:hi] for k, v in self._cols.items()},
                           max(hi - lo, 0))
        return self.field(key)

    def field(self, name, rows=slice(None)):
        """A field's values at rows (a slice or indexes), a new array of the
        record's type (fmt.RECORD_DTYPE)."""
        if name in _WORDS:
            words = [self._column(w, np.uint32, rows) for w in _WORDS[name]]
            return np.column_stack(words).astype("<u4").view(np.uint8)
        return self._column(name, self.dtype[name], rows)

    def into(self, name, out):
        """A field's values written into out (of the chunk's length and the
        record's type; not the address fields): one pass, no new array."""
        v = self._cols[name]
        if v is None:
            out[...] = 0
        elif name not in DELTA_STAGES:
            np.copyto(out, v, casting="unsafe")
        else:
            t1 = self._cols["t1"]
            if t1 is None:
                np.copyto(out, v, casting="unsafe")
            else:
                np.add(t1.view("<i8"), v, out=out)
            np.copyto(out, 0, where=v == UNSEEN)

    def _column(self, name, dtype, rows):
        v = self._cols[name]
        if v is None:
            n = len(range(self._count)[rows]) if isinstance(rows, slice) else len(rows)
            return np.zeros(n, dtype)
        v = v[rows]
        if name not in DELTA_STAGES:  # read-only where the type is the record's
            return v.astype(dtype, copy=False)
        out = self._column("t1", np.int64, rows)
        out += v
        np.copyto(out, 0, where=v == UNSEEN)
        return out

    def __array__(self, dtype=None, copy=None):
        """Every row as records: np.concatenate(rf.records) reads either kind."""
        out = self.take(np.arange(self._count))
        return out if dtype is None else out.astype(dtype)

    def take(self, rows):
        """These rows as records (struct hs_record): for a few of them."""
        out = np.zeros(len(rows), self.dtype)
        for name in self.dtype.names:
            if name != "reserved":
                out[name] = self.field(name, rows)
        return out


def stage_times(records, rows, stages=None):
    """t[] of these rows (a slice or indexes) of a chunk's records (an array
    of them or a Columns), as u64 in stage order; of the stages at these
    positions in t[] alone, if given (a Columns builds no other column)."""
    stages = range(len(fmt.STAGE_NAMES)) if stages is None else stages
    if isinstance(records, Columns):
        return np.column_stack([records.field(fmt.STAGE_NAMES[i], rows)
                                for i in stages]).view(np.uint64)
    return records.view(np.uint64).reshape(len(records), -1)[rows, :len(fmt.STAGE_NAMES)][
        :, stages]


def encode(records):
    """records (RECORD_DTYPE) as a COLUMNS payload, or None when an instant
    does not fit (as the recorder decides: userspace/columns.c)."""
    t1 = records["t1"].astype(np.int64)
    parts, present = [], 0
    for i, (name, width) in enumerate(COLUMNS):
        if name in DELTA_STAGES:
            t = records[name]
            d = t - t1
            if ((t != 0) & ((t1 == 0) | (d <= UNSEEN) | (d > np.iinfo(np.int32).max))).any():
                return None
            v = np.where(t == 0, UNSEEN, d).astype("<i4")
            stored = (t != 0).any()
        else:
            field, word = (name[:5], int(name[5])) if name[:5] in _WORDS else (name, None)
            v = records[field]
            if word is not None:
                v = np.ascontiguousarray(v).view("<u4")[:, word]
            v = v.astype(_TYPES[width])
            stored = v.any()
        if stored:
            present |= 1 << i
            raw = v.tobytes()
            parts.append(raw + b"\0" * (fmt.padded(len(raw)) - len(raw)))
    return present.to_bytes(8, "little") + b"".join(parts)
