"""Layout of the record file. The constants and names come from the shared
headers through header.py (generated from include/hopscope.h and
include/hopscope_file.h); the numpy dtypes below mirror the structs, and
tests/python/test_format.py compiles a C program against those headers and
checks every size and offset here against it.
"""
import zlib

import numpy as np

from . import header as h

# hopscope_file.h
FILE_MAGIC = h.FILE_MAGIC.encode()
FILE_VERSION = h.FILE_VERSION
ENDIAN_MARK = h.ENDIAN_MARK
CHUNK_MAGIC = h.CHUNK_MAGIC
JSON_FORMAT = "hopscope-record"  # header JSON "format"

CHUNK_RECORDS = h.CHUNK_RECORDS
CHUNK_FLOWS = h.CHUNK_FLOWS
CHUNK_COUNTERS = h.CHUNK_COUNTERS
CHUNK_END = h.CHUNK_END
CHUNK_COLUMNS = h.CHUNK_COLUMNS  # version 3: records as columns (record/columns.py)
CHUNK_NAMES = {CHUNK_RECORDS: "RECORDS", CHUNK_FLOWS: "FLOWS",
               CHUNK_COUNTERS: "COUNTERS", CHUNK_END: "END", CHUNK_COLUMNS: "COLUMNS"}
RECORD_CHUNKS = (CHUNK_RECORDS, CHUNK_COLUMNS)

ALIGN = 8  # every part of the file is padded to this

# hs_record.flow of a record whose 5-tuple did not fit the recorder's flow
# table; counted in the trailer's userspace.flow_overflow
FLOW_NONE = h.FLOW_NONE
# hs_flow.kind: a flow, or NAT's translation of flow `id` (record/nat.py)
FLOW_TUPLE, FLOW_NAT, FLOW_NAT_CHANGED = h.FLOW_TUPLE, h.FLOW_NAT, h.FLOW_NAT_CHANGED

# hopscope.h
VERSION_MAJOR = h.VERSION_MAJOR
VERSION_MINOR = h.VERSION_MINOR

STAGE_NAMES = tuple(name for _, _, name in h.STAGE_LIST)  # enum hs_stage order
CORE_STAGES = ("t1", "t2", "t3", "t4")
# (column, later stage, earlier stage): a delay exists when both stages are enabled
DELAYS = (
    ("d_iq", "t2", "t1"),
    ("d_p", "t3", "t2"),
    ("d_oq", "t4", "t3"),
    ("transit", "t4", "t1"),
    ("d_rxq", "t1", "t0"),
    ("d_opath", "t_tceg", "t3"),
    ("d_qdisc", "t4", "t_tceg"),
)

# enum hs_status starts at 1; STATUS_NAMES[v - 1] names value v
STATUS_NAMES = tuple(name for _, _, name in h.STATUS_LIST)
STATUS = {name: value for _, value, name in h.STATUS_LIST}

# enum hs_path from 0: PATH_NAMES[v] names value v; STACK_PATHS pass PRE_ROUTING
# and POST_ROUTING (t2, t3: the paper's delays), the others skip both
PATH_NAMES = tuple(name for _, _, name in h.PATH_LIST)
STACK_PATHS = ("stack", "bridge_netfilter", "ifb", "tunnel")

# hs_record.flags bits by name (header.F_IPV6 ... by their C names)
FLAGS = {name: value for _, value, name in h.FLAG_LIST}
F_IPV6 = h.F_IPV6

COUNTER_NAMES = tuple(name for _, _, name in h.COUNTER_LIST)


def _struct(fields, itemsize):
    """Little-endian numpy dtype with explicit C offsets: (name, format, offset)."""
    return np.dtype({"names": [f[0] for f in fields],
                     "formats": [f[1] for f in fields],
                     "offsets": [f[2] for f in fields],
                     "itemsize": itemsize})


