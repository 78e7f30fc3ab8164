"""Parse a record file (.hsr) into its header, record arrays, flows and counters.

The file is memory-mapped; record arrays are views into the map, so nothing
is copied until a caller asks for columns (load.py). A file that stops being
whole (killed recorder, truncated copy, damaged chunk header) yields every
whole chunk before that point and a message saying where it stops.

Every chunk's CRC32 and the header's (version 2) are checked unless the
caller opts out (verify=False): a damaged chunk is left out, with its records
counted, and named with where it is; a damaged header is refused.
"""
import json
import mmap
import os
import re
import stat
import zlib
from dataclasses import dataclass

import numpy as np

from . import format as fmt
from . import hist, probecost, sampling
from .columns import Columns
from .invariants import Problem

try:  # ISA-L's CRC-32 (the same zlib CRC) is about 4x faster: checked loads stay fast
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - zlib's is the same function, slower
    _crc32 = zlib.crc32


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
        what = {fmt.CHUNK_RECORDS: "records", fmt.CHUNK_COLUMNS: "records",
                fmt.CHUNK_FLOWS: "flows"}.get(self.type)
        items = f", {self.count} {what}" if what else ""
        return f"chunk {self.index} ({self.name}{items}) at byte {self.offset}"


class RecordFile:
    """One parsed record file.

    header      the header JSON (dict)
    records     list of record_dtype arrays, one per whole RECORDS chunk (views of the map)
    record_size the file's record size: fmt.RECORD_SIZE, or an older layout's
    record_dtype  its dtype (fmt.RECORD_DTYPES): an older one lacks the newer fields
    flows       fmt.FLOW_DTYPE array, the flows of every whole FLOWS chunk in file order
    nat         fmt.FLOW_DTYPE array, the NAT translations among them (kind not
                FLOW_TUPLE), in file order: a flow's last one counts (record/nat.py)
    snapshots   COUNTERS chunk JSONs in file order
    trailer     the END chunk JSON, or None
    chunks      every whole chunk that was used
    problems    what was wrong, one sentence each; empty for a whole, intact file
    notes       what the reader could not check (a version 1 header has no CRC), or
                changed (bytes that are not UTF-8); not problems
    truncated   True when there is no END chunk or the file stops being whole before it
    whole_bytes bytes from the start of the file up to the end of the last whole chunk
    dropped_records  records in chunks left out (damaged): never returned
    version     the file format version
    """

    def __init__(self, path, verify=True, strict=False):
        self.path = os.fspath(path)
        self.verify = verify
        self.records, self.snapshots, self.chunks, self.problems = [], [], [], []
        self.notes = []
        self._records_seen = {}  # (CRC32, count, first record) -> its RECORDS chunk
        self.dropped_records = 0
        self.flows = np.zeros(0, dtype=fmt.FLOW_DTYPE)
        self.nat = np.zeros(0, dtype=fmt.FLOW_DTYPE)
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
            st = os.stat(self.path)
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block open()
                raise RecordFileError(f"{self.path}: not a regular file, not a record file")
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
        if self.size < fmt.FILE_HEADER_V1_SIZE:
            self._fail(f"file ends after {self.size} bytes, inside the "
                       f"{fmt.FILE_HEADER_V1_SIZE}-byte file header: nothing was recorded")
        head = bytes(m[:fmt.FILE_HEADER_SIZE]).ljust(fmt.FILE_HEADER_SIZE, b"\0")
        fh = np.frombuffer(head, fmt.FILE_HEADER_DTYPE, 1)[0]
        endian = int(fh["endian"])
        if endian != fmt.ENDIAN_MARK:
            if endian == int.from_bytes(fmt.ENDIAN_MARK.to_bytes(4, "big"), "little"):
                self._fail("written on a big-endian machine; this reader reads "
                           "little-endian files only")
            self._fail(f"endian mark is {endian:#010x}, expected {fmt.ENDIAN_MARK:#010x}: "
                       "file header damaged")
        self.version = version = int(fh["version"])
        if not 1 <= version <= fmt.FILE_VERSION:
            self._fail(f"format version {version}; this reader reads versions 1 to "
                       f"{fmt.FILE_VERSION} (use the hopscope that wrote it)")
        self.record_size = int(fh["record_size"])
        self.record_dtype = fmt.RECORD_DTYPES.get(self.record_size)
        if self.record_dtype is None:
            sizes = " or ".join(str(n) for n in sorted(fmt.RECORD_DTYPES))
            self._fail(f"record size {self.record_size} bytes; this reader reads records of "
                       f"{sizes} bytes (mismatched hopscope versions)")
        start = fmt.FILE_HEADER_V1_SIZE if version == 1 else fmt.FILE_HEADER_SIZE
        if self.size < start:
            self._fail(f"file ends after {self.size} bytes, inside the "
                       f"{start}-byte file header: nothing was recorded")
        hbytes = int(fh["header_bytes"])
        end = start + hbytes
        if hbytes % fmt.ALIGN:
            self._fail(f"header JSON length {hbytes} is not a multiple of {fmt.ALIGN}: "
                       "file header damaged")
        if end > self.size:
            self._fail(f"file ends at byte {self.size}, inside the {hbytes}-byte header JSON: "
                       "nothing was recorded")
        raw = m[start:end]
        if version == 1:
            self.notes.append("format version 1: the header (interfaces, stages, clocks) is "
                              "not covered by a checksum; damage to it cannot be detected")
        elif self.verify:
            crc = fmt.header_crc(m[:fmt.HEADER_CRC_FIXED], raw)
            if crc != int(fh["header_crc32"]):
                self._fail(f"the header (bytes 0..{end}) fails its CRC32 "
                           f"({crc:#010x}, the file says {int(fh['header_crc32']):#010x}): "
                           "header damaged, its interfaces, stages and clocks cannot be "
                           "trusted (verify=False reads it all the same)")
            if int(fh["reserved"]):  # the CRC cannot cover the 4 bytes after itself
                self._fail(f"file header bytes 28..31 should be 0, are {int(fh['reserved']):#x}: "
                           "file header damaged (verify=False reads it all the same)")
        header = _parse_json(bytes(raw), "header JSON", self._fail, self.notes)
        if not isinstance(header, dict):
            self._fail("header JSON is not an object")
        if header.get("format", fmt.JSON_FORMAT) != fmt.JSON_FORMAT:
            self._fail(f"header says format {header['format']!r}, expected {fmt.JSON_FORMAT!r}")
        why = check_header(header)
        if why:
            self._fail(f"header JSON: {why}")
        return header, end

    def _read_chunks(self, off):
        m, size, index = self._map, self.size, 0
        view = memoryview(m)
        flows, end_seen = [], False
        try:
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
                item = self.record_size if c.type == fmt.CHUNK_RECORDS else \
                    fmt.ITEM_SIZE.get(c.type)
                if item and c.nbytes != c.count * item:
                    self._stop(f"{c.describe()} says {c.nbytes} payload bytes, but {c.count} x "
                               f"{item} = {c.count * item}: chunk header damaged")
                    break
                if c.type in (fmt.CHUNK_COUNTERS, fmt.CHUNK_END) and c.count:
                    self.problems.append(f"{c.describe()} has count {c.count}, expected 0: "
                                         "chunk header damaged")
                if c.end > size:
                    self._stop(f"{c.describe()} needs {c.end - off} bytes, the file ends "
                               f"{size - off} bytes after its start")
                    break
                crc_ok = (_crc32(view[c.payload:c.payload + c.nbytes]) == c.crc32
                          if self.verify else None)
                # a whole chunk is followed by another chunk's header or by the end of
                # the file: a chunk whose count or length is off lands elsewhere (and
                # fails its CRC); with a good CRC the next chunk's header is the damage
                if (c.type != fmt.CHUNK_END and size - c.end >= 4 and crc_ok is not True
                        and int.from_bytes(m[c.end:c.end + 4], "little") != fmt.CHUNK_MAGIC):
                    self._stop(f"{c.describe()}: no chunk header follows it at byte {c.end}"
                               + (", CRC mismatch" if crc_ok is False else "") +
                               ": its count or length is damaged, chunk left out"
                               + self._drop(c))
                    break
                off = self.whole_bytes = c.end
                end_seen = c.type == fmt.CHUNK_END
                if self.version >= 2 and int(h["index"]) != c.index:
                    self.problems.append(
                        f"{c.describe()} is numbered {int(h['index'])}: chunks are out of "
                        "order or missing before it")
                if crc_ok is False:
                    self.problems.append(f"{c.describe()}: CRC mismatch, chunk left out"
                                         + self._drop(c))
                else:
                    self._use(c, flows)
        finally:
            view.release()
        if end_seen and off < size:
            self.problems.append(f"{size - off} bytes after the END chunk ignored")
        if flows:
            items = np.concatenate(flows)
            # NAT's translations share the FLOWS chunks: they name a flow by id
            kind = items["kind"]
            self.flows = items[kind == fmt.FLOW_TUPLE]
            self.nat = items[kind != fmt.FLOW_TUPLE]
        if not end_seen and not self.truncated:
            self._stop("no END chunk: the recorder did not close the file "
                       "(killed, crashed or still running)")
        self._check_trailer()

    def _drop(self, c):
        """Count a chunk left out; returns what to add to its message."""
        if c.type not in fmt.RECORD_CHUNKS:
            return ""
        self.dropped_records += c.count
        return f" ({c.count} records dropped)"

    def _use(self, c, flows):
        """Keep one whole, intact chunk."""
        m = self._map
        if c.type == fmt.CHUNK_RECORDS or c.type == fmt.CHUNK_COLUMNS and self.version >= 3:
            records = self._records(c)
            if records is None:
                return
            # every record has its own seq: one chunk's CRC, count and first
            # record again are that chunk repeated, whatever its index says
            first = records.take(np.arange(min(c.count, 1))).tobytes()
            same = self._records_seen.setdefault((c.crc32, c.count, first), c)
            if same is not c:
                self.problems.append(Problem(f"{c.describe()} repeats {same.describe()}: the "
                                             "same records, left out", "chunks", c.count))
                return
            self.records.append(records)
        elif c.type == fmt.CHUNK_FLOWS:
            flows.append(np.frombuffer(m, fmt.FLOW_DTYPE, c.count, c.payload))
        elif c.type in (fmt.CHUNK_COUNTERS, fmt.CHUNK_END):
            obj = self._json(c)
            if obj is None:
                return
            if c.type == fmt.CHUNK_COUNTERS:
                self._check_snapshot(c, obj)
                self.snapshots.append(obj)
            else:
                self.trailer = obj
        else:
            self.problems.append(f"{c.describe()}: unknown chunk type, skipped")
            return
        self.chunks.append(c)

    def _records(self, c):
        """A RECORDS chunk's records (views of the map), or a COLUMNS chunk's
        Columns; None, said, when its columns do not fill its length."""
        if c.type == fmt.CHUNK_RECORDS:
            return np.frombuffer(self._map, self.record_dtype, c.count, c.payload)
        try:
            return Columns.parse(self._map, c.payload, c.nbytes, c.count)
        except ValueError as e:
            self.problems.append(f"{c.describe()}: {e}: chunk header damaged, chunk left out"
                                 + self._drop(c))
            return None

    def _check_snapshot(self, c, obj):
        """A COUNTERS chunk is written right after the records it counts: fewer
        records before it than it says were written means chunks are missing."""
        written = (obj.get("userspace") or {}).get("records_written")
        have = self.n_records + self.dropped_records
        if isinstance(written, int) and written != have:
            self.problems.append(f"{c.describe()} says {written} records were written by "
                                 f"then, the file holds {have} before it: "
                                 + ("chunks are missing" if written > have else
                                    "chunks are out of place"))

    def _stop(self, why):
        self.truncated = True
        self.problems.append(why)

    def _json(self, c):
        def fail(why):
            raise ValueError(why)
        try:
            obj = _parse_json(bytes(self._map[c.payload:c.payload + c.nbytes]), "JSON", fail,
                              self.notes)
            if not isinstance(obj, dict):
                fail("JSON is not an object")
            why = check_counters(obj)
            if why:
                fail(why)
        except ValueError as e:
            if self.verify:  # its CRC is right: the writer wrote it so, not damage
                self._fail(f"{c.describe()}: {e}, although its CRC32 is right: not "
                           "written by hopscope's recorder (verify=False skips the chunk)")
            self.problems.append(f"{c.describe()}: {e}, skipped")
            return None
        return obj

    def _check_trailer(self):
        written = ((self.trailer or {}).get("userspace") or {}).get("records_written")
        have = self.n_records + self.dropped_records
        if isinstance(written, int) and written != have:
            self.problems.append(f"the END chunk says {written} records were written, "
                                 f"the file holds {have}")
        if self.dropped_records:
            self.problems.append(f"{self.dropped_records} records of damaged chunks dropped")
        not_stored = ((self.trailer or {}).get("userspace") or {}).get("records_not_stored")
        if isinstance(not_stored, int) and not_stored:
            self.problems.append(f"the recorder could not store {not_stored} records "
                                 f"(stopped: {self.trailer.get('stop_reason', '?')}): the "
                                 "file holds the ones before its write failed")


