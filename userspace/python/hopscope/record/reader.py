"""Parse a record file (.hsr) into its header, record arrays, flows and counters.

The file is memory-mapped; record arrays are views into the map, so nothing
is copied until a caller asks for columns (load.py). A file that stops being
whole (killed recorder, truncated copy, damaged chunk header) yields every
whole chunk before that point and a message saying where it stops.
"""
import json
import mmap
import os
import zlib
from dataclasses import dataclass

import numpy as np

from . import format as fmt


class RecordFileError(Exception):
    """Not a readable hopscope record file, or (strict) not a whole one."""


class RecordFileWarning(UserWarning):
    """Part of a record file could not be used; what was whole was kept."""


@dataclass
class Chunk:
    index: int      # position in the file, counting every chunk header met
    offset: int     # byte offset of its hs_chunk header
    type: int
    count: int
    nbytes: int     # payload bytes before padding
    crc32: int

    @property
    def name(self):
        return fmt.CHUNK_NAMES.get(self.type, f"type {self.type}")

    @property
    def payload(self):
        return self.offset + fmt.CHUNK_HEADER_SIZE

    @property
    def end(self):
        return self.payload + fmt.padded(self.nbytes)

    def describe(self):
        what = {fmt.CHUNK_RECORDS: "records", fmt.CHUNK_FLOWS: "flows"}.get(self.type)
        items = f", {self.count} {what}" if what else ""
        return f"chunk {self.index} ({self.name}{items}) at byte {self.offset}"


