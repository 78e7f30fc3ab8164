"""A second reader (and writer) of .hsr files for the tests, written from
docs/record-format.md and include/hopscope_file.h alone: struct and numpy,
nothing from the hopscope package, so what the loader computes can be
checked against the bytes the recorder wrote, and files that say what the
recorder never would can be made with every checksum right."""
import json
import struct
import zlib

import numpy as np

CHUNK_MAGIC = 0x4B435348  # "HSCK"
RECORDS, FLOWS, COUNTERS, END, COLUMNS = 1, 2, 3, 4, 5
RECORD_KINDS = (RECORDS, COLUMNS)
VERSION = 3  # the format version write() writes
# enum hs_stage: the index of each instant in hs_record.t
STAGE = {"t0": 0, "t1": 1, "t_tcin": 2, "t2": 3, "t_fwd": 4, "t3": 5, "t_tceg": 6, "t4": 7}
STATUS = {"complete": 1, "dropped": 2, "evicted": 3, "collision": 4, "inflight": 5, "other_out": 6,
          "partial": 7}
PATH = {"stack": 0, "no_netfilter": 1, "flowtable": 2, "tc_redirect": 3, "bridge_netfilter": 4,
        "ifb": 5}
RECORD = np.dtype([
    ("t", "<u8", 8), ("seq", "<u8"), ("key", "<u4"), ("drop_reason", "<u4"),
    ("in_ifindex", "<u4"), ("out_ifindex", "<u4"), ("flow", "<u4"), ("ip_len", "<u2"),
    ("sport", "<u2"), ("dport", "<u2"), ("cpu_in", "<u2"), ("cpu_out", "<u2"), ("tos", "u1"),
    ("proto", "u1"), ("status", "u1"), ("drop_stage", "u1"), ("flags", "u1"), ("path", "u1"),
    ("saddr", ">u4", 4), ("daddr", ">u4", 4), ("segs", "<u4"), ("tun_in_ns", "<u4"),
    ("tun_out_ns", "<u4"), ("t4_span_ns", "<u4"), ("out_segs", "<u2"), ("reserved", "<u2")])
assert RECORD.itemsize == 160
# files written before the record's tail: the record up to segs
RECORD_V1_SIZE = 144
# a COLUMNS chunk's columns in order: (name, type); the stages but t1 are
# int32 from t1, UNSEEN for a stage not seen; saddrI/daddrI word I
COLUMN_LIST = [("t1", "<u8")] + [(s, "<i4") for s in STAGE if s != "t1"] + [
    ("seq", "<u8"), ("key", "<u4"), ("drop_reason", "<u4"), ("in_ifindex", "<u4"),
    ("out_ifindex", "<u4"), ("flow", "<u4"), ("ip_len", "<u2"), ("sport", "<u2"),
    ("dport", "<u2"), ("cpu_in", "<u2"), ("cpu_out", "<u2"), ("tos", "u1"), ("proto", "u1"),
    ("status", "u1"), ("drop_stage", "u1"), ("flags", "u1"), ("path", "u1")] + [
    (f"{a}{i}", "<u4") for a in ("saddr", "daddr") for i in range(4)] + [
    ("segs", "<u4"), ("tun_in_ns", "<u4"), ("tun_out_ns", "<u4"), ("t4_span_ns", "<u4"),
    ("out_segs", "<u2")]
UNSEEN = -(1 << 31)


def pad8(n):
    return (n + 7) & ~7