def _parse_json(raw, what, fail, notes):
    """The JSON text raw (bytes) as Python objects; fail(message) when it is not JSON.
    Bytes that are not UTF-8 become U+FFFD (noted), never a refusal; so do
    escaped lone surrogates (valid JSON, not characters: printing one raises).
    Containers nested deeper than MAX_DEPTH are read as null (noted)."""
    raw, cut = _cut_deep(raw)
    if cut:
        notes.append(f"{what} nests containers more than {MAX_DEPTH} levels deep "
                     f"({len(cut)} places, the first at byte {cut[0]}): read as null")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        text = raw.decode(errors="replace")
        notes.append(f"{what} holds bytes that are not UTF-8, read as U+FFFD")
    try:
        obj = json.loads(text)
    except RecursionError:
        fail(f"{what} is nested too deeply")
    except ValueError as e:  # JSONDecodeError; an integer of more than 4300 digits
        fail(f"{what} is not valid JSON ({e})")
    if _SURROGATE_ESCAPE.search(text) and isinstance(obj, (dict, list)):
        n = _replace_surrogates(obj)
        if n:
            notes.append(f"{what} holds {n} strings with escaped lone surrogates "
                         "(\\ud800-\\udfff, not characters), read as U+FFFD")
    return obj


# Deeper than any part of the documented JSON; what lies below is no reader's
# (an unknown key) and would only make parsing, copying and printing recurse
MAX_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _cut_deep(raw):
    """raw (JSON bytes) with every container below MAX_DEPTH replaced by null,
    and the byte offsets where they were; raw itself when none is (or it is
    not balanced JSON: the parse then says so). Escapes are read left to
    right: once the escaped backslashes are masked, every backslash before a
    quote escapes it, and the quotes left delimit the strings."""
    b = np.frombuffer(raw.replace(b"\\\\", b"__").replace(b'\\"', b"__"), np.uint8)
    outside = (np.cumsum(b == ord('"'), dtype=np.int64) & 1) == 0
    opens = ((b == ord("[")) | (b == ord("{"))) & outside
    closes = ((b == ord("]")) | (b == ord("}"))) & outside
    depth = np.cumsum(opens.astype(np.int64) - closes)
    starts = np.flatnonzero(opens & (depth == MAX_DEPTH + 1))
    if not len(starts):
        return raw, []
    ends = np.flatnonzero(closes & (depth == MAX_DEPTH))
    at = np.searchsorted(ends, starts)
    if at[-1] >= len(ends):
        return raw, []
    parts, last = [], 0
    for start, end in zip(starts, ends[at]):
        parts += [raw[last:start], b"null"]
        last = end + 1
    return b"".join(parts + [raw[last:]]), starts.tolist()


