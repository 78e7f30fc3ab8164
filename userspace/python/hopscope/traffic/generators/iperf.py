"""iperf3 driver: one server per sender in the receiver (its port tells the
senders apart), one client per sender, --json on both sides; and the search
that finds each iperf3 packet's counter and send time from its record's key.

iperf3 3.12 starts each UDP payload with its send time (CLOCK_MONOTONIC: s, µs,
big-endian 32-bit each) and a 32-bit packet counter from 1; the rest is its
fill, "0123456789..." with --repeating-payload (random without it, which
would leave payload bytes 12..15 unknown). It logs no per-packet times, so
the time is searched: the microseconds just before the record's t1 whose key,
with the counter the record's place in the flow gives, is the record's key.
"""
import json

import numpy as np

from .. import packetkey as pk

COUNTER_MAX = 1 << 32
SEARCH_US = 50_000  # the longest sender -> t1 latency searched (a full backlog: ms)
BLOCK_US = 64       # microseconds tried at once per record
CHUNK = 4096        # records searched at once
SHIFT_ROUNDS = 200  # times the search re-synchronises (losses, long waits) before giving up


def server_command(s):
    return ["iperf3", "-s", "-1", "-p", str(s.port), "-J"]


def client_command(s, dest):
    size = s.size["value"]
    cmd = ["iperf3", "-c", dest, "-p", str(s.port), "-l", str(size), "-S", str(s.tos),
           "-k", str(s.packets()), "-J", "--repeating-payload",
           "-b", str(round(s.rate * size * 8))]
    if s.protocol == "udp":
        # pace at about one packet per tick (default tick 1 ms: bursts of rate/1000)
        cmd += ["-u", "--pacing-timer", str(int(min(1000, max(10, 1e6 / s.rate))))]
    if s.send_buffer:
        cmd += ["-w", str(s.send_buffer)]
    return cmd


def read_json(path):
    """An iperf3 --json output file; raises RuntimeError with iperf3's own error."""
    with open(path) as f:
        return parse_json(f.read(), path)


def parse_json(text, where):
    """An iperf3 --json output's text; RuntimeError, naming where it came
    from, when it is not iperf3 JSON or holds iperf3's own error."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise RuntimeError(f"{where}: not iperf3 JSON: {text[-300:]!r}")
    if doc.get("error"):
        raise RuntimeError(f"{where}: iperf3: {doc['error']}")
    return doc


def client_counts(doc, s):
    """(packets sent, source port) from the client's JSON."""
    sport = doc["start"]["connected"][0]["local_port"]
    if s.protocol == "udp":
        return int(doc["end"]["sum"]["packets"]), sport
    return int(doc["end"]["sum_sent"]["bytes"]) // s.size["value"], sport  # writes


def client_seconds(doc, s):
    """How long the client took to send its packets. With -k it sends them
    all however long that takes: longer than asked when something held it
    back (its link's shaper, its CPU)."""
    return float(doc["end"]["sum" if s.protocol == "udp" else "sum_sent"]["seconds"])


def server_received(doc, s):
    """Packets the server got (UDP: highest counter seen minus the missing ones)."""
    if s.protocol == "udp":
        x = doc["end"]["sum"]
        return int(x["packets"]) - int(x["lost_packets"])
    return int(doc["end"]["sum_received"]["bytes"]) // s.size["value"]


