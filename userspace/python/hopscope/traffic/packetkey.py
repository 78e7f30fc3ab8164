"""hs_key_hash (include/hopscope.h) over numpy arrays: the key a record holds,
recomputed for packets a generator says it sent, to find their records.

The key hashes 17 little-endian 32-bit words: saddr[4], daddr[4], the first
16 bytes of L4 (for UDP: the 8-byte header, then zeros), the first 16 payload
bytes (zeros past the payload) and proto << 16 | ip_len; the first 16 as
eight 64-bit words.
"""
import ipaddress

import numpy as np

U32 = np.uint32
U64 = np.uint64
WORDS = 17


def key_hash(words):
    """words: uint32 array (..., 17) -> the keys, uint32 (...)."""
    words = np.asarray(words, dtype=U32)
    # the eight 64-bit words: pairs of 32-bit ones, the first the low half
    w64 = words[..., :16].astype(U64)
    w64 = w64[..., 0::2] | (w64[..., 1::2] << U64(32))
    with np.errstate(over="ignore"):
        h = U64(0x27D4EB2F165667C5) ^ words[..., 16].astype(U64)
        for i in range(8):
            h = h ^ (w64[..., i] * U64(0xC2B2AE3D27D4EB4F))
            h = ((h << U64(31)) | (h >> U64(33))) * U64(0x9E3779B185EBCA87)
        h = h ^ (h >> U64(33))
        h = h * U64(0xFF51AFD7ED558CCD)
        h = h ^ (h >> U64(33))
        h = h * U64(0xC4CEB9FE1A85EC53)
        h = h ^ (h >> U64(33))
    return ((h ^ (h >> U64(32))) & U64(0xFFFFFFFF)).astype(U32)


def _be16_pair(a, b):
    """Two 16-bit fields in packet order as one little-endian word."""
    a, b = np.asarray(a, dtype=np.uint32), np.asarray(b, dtype=np.uint32)
    return (((a & 0xFF) << 8) | (a >> 8) | ((b & 0xFF) << 24) | ((b >> 8) << 16)).astype(U32)


def be32(x):
    """A 32-bit big-endian field (as the packet holds it) read as a little-endian word."""
    x = np.asarray(x, dtype=np.uint64) & 0xFFFFFFFF
    return (((x & 0xFF) << 24) | ((x & 0xFF00) << 8) | ((x >> 8) & 0xFF00) | (x >> 24)).astype(U32)


def udp_partial_csum(saddr, daddr, udp_len):
    """The UDP checksum field as a sender with checksum offload leaves it (veth):
    the folded pseudo-header sum, which the receiving side completes."""
    s4, d4 = int(ipaddress.IPv4Address(saddr)), int(ipaddress.IPv4Address(daddr))
    total = (s4 >> 16) + (s4 & 0xFFFF) + (d4 >> 16) + (d4 & 0xFFFF) + 17 + \
        np.asarray(udp_len, dtype=np.int64)
    while np.any(total > 0xFFFF):
        total = (total & 0xFFFF) + (total >> 16)
    return total


def udp4_words(saddr, daddr, sport, dport, size, payload):
    """The 17 words of UDP/IPv4 packets. size: payload bytes (array); payload:
    uint32 array (n, 4) of the first 16 payload bytes as little-endian words,
    already zero past each packet's payload."""
    size = np.asarray(size, dtype=np.int64)
    n = len(size)
    w = np.zeros((n, WORDS), dtype=U32)
    w[:, 0] = be32(int(ipaddress.IPv4Address(saddr)))
    w[:, 4] = be32(int(ipaddress.IPv4Address(daddr)))
    udp_len = size + 8
    w[:, 8] = _be16_pair(np.full(n, sport), np.full(n, dport))
    w[:, 9] = _be16_pair(udp_len, udp_partial_csum(saddr, daddr, udp_len))
    w[:, 12:16] = payload
    w[:, 16] = (17 << 16) | (size + 28)
    return w


def clip_payload(payload, size):
    """Zero the payload bytes past each packet's size (the key reads at most that)."""
    size = np.asarray(size, dtype=np.int64)
    out = np.array(payload, dtype=U32)
    for i in range(4):
        keep = np.clip(size - 4 * i, 0, 4)  # bytes of word i inside the payload
        mask = np.where(keep >= 4, 0xFFFFFFFF, (1 << (8 * keep)) - 1).astype(U32)
        out[:, i] &= mask
    return out
