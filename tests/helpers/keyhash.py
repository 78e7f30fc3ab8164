"""hs_key_hash from include/hopscope.h, in Python, to check the BPF parser's keys."""
import struct

M = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def key_hash(saddr=b"", daddr=b"", l4=b"", payload=b"", proto=0, ip_len=0):
    """Fields as bytes in packet order (addresses network order), zero padded."""
    words = b"".join(x.ljust(n, b"\0") for x, n in
                     ((saddr, 16), (daddr, 16), (l4, 16), (payload, 16)))
    h = 0x27D4EB2F165667C5 ^ ((proto << 16 | ip_len) & 0xFFFFFFFF)
    for (w,) in struct.iter_unpack("<Q", words):
        h ^= (w * 0xC2B2AE3D27D4EB4F) & M
        h = (_rotl(h, 31) * 0x9E3779B185EBCA87) & M
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M
    h ^= h >> 33
    return (h ^ (h >> 32)) & 0xFFFFFFFF
