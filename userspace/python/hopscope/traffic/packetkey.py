"""hs_key_hash (include/hopscope.h) over numpy arrays: the key a record holds,
recomputed for packets a generator says it sent, to find their records.

The key hashes 17 little-endian 32-bit words: saddr[4], daddr[4], the first
16 bytes of L4 (for UDP: the 8-byte header, then zeros), the first 16 payload
bytes (zeros past the payload) and proto << 16 | ip_len.
"""
import ipaddress

import numpy as np

U32 = np.uint32
WORDS = 17


def _mix(h, v):
    v = v * U32(0xCC9E2D51)
    v = (v << U32(15)) | (v >> U32(17))
    v = v * U32(0x1B873593)
    h = h ^ v
    h = (h << U32(13)) | (h >> U32(19))
    return h * U32(5) + U32(0xE6546B64)


def key_hash(words):
    """words: uint32 array (..., 17) -> the keys, uint32 (...)."""
    words = np.asarray(words, dtype=U32)
    with np.errstate(over="ignore"):
        h = np.full(words.shape[:-1], 0x9747B28C, dtype=U32)
        for i in range(WORDS):
            h = _mix(h, words[..., i])
        h ^= h >> U32(16)
        h *= U32(0x85EBCA6B)
        h ^= h >> U32(13)
        h *= U32(0xC2B2AE35)
        h ^= h >> U32(16)
    return h


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