class Raw:
    """header (dict), records (RECORD array, file order), trailer (dict or
    None), ifname ({ifindex: name}). Every checksum is checked."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        magic, version, record_size, header_bytes, endian = struct.unpack_from("<8s4I", data)
        assert (magic, endian) == (b"HOPSCOPE", 0x01020304)
        assert record_size in (RECORD.itemsize, RECORD_V1_SIZE)
        assert 1 <= version <= VERSION
        start = 24 if version == 1 else 32
        if version >= 2:
            crc, reserved = struct.unpack_from("<2I", data, 24)
            assert reserved == 0
            assert zlib.crc32(data[start:start + header_bytes], zlib.crc32(data[:24])) == crc
        self.header = json.loads(data[start:start + header_bytes])
        # the records are read into today's layout (RECORD) and format
        # version, and written back so
        if "record_size" in self.header:
            self.header["record_size"] = RECORD.itemsize
        if "version" in self.header:
            self.header["version"] = VERSION
        self.trailer, records, index, off = None, [], 0, start + header_bytes
        self.chunks = []  # [kind, payload]: RECORD array, FLOWS bytes, JSON as a dict
        while off < len(data):
            magic, kind, count, size, crc, idx = struct.unpack_from("<6I", data, off)
            assert magic == CHUNK_MAGIC, off
            assert version == 1 or idx == index, (off, idx, index)
            payload = data[off + 24:off + 24 + size]
            assert len(payload) == size and zlib.crc32(payload) == crc, off
            if kind == RECORDS:
                assert size == count * record_size
                rows = np.zeros(count, RECORD)
                rows.view(np.uint8).reshape(count, RECORD.itemsize)[:, :record_size] = \
                    np.frombuffer(payload, np.uint8).reshape(count, record_size)
                records.append(rows)
                self.chunks.append([kind, records[-1].copy()])
            elif kind == COLUMNS:
                assert version >= 3
                records.append(from_columns(payload, count))
                self.chunks.append([kind, records[-1].copy()])
            elif kind in (COUNTERS, END):
                self.chunks.append([kind, json.loads(payload)])
            else:
                self.chunks.append([kind, payload])
            if kind == END:
                self.trailer = self.chunks[-1][1]
            off += 24 + pad8(size)
            index += 1
        self.records = np.concatenate(records) if records else np.zeros(0, RECORD)
        self.ifname = {i["ifindex"]: i["name"] for i in self.header["interfaces"]}

    def t(self, stage):
        return self.records["t"][:, STAGE[stage]].astype(np.int64)

    def status(self, name):
        return self.records["status"] == STATUS[name]

    def ipv4(self, field):
        """saddr/daddr of every record as dotted IPv4 text."""
        w = self.records[field][:, 0]
        return np.array([f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}" for a in w])


def from_columns(payload, count):
    """A COLUMNS payload's records (RECORD)."""
    (present,), at = struct.unpack_from("<Q", payload), 8
    assert present >> len(COLUMN_LIST) == 0
    rows = np.zeros(count, RECORD)
    t1 = np.zeros(count, np.uint64)
    for i, (name, kind) in enumerate(COLUMN_LIST):
        if not present >> i & 1:
            continue
        v = np.frombuffer(payload, kind, count, at)
        at += pad8(v.nbytes)
        if name == "t1":
            t1 = v
            rows["t"][:, STAGE["t1"]] = v
        elif name in STAGE:
            rows["t"][:, STAGE[name]] = np.where(v == UNSEEN, 0, t1 + v.astype(np.int64)
                                                 .astype(np.uint64))
        elif name[:5] in ("saddr", "daddr"):  # the words as stored: network order
            rows[name[:5]][:, int(name[5])] = v.view(">u4")
        else:
            rows[name] = v
    assert at == len(payload), (at, len(payload))
    return rows


def to_columns(rows):
    """records (RECORD) as a COLUMNS payload; None when an instant does not
    fit its column (the recorder writes RECORDS then)."""
    t1 = rows["t"][:, STAGE["t1"]].astype(np.int64)
    present, out = 0, []
    for i, (name, kind) in enumerate(COLUMN_LIST):
        if name[:5] in ("saddr", "daddr"):  # the bytes as they are
            v = np.ascontiguousarray(rows[name[:5]][:, int(name[5])])
            stored, raw = v.any(), v.tobytes()
        elif name in STAGE and name != "t1":
            t = rows["t"][:, STAGE[name]]
            d = np.where(t != 0, t.astype(np.int64) - t1, UNSEEN)
            if not ((t == 0) | ((t1 != 0) & (d > UNSEEN) & (d < 1 << 31))).all():
                return None
            stored, raw = (t != 0).any(), d.astype(kind).tobytes()
        else:
            v = rows["t"][:, STAGE["t1"]] if name == "t1" else rows[name]
            stored, raw = v.any(), v.astype(kind).tobytes()
        if stored:
            present |= 1 << i
            out += [raw, bytes(-len(raw) % 8)]
    return struct.pack("<Q", present) + b"".join(out)


def write(path, header, chunks):
    """A version 3 file of these parts, as Raw reads them (header a dict or its
    JSON text, chunks [kind, payload]), with every CRC and chunk index computed
    here; a COLUMNS chunk's records are encoded as columns, or written as
    RECORDS where they do not fit, as the recorder does."""
    text = (header if isinstance(header, str) else json.dumps(header)).encode()
    text += b" " * (-len(text) % 8)
    fixed = struct.pack("<8s4I", b"HOPSCOPE", VERSION, RECORD.itemsize, len(text), 0x01020304)
    out = [fixed, struct.pack("<2I", zlib.crc32(text, zlib.crc32(fixed)), 0), text]
    for index, (kind, payload) in enumerate(chunks):
        data = to_columns(payload) if kind == COLUMNS else None
        if data is not None:
            count = len(payload)
        elif isinstance(payload, np.ndarray):
            kind = RECORDS
            data, count = payload.tobytes(), len(payload)
        elif isinstance(payload, bytes):
            data, count = payload, len(payload) // 48 if kind == FLOWS else 0
        else:
            data, count = json.dumps(payload).encode(), 0
        out += [struct.pack("<6I", CHUNK_MAGIC, kind, count, len(data), zlib.crc32(data), index),
                data, bytes(-len(data) % 8)]
    with open(path, "wb") as f:
        f.write(b"".join(out))