class RecordFile:
    """One parsed record file.

    header      the header JSON (dict)
    records     list of fmt.RECORD_DTYPE arrays, one per whole RECORDS chunk (views of the map)
    flows       fmt.FLOW_DTYPE array, every whole FLOWS chunk in file order
    snapshots   COUNTERS chunk JSONs in file order
    trailer     the END chunk JSON, or None
    chunks      every whole chunk that was used
    problems    what was wrong, one sentence each; empty for a whole, intact file
    truncated   True when there is no END chunk or the file stops being whole before it
    whole_bytes bytes from the start of the file up to the end of the last whole chunk
    """

    def __init__(self, path, verify=False, strict=False):
        self.path = os.fspath(path)
        self.verify = verify
        self.records, self.snapshots, self.chunks, self.problems = [], [], [], []
        self.flows = np.zeros(0, dtype=fmt.FLOW_DTYPE)
        self.trailer = None
        self.truncated = False
        self._map = self._open()
        self.size = len(self._map)
        self.header, first_chunk = self._read_header()
        self.whole_bytes = first_chunk
        self._read_chunks(first_chunk)
        if strict and self.problems:
            raise RecordFileError(self.message())

    @property
    def n_records(self):
        return sum(len(r) for r in self.records)

    @property
    def counters(self):
        """The END trailer, else the last COUNTERS snapshot, else None."""
        return self.trailer if self.trailer is not None else (
            self.snapshots[-1] if self.snapshots else None)

    def message(self):
        """Every problem and what was kept, as one text for a warning or an error."""
        kept = (f"kept {len(self.chunks)} whole chunks with {self.n_records} records, "
                f"bytes 0..{self.whole_bytes} of {self.size}")
        return f"{self.path}: " + "; ".join(self.problems + [kept])

    def _open(self):
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    raise RecordFileError(f"{self.path}: empty file, not a hopscope record file")
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise RecordFileError(f"{self.path}: {e.strerror}") from e

    def _fail(self, why):
        raise RecordFileError(f"{self.path}: {why}")

    def _read_header(self):
        m = self._map
        n = min(self.size, len(fmt.FILE_MAGIC))
        if m[:n] != fmt.FILE_MAGIC[:n]:
            self._fail(f"not a hopscope record file (starts with {bytes(m[:8])!r}, "
                       f"expected {fmt.FILE_MAGIC!r})")
        if self.size < fmt.FILE_HEADER_SIZE:
            self._fail(f"file ends after {self.size} bytes, inside the "
                       f"{fmt.FILE_HEADER_SIZE}-byte file header: nothing was recorded")
        fh = np.frombuffer(m, fmt.FILE_HEADER_DTYPE, 1)[0]
        endian = int(fh["endian"])
        if endian != fmt.ENDIAN_MARK:
            if endian == int.from_bytes(fmt.ENDIAN_MARK.to_bytes(4, "big"), "little"):
                self._fail("written on a big-endian machine; this reader reads "
                           "little-endian files only")
            self._fail(f"endian mark is {endian:#010x}, expected {fmt.ENDIAN_MARK:#010x}: "
                       "file header damaged")
        if fh["version"] != fmt.FILE_VERSION:
            self._fail(f"format version {fh['version']}; this reader reads version "
                       f"{fmt.FILE_VERSION} (use the hopscope that wrote it)")
        if fh["record_size"] != fmt.RECORD_SIZE:
            self._fail(f"record size {fh['record_size']} bytes; this reader's hs_record is "
                       f"{fmt.RECORD_SIZE} bytes (mismatched hopscope versions)")
        hbytes = int(fh["header_bytes"])
        end = fmt.FILE_HEADER_SIZE + hbytes
        if hbytes % fmt.ALIGN:
            self._fail(f"header JSON length {hbytes} is not a multiple of {fmt.ALIGN}: "
                       "file header damaged")
        if end > self.size:
            self._fail(f"file ends at byte {self.size}, inside the {hbytes}-byte header JSON: "
                       "nothing was recorded")
        try:
            header = json.loads(bytes(m[fmt.FILE_HEADER_SIZE:end]).decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self._fail(f"header JSON is not valid JSON ({e})")
        if not isinstance(header, dict):
            self._fail("header JSON is not an object")
        if header.get("format", fmt.JSON_FORMAT) != fmt.JSON_FORMAT:
            self._fail(f"header says format {header['format']!r}, expected {fmt.JSON_FORMAT!r}")
        return header, end

    def _read_chunks(self, off):
        m, size, index = self._map, self.size, 0
        flows, end_seen = [], False
        while off < size and not end_seen:
            if size - off < fmt.CHUNK_HEADER_SIZE:
                self._stop(f"file ends {size - off} bytes into the chunk header at byte {off}")
                break
            h = np.frombuffer(m, fmt.CHUNK_DTYPE, 1, off)[0]
            c = Chunk(index, off, int(h["type"]), int(h["count"]), int(h["bytes"]),
                      int(h["crc32"]))
            index += 1
            if h["magic"] != fmt.CHUNK_MAGIC:
                self._stop(f"no chunk header at byte {off} (magic {int(h['magic']):#010x}, "
                           f"expected {fmt.CHUNK_MAGIC:#010x}): file damaged")
                break
            item = fmt.ITEM_SIZE.get(c.type)
            if item and c.nbytes != c.count * item:
                self._stop(f"{c.describe()} says {c.nbytes} payload bytes, but {c.count} x "
                           f"{item} = {c.count * item}: chunk header damaged")
                break
            if c.end > size:
                self._stop(f"{c.describe()} needs {c.end - off} bytes, the file ends "
                           f"{size - off} bytes after its start")
                break
            off = self.whole_bytes = c.end
            end_seen = c.type == fmt.CHUNK_END
            if self.verify and zlib.crc32(m[c.payload:c.payload + c.nbytes]) != c.crc32:
                self.problems.append(f"{c.describe()}: CRC mismatch, chunk skipped")
            else:
                self._use(c, flows)
        if end_seen and off < size:
            self.problems.append(f"{size - off} bytes after the END chunk ignored")
        if flows:
            self.flows = np.concatenate(flows)
        if not end_seen and not self.truncated:
            self._stop("no END chunk: the recorder did not close the file "
                       "(killed, crashed or still running)")
        self._check_trailer()

    def _use(self, c, flows):
        """Keep one whole, intact chunk."""
        m = self._map
        if c.type == fmt.CHUNK_RECORDS:
            self.records.append(np.frombuffer(m, fmt.RECORD_DTYPE, c.count, c.payload))
        elif c.type == fmt.CHUNK_FLOWS:
            flows.append(np.frombuffer(m, fmt.FLOW_DTYPE, c.count, c.payload))
        elif c.type in (fmt.CHUNK_COUNTERS, fmt.CHUNK_END):
            obj = self._json(c)
            if obj is None:
                return
            if c.type == fmt.CHUNK_COUNTERS:
                self.snapshots.append(obj)
            else:
                self.trailer = obj
        else:
            self.problems.append(f"{c.describe()}: unknown chunk type, skipped")
            return
        self.chunks.append(c)

    def _stop(self, why):
        self.truncated = True
        self.problems.append(why)

    def _json(self, c):
        try:
            obj = json.loads(bytes(self._map[c.payload:c.payload + c.nbytes]).decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self.problems.append(f"{c.describe()}: not valid JSON ({e}), skipped")
            return None
        if not isinstance(obj, dict):
            self.problems.append(f"{c.describe()}: JSON is not an object, skipped")
            return None
        return obj

    def _check_trailer(self):
        written = ((self.trailer or {}).get("userspace") or {}).get("records_written")
        if isinstance(written, int) and written != self.n_records:
            self.problems.append(f"the END chunk says {written} records were written, "
                                 f"the file holds {self.n_records}")