# struct hs_record. Times are declared signed: CLOCK_MONOTONIC ns fit in 63 bits
# and pandas wants int64. t[] is split into one field per stage.
RECORD_DTYPE = _struct(
    [(name, "<i8", 8 * i) for i, name in enumerate(STAGE_NAMES)] + [
        ("seq", "<u8", 64),
        ("key", "<u4", 72),
        ("drop_reason", "<u4", 76),
        ("in_ifindex", "<u4", 80),
        ("out_ifindex", "<u4", 84),
        ("flow", "<u4", 88),
        ("ip_len", "<u2", 92),
        ("sport", "<u2", 94),
        ("dport", "<u2", 96),
        ("cpu_in", "<u2", 98),
        ("cpu_out", "<u2", 100),
        ("tos", "u1", 102),
        ("proto", "u1", 103),
        ("status", "u1", 104),
        ("drop_stage", "u1", 105),
        ("flags", "u1", 106),
        ("path", "u1", 107),
        ("saddr", ("u1", 16), 108),  # network order: raw bytes
        ("daddr", ("u1", 16), 124),
        ("segs", "<u4", 140),
        ("tun_in_ns", "<u4", 144),
        ("tun_out_ns", "<u4", 148),
        ("t4_span_ns", "<u4", 152),
        ("out_segs", "<u2", 156),
        ("reserved", "<u2", 158),
    ], 160)

# struct hs_flow
FLOW_DTYPE = _struct([
    ("id", "<u4", 0),
    ("family", "u1", 4),
    ("proto", "u1", 5),
    ("kind", "<u2", 6),
    ("sport", "<u2", 8),
    ("dport", "<u2", 10),
    ("saddr", ("u1", 16), 12),
    ("daddr", ("u1", 16), 28),
    ("packets", "<u4", 44),
], 48)

# struct hs_file_header (version 2 on; a version 1 header is its first 24 bytes)
FILE_HEADER_DTYPE = _struct([
    ("magic", "S8", 0),
    ("version", "<u4", 8),
    ("record_size", "<u4", 12),
    ("header_bytes", "<u4", 16),
    ("endian", "<u4", 20),
    ("header_crc32", "<u4", 24),
    ("reserved", "<u4", 28),
], 32)
FILE_HEADER_V1_SIZE = 24
# the file header bytes header_crc32 covers, before the header JSON
HEADER_CRC_FIXED = 24

# struct hs_chunk
CHUNK_DTYPE = _struct([
    ("magic", "<u4", 0),
    ("type", "<u4", 4),
    ("count", "<u4", 8),
    ("bytes", "<u4", 12),
    ("crc32", "<u4", 16),
    ("index", "<u4", 20),
], 24)

RECORD_SIZE = RECORD_DTYPE.itemsize
# files written before the record's tail (tunnel stages, pieces): its fields
# are read as 0
RECORD_DTYPE_V1 = _struct([(f, RECORD_DTYPE.fields[f][0], RECORD_DTYPE.fields[f][1])
                           for f in RECORD_DTYPE.names
                           if RECORD_DTYPE.fields[f][1] < h.RECORD_SIZE_V1], h.RECORD_SIZE_V1)
RECORD_DTYPES = {RECORD_SIZE: RECORD_DTYPE, h.RECORD_SIZE_V1: RECORD_DTYPE_V1}
FLOW_SIZE = FLOW_DTYPE.itemsize
FILE_HEADER_SIZE = FILE_HEADER_DTYPE.itemsize
CHUNK_HEADER_SIZE = CHUNK_DTYPE.itemsize
# fixed item sizes (a RECORDS chunk's: the file header's record_size)
ITEM_SIZE = {CHUNK_FLOWS: FLOW_SIZE}


def padded(n):
    """n rounded up to the file's alignment."""
    return (n + ALIGN - 1) & ~(ALIGN - 1)


def header_crc(fixed, text):
    """header_crc32 of a file header: fixed is its first HEADER_CRC_FIXED bytes,
    text the header JSON with its padding."""
    return zlib.crc32(text, zlib.crc32(fixed))


def file_header(text, version=FILE_VERSION, record_size=RECORD_SIZE):
    """The bytes that start a record file whose header JSON (padded) is text
    and whose records are record_size bytes: hs_file_header with its CRC
    (version 2), or the 24-byte version 1 header."""
    fh = np.zeros(1, dtype=FILE_HEADER_DTYPE)
    fh[0] = (FILE_MAGIC, version, record_size, len(text), ENDIAN_MARK, 0, 0)
    raw = fh.tobytes()
    if version < 2:
        return raw[:FILE_HEADER_V1_SIZE]
    fh[0]["header_crc32"] = header_crc(raw[:HEADER_CRC_FIXED], text)
    return fh.tobytes()