def _replace_surrogates(obj):
    """Replace lone surrogates in the strings (keys too) of obj, in place, with
    U+FFFD; how many strings had them."""
    found = 0

    def fix(v):
        nonlocal found
        if isinstance(v, str) and _SURROGATE.search(v):
            found += 1
            return _SURROGATE.sub("\ufffd", v)
        return v

    todo = [obj]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            items = [(fix(k), fix(v)) for k, v in node.items()]
            node.clear()
            node.update(items)
        else:
            node[:] = [fix(v) for v in node]
        todo += [v for v in (node.values() if isinstance(node, dict) else node)
                 if isinstance(v, (dict, list))]
    return found


# ---- the shapes of the JSON parts: what readers use, checked before it is used ----

_U64 = 1 << 64


def _int(v):
    return type(v) is int and -_U64 < v < _U64


def _u64(v):
    return type(v) is int and 0 <= v < _U64


def _kind(v):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), "?")


_HEADER_STR = ("format", "tracer_version", "backend", "command", "hostname", "clocksource",
               "router_id")
_HEADER_INT = ("version", "start_realtime_ns", "start_monotonic_ns", "mono_to_realtime_ns",
               "slots_per_cpu", "ringbuf_bytes", "record_size")
_HEADER_OBJ = ("kernel", "cpu", "netns", "backend_info", "record_flags", "drop_reasons",
               "flight", "flight_dump")


