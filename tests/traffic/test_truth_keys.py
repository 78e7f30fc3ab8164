"""The packet key recomputed in numpy (packetkey.py) against the reference in
tests/helpers/keyhash.py, and the iperf3 counter search on flows built with known
send times, waits and losses."""
import ipaddress
import struct

import numpy as np
import pandas as pd
import pytest

from hopscope.traffic.generators import iperf
from hopscope.traffic import packetkey as pk
from hopscope.traffic.truth import join_truth

from keyhash import key_hash as reference

SRC, DST = "198.18.1.2", "198.18.3.2"


def reference_key(sport, dport, payload, csum=None):
    udp_len = 8 + len(payload)
    csum = int(pk.udp_partial_csum(SRC, DST, udp_len)) if csum is None else csum
    l4 = struct.pack(">HHHH", sport, dport, udp_len, csum)
    return reference(ipaddress.IPv4Address(SRC).packed, ipaddress.IPv4Address(DST).packed,
                     l4, payload[:16], 17, 20 + udp_len)


def test_partial_checksum_is_what_veth_carried():
    # a D-ITG packet captured at the receiver: UDP length 48, checksum field 0x906a
    assert int(pk.udp_partial_csum(SRC, DST, 48)) == 0x906A


@pytest.mark.parametrize("size", [1, 4, 10, 15, 16, 20, 550, 1472])
def test_numpy_key_equals_reference(size):
    rng = np.random.default_rng(size)
    payload = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    words = np.frombuffer(payload[:16].ljust(16, b"\0"), dtype="<u4").reshape(1, 4)
    got = pk.key_hash(pk.udp4_words(SRC, DST, 40000, 10001, [size], pk.clip_payload(words, [size])))
    assert int(got[0]) == reference_key(40000, 10001, payload)


@pytest.mark.parametrize("made", [None, 1])
def test_keys_of_another_hash_are_refused_not_left_unmatched(made):
    """A file whose keys another hs_key_hash made (before the header said
    which: 1) would match no generator packet: refused, saying why."""
    df = pd.DataFrame()
    df.attrs["header"] = {"mono_to_realtime_ns": 0}
    if made is not None:
        df.attrs["header"]["key_hash"] = made
    with pytest.raises(ValueError, match="keys were made by key hash 1, this hopscope "
                                         "recomputes the generators' with 2"):
        join_truth(df, "/nonexistent", meta={"addresses": {}, "senders": {}})


def iperf3_flow(n, lost=(), seed=1, slow=()):
    """Records of an iperf3 flow: (keys, t1 ns, true counters, true send µs)."""
    rng = np.random.default_rng(seed)
    tx = 27_000_000_000 + np.cumsum(rng.choice([0, 0, 1, 90, 250], n))  # bursts share a µs
    wait = rng.integers(3, 400, n)
    wait[list(slow)] = 20_000  # a full queue: 20 ms
    counters = np.arange(1, n + 1)
    keep = np.setdiff1d(np.arange(n), np.array(lost, dtype=int))
    payload = [struct.pack(">III", t // 10**6, t % 10**6, c) + b"2345" for t, c in zip(tx, counters)]
    keys = np.array([reference_key(41000, 10002, p) for p in payload], dtype=np.uint32)
    # the router's input is FIFO: a packet arrives after the one sent before it
    t1 = np.maximum.accumulate((tx + wait) * 1000 + rng.integers(0, 1000, n))
    return keys[keep], t1[keep], counters[keep], tx[keep]


def test_iperf3_search_finds_every_counter_and_send_time():
    keys, t1, counters, tx = iperf3_flow(3000, slow=[100, 2000])
    c, t = iperf.find_counters(keys, t1, 16, SRC, DST, 41000, 10002, sent=3000)
    np.testing.assert_array_equal(c, counters)
    np.testing.assert_array_equal(t, tx)


def test_iperf3_search_across_losses_before_the_router():
    lost = [0, 5, 6, 7, 1500, 2999]
    keys, t1, counters, tx = iperf3_flow(3000, lost=lost, seed=2)
    c, t = iperf.find_counters(keys, t1, 16, SRC, DST, 41000, 10002, sent=3000)
    np.testing.assert_array_equal(c, counters)
    np.testing.assert_array_equal(t, tx)
    assert np.setdiff1d(np.arange(1, 3001), c).tolist() == [i + 1 for i in lost]


def test_iperf3_search_leaves_foreign_records_unfound():
    keys, t1, counters, tx = iperf3_flow(500, seed=3)
    keys = keys.copy()
    keys[200] ^= 1  # not a key of this flow
    c, t = iperf.find_counters(keys, t1, 16, SRC, DST, 41000, 10002, sent=500)
    assert c[200] == -1 and t[200] == -1
    mask = np.arange(500) != 200
    np.testing.assert_array_equal(c[mask], counters[mask])
