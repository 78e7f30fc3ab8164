"""The stage histograms' buckets: the C function the BPF programs run
(include/hopscope.h, hs_hist_bucket, compiled here from the same header)
against the exact integer definition in record/hist.py, on the values where
a mistake would show (each bound, one either side, powers of two); and the
reader's shape check and quantiles."""
import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from hopscope.record import header as h
from hopscope.record import hist

ROOT = Path(__file__).resolve().parents[2]

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include "hopscope.h"
int main(void)
{
	unsigned long long d;

	while (scanf("%llu", &d) == 1)
		printf("%u\n", hs_hist_bucket(d));
	return 0;
}
"""


def crafted():
    vals = set(range(1, 3000))
    for i in range(64 * 8):
        b = 2 ** (i / 8)
        for base in (math.floor(b), math.ceil(b)):
            # the bound itself in integers: floor of the 8th root of 2^i
            vals.update(x for x in (base - 1, base, base + 1) if 0 < x < 1 << 64)
        r = math.isqrt(math.isqrt(math.isqrt(1 << i)))
        vals.update(x for x in (r - 1, r, r + 1) if 0 < x < 1 << 64)
    rnd = random.Random(1)
    vals.update(rnd.randrange(1, 1 << 64) for _ in range(3000))
    vals.update(rnd.randrange(1, 1 << 36) for _ in range(3000))
    vals.add((1 << 64) - 1)
    return sorted(vals)


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
def test_c_bucket_is_the_exact_one(tmp_path):
    src = tmp_path / "b.c"
    src.write_text(PROG)
    exe = tmp_path / "b"
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", f"-I{ROOT / 'include'}", str(src),
                    "-o", str(exe)], check=True)
    vals = crafted()
    out = subprocess.run([str(exe)], input="\n".join(map(str, vals)), text=True,
                         capture_output=True, check=True).stdout.split()
    got = [int(x) for x in out]
    want = [hist.bucket(v) for v in vals]
    bad = [(v, g, w) for v, g, w in zip(vals, got, want) if g != w]
    assert not bad, bad[:5]


def test_bucket_bounds_are_native_histogram_schema_3():
    assert hist.SCHEMA == 3 and h.HIST_BUCKETS == (h.HIST_MAX_POW2 << 3) + 1
    for i in range(1, hist.NBUCKETS):
        lo, hi = 2 ** ((i - 1) / 8), 2 ** (i / 8)
        # every integer in (lo, hi] is in bucket i
        for v in {math.floor(lo) + 1, math.floor(hi)}:
            if lo < v <= hi:
                assert hist.bucket(v) == i, (v, i)
    assert hist.bucket(1) == 0 and hist.bucket(2) == 8 and hist.bucket(3) == 13
    # the last bucket ends at 2^34 ns; one more is overflow
    assert hist.bucket(1 << h.HIST_MAX_POW2) == hist.NBUCKETS - 1
    assert hist.bucket((1 << h.HIST_MAX_POW2) + 1) == hist.NBUCKETS


def test_header_thresholds_are_the_integer_eighth_roots():
    text = (ROOT / "include" / "hopscope.h").read_text()
    for k in range(1, 8):
        want = math.isqrt(math.isqrt(math.isqrt(1 << (504 + k))))
        assert f"#define HS_HIST_T{k} {want:#x}ull" in text


def series(buckets, zero=0, overflow=0, negative=0):
    n = sum(buckets.values()) + zero + overflow + negative
    return {"tos": 4, "out_if": "r-rx", "delay": "d_p", "count": n, "sum_ns": 0,
            "zero": zero, "negative": negative, "overflow": overflow,
            "buckets": {str(k): v for k, v in buckets.items()}}


def test_check_and_quantiles():
    s = series({80: 50, 88: 49, 96: 1})
    assert hist.check({"schema": 3, "nokey": 0, "series": [s]}) is None
    assert hist.quantile(s, 0.5) == 2.0 ** 10
    assert hist.quantile(s, 0.99) == 2.0 ** 11
    assert hist.quantile(s, 1.0) == 2.0 ** 12
    assert hist.quantile(series({}, zero=3), 0.5) == 0.0
    assert hist.quantile(series({1: 1}, overflow=3), 0.99) == math.inf
    bad = dict(s, count=s["count"] + 1)
    assert "add up" in hist.check({"schema": 3, "nokey": 0, "series": [bad]})
    assert "schema" in hist.check({"schema": 4, "nokey": 0, "series": []})
    assert "delay" in hist.check({"schema": 3, "nokey": 0, "series": [dict(s, delay="x")]})


def test_drops_shape():
    ok = {"schema": 3, "nokey": 0, "series": [],
          "drops": [{"stage": "t3", "reason": 5, "count": 7}]}
    assert hist.check(ok) is None
    assert hist.drops({"histograms": ok}) == ok["drops"]
    bad = dict(ok, drops=[{"stage": "t9", "reason": 5, "count": 7}])
    assert "drops" in hist.check(bad)
    assert hist.drops({"histograms": bad}) is None and hist.drops({}) is None


def test_describe_lines():
    from hopscope.report.describe import hist_lines
    s = series({80: 50, 88: 49, 96: 1}, overflow=0)
    drops = [{"stage": "t3", "reason": 5, "count": 7}]
    lines = hist_lines([s], drops, {"5": "QDISC_DROP"})
    assert lines[0] == ("drops", "7 at t3 (QDISC_DROP)")
    assert lines[1] == ("histogram", "d_p tos 4 out r-rx: 100 delays, p50 <= 1.024 us, "
                                     "p99 <= 2.048 us")
    assert hist_lines(None, None, None) == []
