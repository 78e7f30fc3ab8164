"""hs_key_hash from include/hopscope.h, in Python, to check the BPF parser's keys."""
import struct

M = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M


def _mix(h, v):
    v = (v * 0xCC9E2D51) & M
    v = _rotl(v, 15)
    v = (v * 0x1B873593) & M
    h ^= v
    h = _rotl(h, 13)
    return (h * 5 + 0xE6546B64) & M


def key_hash(saddr=b"", daddr=b"", l4=b"", payload=b"", proto=0, ip_len=0):
    """Fields as bytes in packet order (addresses network order), zero padded."""
    words = b"".join(x.ljust(n, b"\0") for x, n in
                     ((saddr, 16), (daddr, 16), (l4, 16), (payload, 16)))
    h = 0x9747B28C
    for (w,) in struct.iter_unpack("<I", words):
        h = _mix(h, w)
    h = _mix(h, (proto << 16 | ip_len) & M)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M
    h ^= h >> 16
    return h