def _payload(counter, tx_us, size):
    """The first 16 payload bytes as key words: sec, usec, counter, fill "2345"."""
    n = len(counter)
    w = np.empty((n, 4), dtype=np.uint32)
    w[:, 0] = pk.be32(tx_us // 1_000_000)
    w[:, 1] = pk.be32(tx_us % 1_000_000)
    w[:, 2] = pk.be32(counter)
    w[:, 3] = np.frombuffer(bytes("0123456789" * 2, "ascii")[12:16], dtype="<u4")[0]
    return pk.clip_payload(w, np.full(n, size))


def find_counters(keys, t1_ns, size, saddr, daddr, sport, dport, sent):
    """For a flow's records in arrival order (keys, t1 in ns), each one's iperf3
    counter and send time (µs, CLOCK_MONOTONIC), -1 where not found.

    The k-th record carries counter k unless packets were lost before the
    router's input: each loss shifts the counters after it by one. Records are
    searched a chunk at a time with the current shift; when a chunk's records
    stop matching from some record on, that record is tried with every larger
    shift (at most sent - records in all) and the search goes on from there."""
    n = len(keys)
    counter = np.full(n, -1, dtype=np.int64)
    tx_us = np.full(n, -1, dtype=np.int64)
    t1_us = np.asarray(t1_ns, dtype=np.int64) // 1000
    keys = np.asarray(keys, dtype=np.uint32)
    base = np.arange(1, n + 1, dtype=np.int64)
    flow = (keys, t1_us, size, saddr, daddr, sport, dport)
    lost = max(0, sent - n)
    shift, start, rounds = 0, 0, 0
    while start < n:
        found = counter >= 0
        seen = (t1_us[found] - tx_us[found]).max() if found.any() else 0
        window = int(min(SEARCH_US, max(2000, 4 * seen)))
        idx = np.arange(start, min(n, start + CHUNK))
        _search(idx, base + shift, flow, counter, tx_us, window)
        done = idx[counter[idx] >= 0]
        last = done.max() if len(done) else start - 1
        # between two found records the shift is known: a miss there waited longer
        _search(idx[idx < last], base + shift, flow, counter, tx_us, SEARCH_US)
        if last == idx[-1]:
            start = idx[-1] + 1
            continue
        j = last + 1  # from here on nothing matched: a loss, or a long wait
        rounds += 1
        shifts = np.arange(shift, lost + 1)
        if rounds > SHIFT_ROUNDS:
            break  # the rest stays unmatched (counted as such by truth.py)
        one = np.full(len(shifts), j)
        c = np.full(len(shifts), -1, dtype=np.int64)
        t = np.full(len(shifts), -1, dtype=np.int64)
        _search(np.arange(len(shifts)), base[j] + shifts, tuple(
            x[one] if isinstance(x, np.ndarray) else x for x in flow), c, t, SEARCH_US)
        hit = np.flatnonzero(c >= 0)
        if len(hit):
            shift = int(shifts[hit[0]])
            counter[j], tx_us[j] = c[hit[0]], t[hit[0]]
        start = j + 1
    ok = counter >= 0
    if np.any(np.diff(counter[ok]) <= 0):
        raise RuntimeError("iperf3 counters found out of order: the flow's records are not "
                           "in send order")
    return counter, tx_us


def _search(idx, counters, flow, counter, tx_us, window):
    """For records idx not found yet: try counters[idx] with send times t1 - d
    µs, d = 0..window; fill counter and tx_us where the key matches."""
    keys, t1_us, size, saddr, daddr, sport, dport = flow
    idx = idx[counter[idx] < 0]
    for d0 in range(0, window, BLOCK_US):
        if not len(idx):
            return
        m = len(idx)
        cand = t1_us[idx][:, None] - np.arange(d0, d0 + BLOCK_US)[None, :]
        c = np.repeat(counters[idx], BLOCK_US)
        words = pk.udp4_words(saddr, daddr, sport, dport, np.full(m * BLOCK_US, size),
                              _payload(c % COUNTER_MAX, cand.ravel(), size))
        hit = (pk.key_hash(words).reshape(m, BLOCK_US) == keys[idx][:, None])
        rows = np.flatnonzero(hit.any(axis=1))
        first = hit[rows].argmax(axis=1)  # the latest time that matches
        counter[idx[rows]] = counters[idx[rows]]
        tx_us[idx[rows]] = cand[rows, first]
        idx = np.delete(idx, rows)