def check_header(h):
    """Why the header JSON h (a dict) is not of the documented shape, or None.
    Keys may be missing; keys present must have their type."""
    for k in _HEADER_STR:
        if h.get(k) is not None and not isinstance(h[k], str):
            return f"{k!r} is {_kind(h[k])}, expected a string"
    for k in _HEADER_INT:
        if h.get(k) is not None and not _int(h[k]):
            return f"{k!r} is {_kind(h[k])} {str(h[k])[:40]}, expected a 64-bit integer"
    for k in _HEADER_OBJ:
        if h.get(k) is not None and not isinstance(h[k], dict):
            return f"{k!r} is {_kind(h[k])}, expected an object"
    for k, sub in (("kernel", ("release", "version", "machine")), ("cpu", ("model",)),
                   ("netns", ("name",))):
        for s in sub:
            v = (h.get(k) or {}).get(s)
            if v is not None and not isinstance(v, str):
                return f"{k}.{s} is {_kind(v)}, expected a string"
    for k, s in (("cpu", "count"), ("netns", "inode")):
        v = (h.get(k) or {}).get(s)
        if v is not None and not _int(v):
            return f"{k}.{s} is {_kind(v)}, expected an integer"
    for k in ("nat_translations", "router_id_given"):
        if h.get(k) is not None and not isinstance(h[k], bool):
            return f"{k!r} is {_kind(h[k])}, expected true or false"
    for k in ("stages", "counter_names", "stage_names"):
        v = h.get(k)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            return f"{k!r} is not a list of strings"
    ifaces = h.get("interfaces")
    if ifaces is not None:
        if not isinstance(ifaces, list):
            return f"'interfaces' is {_kind(ifaces)}, expected a list"
        for n, i in enumerate(ifaces):
            if not isinstance(i, dict):
                return f"interfaces[{n}] is {_kind(i)}, expected an object"
            for k in ("name", "role", "driver", "xdp_mode", "xdp_mode_why", "rps_cpus"):
                if i.get(k) is not None and not isinstance(i[k], str):
                    return f"interfaces[{n}].{k} is {_kind(i[k])}, expected a string"
            for k in ("ifindex", "mtu"):
                if i.get(k) is not None and not _int(i[k]):
                    return f"interfaces[{n}].{k} is {_kind(i[k])}, expected an integer"
    hooks = h.get("hooks")
    if hooks is not None and not isinstance(hooks, (list, dict)):
        return f"'hooks' is {_kind(hooks)}, expected a list"
    for n, k in enumerate(hooks if isinstance(hooks, list) else ()):
        if not isinstance(k, dict):
            return f"hooks[{n}] is {_kind(k)}, expected an object"
        for f in ("stage", "hook", "backend"):
            if k.get(f) is not None and not isinstance(k[f], str):
                return f"hooks[{n}].{f} is {_kind(k[f])}, expected a string"
        if k.get("priority") is not None and not _int(k["priority"]):
            return f"hooks[{n}].priority is {_kind(k['priority'])}, expected an integer"
    if h.get("sampling") is not None:
        return sampling.check(h["sampling"])
    return None


