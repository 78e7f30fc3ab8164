"""hopscope.live.metrics and `hopscope serve` without a router: the
exposition of a constructed snapshot in both text formats, its classic
buckets against the kernel's, and serve's answers and usage errors."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

import expfmt
from expfmt import get
from hopscope.live import metrics, snapshot
from hopscope.record import hist

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
# d_p of TOS 4: one 0 ns delay, buckets around 1 us, one past 2^34 ns
SERIES = {"tos": 4, "out_if": "r-rx", "delay": "d_p", "count": 14, "sum_ns": 17_179_880_000,
          "zero": 1, "negative": 1, "overflow": 1,
          "buckets": {"40": 2, "80": 6, "81": 2, "83": 1}}


def snap_obj(realtime_ns, final=False):
    return {"format": "hopscope-snapshot", "version": 1, "sequence": 7,
            "realtime_ns": realtime_ns, "final": final,
            "header": {"format": "hopscope-record", "start_monotonic_ns": 1,
                       "start_realtime_ns": 1_700_000_000_000_000_000, "backend": "ebpf",
                       "hostname": 'r"1', "tracer_version": "0.1.0", "histograms": "aggregate",
                       "kernel": {"release": "6.18"}, "netns": {"name": "router", "inode": 4},
                       "drop_reasons": {"5": "QDISC_DROP"},
                       "interfaces": [{"name": "r-s1", "ifindex": 2, "role": "in"},
                                      {"name": "r-s2", "ifindex": 3, "role": "in"},
                                      {"name": "r-rx", "ifindex": 4, "role": "out"}]},
            "counters": {"monotonic_ns": 9, "counters": {"complete": 14, "rb_fail": 0},
                         "probe_cost": {"sample_shift": 6, "bucket_ns": 16, "sq_cap_ns": 65535,
                                        "stages": {"t1": {"n": 4, "sum_ns": 800, "sum_sq": 1,
                                                          "max_ns": 250, "over": 0,
                                                          "hist": [0, 4]}}},
                         "histograms": {"schema": 3, "max_pow2": 34, "nokey": 3,
                                        "series": [SERIES], "drops_nokey": 0,
                                        "drops": [{"stage": "t3", "reason": 5, "count": 2},
                                                  {"stage": "t2", "reason": 99, "count": 1}]}}}


def snap(tmp_path, **kw):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(snap_obj(time.time_ns(), **kw)))
    return snapshot.read(p)


def by_name(fams):
    return {(n, tuple(sorted(l.items()))): v for f in fams.values() for n, l, v in f["samples"]}


def test_both_formats_are_strict_and_name_every_metric(tmp_path):
    s = snap(tmp_path)
    om = expfmt.parse(metrics.text(s, s.realtime_ns + 10**9), openmetrics=True)
    old = expfmt.parse(metrics.text(s, s.realtime_ns + 10**9, openmetrics=False),
                       openmetrics=False)
    assert {n for f in om.values() for n, _, _ in f["samples"]} == metrics.sample_names()
    assert by_name(om).keys() == by_name(old).keys()
    assert om["hopscope_run"]["type"] == "info" and old["hopscope_run_info"]["type"] == "gauge"
    assert om["hopscope_delay_seconds"]["unit"] == "seconds"
    v = by_name(om)
    assert v[("hopscope_snapshot_age_seconds", ())] == 1.0
    assert v[("hopscope_drops_total", (("reason", "QDISC_DROP"), ("stage", "t3")))] == 2
    assert v[("hopscope_drops_total", (("reason", "99"), ("stage", "t2")))] == 1  # not named
    assert v[("hopscope_unhistogrammed_packets_total", (("kind", "complete"),))] == 3
    assert v[("hopscope_probe_cost_seconds_sum", (("stage", "t1"),))] == 800e-9
    info = next(l for n, l, _ in om["hopscope_run"]["samples"])
    assert info == {"netns": "router", "inputs": "r-s1,r-s2", "outputs": "r-rx",
                    "backend": "ebpf", "hostname": 'r"1', "version": "0.1.0", "kernel": "6.18",
                    "histograms": "aggregate", "sampling": "off"}


def test_classic_buckets_are_sums_of_the_kernels(tmp_path):
    s = snap(tmp_path)
    rows = metrics.samples(s, s.realtime_ns)["hopscope_delay_seconds"]
    buckets = [(l["le"], v) for n, l, v in rows if n == "_bucket"]
    assert len(buckets) == len(metrics.CLASSIC) + 1 == 58
    assert buckets[0] == ("6.4e-08", 4)      # zero, negative and bucket 40 (~32 ns)
    assert buckets[-2] == ("17.179869184", 13) and buckets[-1] == ("+Inf", 14)  # overflow
    for i, (le, v) in zip(metrics.CLASSIC, buckets):
        assert float(le) == hist.upper(i) / 1e9
        assert v == 2 + sum(c for k, c in SERIES["buckets"].items() if int(k) <= i)
    sums = {n: v for n, _, v in rows if n != "_bucket"}
    assert sums == {"_sum": SERIES["sum_ns"] / 1e9, "_count": 14}


@pytest.mark.parametrize("setting, counts, factor", [
    (None, None, 1),
    ({"mode": "fixed", "n": 8}, {"mode": "fixed", "n": 8, "seen": 800, "sampled": 99,
                                 "unsampled": 701}, 8),
    ({"mode": "auto", "n": 1, "cpu_budget_pct": 5},
     {"mode": "auto", "n": 16, "seen": 1000, "sampled": 250, "unsampled": 750}, 4),
])
def test_the_sampling_factor_scales_traced_counts(tmp_path, setting, counts, factor):
    obj = snap_obj(time.time_ns())
    if setting:
        obj["header"]["sampling"] = setting
        obj["counters"]["sampling"] = counts
    p = tmp_path / "s.json"
    p.write_text(json.dumps(obj))
    s = snapshot.read(p)
    v = by_name(expfmt.parse(metrics.text(s, s.realtime_ns), openmetrics=True))
    assert v[("hopscope_sampling_factor", ())] == factor
    info = next(l for n, l, _ in expfmt.parse(metrics.text(s, s.realtime_ns),
                                              openmetrics=True)["hopscope_run"]["samples"])
    assert info["sampling"] == (setting or {}).get("mode", "off")


def hopscope(*args, **kw):
    return subprocess.run([sys.executable, "-m", "hopscope", *args], capture_output=True,
                          text=True, env=ENV, **kw)


@pytest.mark.parametrize("args, status, said", [
    ((), 2, "--listen"),
    (("--listen", "9419", "--snapshot", "s"), 2, "is not ADDR:PORT"),
    (("--listen", "127.0.0.1:99999", "--snapshot", "s"), 2, "is not ADDR:PORT"),
    (("--listen", "127.0.0.1:9419"), 2, "give --snapshot FILE"),
    (("--listen", "127.0.0.1:9419", "--stale", "0", "--snapshot", "s"), 2, "seconds > 0"),
    (("--listen", "127.0.0.1:9419", "--", "-i", "x", "--snapshot", "y"), 2,
     "--snapshot is serve's to set"),
    (("--listen", "127.0.0.1:0", "--snapshot", "/nonexistent/s.json"), 1, "no such snapshot"),
])
def test_usage_and_runtime_errors(args, status, said):
    r = hopscope("serve", *args, timeout=60)
    assert r.returncode == status and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_serves_503_when_stale_and_refuses_a_taken_port(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snap_obj(time.time_ns())))
    p = subprocess.Popen([sys.executable, "-m", "hopscope", "serve", "--listen", "127.0.0.1:0",
                          "--snapshot", str(path), "--stale", "60"], env=ENV,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert "/metrics serves" in line, line
        url = line.split("hopscope serve: ", 1)[1].split()[0]
        s, ctype, text = get(url, "application/openmetrics-text; version=1.0.0")
        assert s == 200 and ctype == metrics.OPENMETRICS and text.endswith("# EOF\n")
        s, ctype, _ = get(url)
        assert s == 200 and ctype == metrics.PROMETHEUS
        assert get(url.replace("/metrics", "/nothing"))[0] == 404
        path.write_text(json.dumps(snap_obj(time.time_ns() - 61 * 10**9)))
        s, _, text = get(url)
        assert s == 503 and "s old: is its recorder running?" in text, text
        path.write_text(json.dumps(snap_obj(time.time_ns() - 61 * 10**9, final=True)))
        assert get(url)[0] == 200  # a stopped recorder's last word, however old
        path.write_text("{")
        s, _, text = get(url)
        assert s == 503 and "not JSON" in text, text
        path.write_text(json.dumps(snap_obj(time.time_ns())))
        port = url.split(":")[2].split("/")[0]
        r = hopscope("serve", "--listen", f"127.0.0.1:{port}", "--snapshot", str(path),
                     timeout=60)
        assert r.returncode == 1 and "Address already in use" in r.stderr, r.stderr
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    assert p.returncode == 0, p.stderr.read()
    with socket.socket() as s:  # nothing listens there any more
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the scrapes' TIME_WAIT
        s.bind(("127.0.0.1", int(port)))
        s.listen()


def test_docs_table_names_every_metric_and_no_other():
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        table = f.read().split("## Every metric", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(hopscope_[a-z_]+)` \| (\w+)", table, re.M))
    assert documented == {(name, kind) for name, (kind, *_) in metrics.FAMILIES.items()}
    info_labels = re.search(r"^\| `hopscope_run` \|[^|]*\| ([^|]*)\|", table, re.M).group(1)
    assert re.findall(r"`(\w+)`", info_labels) == list(metrics.RUN_LABELS)