def check_counters(obj):
    """Why a COUNTERS or END JSON is not of the documented shape, or None."""
    if obj.get("monotonic_ns") is not None and not _int(obj["monotonic_ns"]):
        return f"'monotonic_ns' is {_kind(obj['monotonic_ns'])}, expected an integer"
    if obj.get("stop_reason") is not None and not isinstance(obj["stop_reason"], str):
        return f"'stop_reason' is {_kind(obj['stop_reason'])}, expected a string"
    for k in ("counters", "userspace"):
        v = obj.get(k)
        if v is None:
            continue
        if not isinstance(v, dict):
            return f"{k!r} is {_kind(v)}, expected an object"
        for name, x in v.items():
            if name == "records_by_status":
                if not isinstance(x, dict) or not all(_u64(y) for y in x.values()):
                    return f"{k}.{name} is not an object of counts (integers 0 to 2^64-1)"
            elif (k == "counters" or name in _USERSPACE_INT) and not _u64(x):
                return (f"{k}.{name} is {_kind(x)} {str(x)[:40]}, expected a count "
                        "(an integer 0 to 2^64-1)")
    ifaces = obj.get("ifaces")
    if ifaces is not None and (not isinstance(ifaces, dict) or not all(
            isinstance(v, dict) and v.get("state") in ("up", "down", "gone") and
            isinstance(v.get("ifindexes"), list) and all(_int(i) for i in v["ifindexes"]) and
            _int(v.get("gone")) and _int(v.get("down")) for v in ifaces.values())):
        return "'ifaces' is not an object of {state, ifindexes, gone, down}"
    modes = obj.get("xdp_modes")
    if modes is not None and (not isinstance(modes, dict) or
                              not all(isinstance(m, str) for m in modes.values())):
        return "'xdp_modes' is not an object of strings"
    why = None
    if obj.get("probe_cost") is not None:
        why = probecost.check(obj["probe_cost"])
    if not why and obj.get("histograms") is not None:
        why = hist.check(obj["histograms"])
    if not why and obj.get("sampling") is not None:
        why = sampling.check(obj["sampling"])
    return why


# userspace keys of the COUNTERS and END JSON that readers use; others are ignored
_USERSPACE_INT = ("records_written", "records_not_stored", "flows", "flow_overflow",
                  "t4_unseen", "inflight_at_stop", "rb_records")
