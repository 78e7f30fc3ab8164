"""`hopscope serve` scraped by a real Prometheus (Debian's package, started
here on loopback): the quantiles its histogram_quantile gives of the
endpoint's histograms fall in the classic bucket of the kernel's own
histograms' quantiles and of the records' percentiles of the same packets,
its counts are the packets the router sent; the endpoint's text is strict
OpenMetrics (and 0.0.4 when not asked for it); a stale snapshot is a 503.
Own prefix (hst-sv-)."""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.parse

import numpy as np
import pytest

import hopscope
import livebed
from testlib import HOPSCOPE, wait_for
from hopscope.live import metrics, snapshot
from hopscope.record import hist
from livebed import ipv4_only, links, recorder, send_udp, tb, wait_out  # noqa: F401

import dashboard
import expfmt
from expfmt import get

N = 300
DELAYS = ("d_iq", "d_p", "d_oq", "transit")
OM = "application/openmetrics-text; version=1.0.0"


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    monkeypatch.setattr(livebed, "P", "hst-sv-")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """processes of one test, stopped at teardown (SIGTERM, then SIGKILL)"""

    def __init__(self, tmp):
        self.tmp, self.all = tmp, []

    def start(self, name, argv):
        log = open(self.tmp / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        p.log = self.tmp / f"{name}.log"
        self.all.append(p)
        return p

    def stop(self, p, timeout=60):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise

    def close(self):
        for p in reversed(self.all):
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.fixture
def procs(tmp_path):
    ps = Procs(tmp_path)
    yield ps
    ps.close()
    # serve's recorder dies with it: nothing of this test's left on the machine
    left = lambda: subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True,
                                  text=True).stdout.strip()
    assert wait_for(lambda: not left(), timeout=60), left()


def serve(procs, *args):
    """hopscope serve --listen 127.0.0.1:0 ARGS; (process, its metrics URL)"""
    p = procs.start("serve", [HOPSCOPE, "serve", "--listen", "127.0.0.1:0", *args])
    assert wait_for(lambda: "/metrics serves" in p.log.read_text() or p.poll() is not None,
                    timeout=60)
    said = p.log.read_text()
    assert "/metrics serves" in said, said
    return p, said.split("hopscope serve: ", 1)[1].split()[0]


class Prometheus:
    def __init__(self, procs, target):
        if not shutil.which("prometheus"):
            pytest.fail("no prometheus: run make deps (scripts/install-deps.sh installs it)")
        cfg = procs.tmp / "prometheus.yml"
        cfg.write_text(json.dumps({  # YAML holds JSON
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{"job_name": "hopscope", "static_configs": [{"targets": [target]}]}]}))
        for attempt in range(5):  # a port another process took meanwhile: another one
            self.url = f"http://127.0.0.1:{free_port()}"
            self.p = procs.start(f"prometheus{attempt}", [
                "prometheus", f"--config.file={cfg}", f"--web.listen-address={self.url[7:]}",
                f"--storage.tsdb.path={procs.tmp / f'tsdb{attempt}'}", "--log.level=warn"])
            if wait_for(lambda: self.p.poll() is not None or
                        get(self.url + "/-/ready")[0] == 200, timeout=120) and self.p.poll() is None:
                return
            procs.stop(self.p)
        pytest.fail(f"prometheus did not start: {self.p.log.read_text()[-2000:]}")

    def query(self, expr):
        """an instant query's vector as {frozen labels: value}"""
        s, _, body = get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert s == 200, (expr, s, body)
        data = json.loads(body)["data"]["result"]
        return {frozenset(r["metric"].items()): float(r["value"][1]) for r in data}

    def until(self, expr, ok, timeout=120):
        """the query's vector once ok(vector): a scrape that failed on a busy
        machine ends the series until the next one, so answers are polled for"""
        got = []
        assert wait_for(lambda: got.append(self.query(expr)) or ok(got[-1]), timeout=timeout), \
            (expr, got[-1])
        return got[-1]


def classic(ns):
    """the classic bucket (index into metrics.CLASSIC) a delay in ns falls in"""
    return next((j for j, i in enumerate(metrics.CLASSIC) if ns <= hist.upper(i) * (1 + 1e-12)),
                len(metrics.CLASSIC))


def test_prometheus_quantiles_agree_with_kernel_and_records(tb, procs, tmp_path):
    """serve with its own recorder (--histograms: records and histograms of
    the same packets), scraped every second by Prometheus"""
    tb.up()
    ipv4_only()
    snap, out = tmp_path / "live.json", tmp_path / "run.hsr"
    sv, url = serve(procs, "--snapshot", str(snap), "--", "-n", livebed.P + "router",
                    "-i", "r-s1,r-s2", "-O", "r-rx", "--histograms", "-o", str(out))
    assert wait_for(snap.exists, timeout=60), sv.log.read_text()
    prom = Prometheus(procs, url.split("/")[2])
    prom.until("up", lambda v: list(v.values()) == [1])
    # two rounds, so that rates, which need two scrapes of a series, see the second
    before = links()
    total = 'sum(hopscope_delay_seconds_count{delay="transit"})'
    for n in (1, 2):
        send_udp(N, port=5001, tclass=4)
        send_udp(N, port=5002, sport=40001, tclass=8)
        wait_out(before, 2 * N * n)
        sent = links()["r-rx"]["tx"]["packets"] - before["r-rx"]["tx"]["packets"]
        assert sent == 2 * N * n
        prom.until(total, lambda v: list(v.values()) == [sent])
    prom.until('hopscope_kernel_events_total{counter="complete"}',
               lambda v: list(v.values()) == [sent])
    kernel = {(s["tos"], s["delay"]): s for s in snapshot.read(snap).series}
    for (tos, delay), s in kernel.items():
        assert s["count"] == 2 * N and s["out_if"] == "r-rx", s
    # the endpoint's text, in both formats, as Prometheus and a strict reader see it
    status, ctype, text = get(url, OM)
    assert status == 200 and ctype.startswith("application/openmetrics-text; version=1.0.0")
    fams = expfmt.parse(text, openmetrics=True)
    names = {s for f in fams.values() for s, _, _ in f["samples"]}
    assert names == metrics.sample_names() - {"hopscope_drops_total"}  # none dropped
    status, ctype, text04 = get(url)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
    expfmt.parse(text04, openmetrics=False)

    # contrib's Grafana dashboard: every query runs here, its p50 panel draws
    for expr in dashboard.queries():
        prom.query(expr)
    prom.until(dashboard.queries()[0],  # by delay and TOS
               lambda v: len(v) == 2 * len(DELAYS) and all(x > 0 for x in v.values()))

    # asked while serve runs: once its scrapes fail, Prometheus ends the series
    quantiles = {(tos, delay, q): prom.until(f'histogram_quantile({q}, hopscope_delay_seconds_'
                                             f'bucket{{delay="{delay}",tos="{tos}"}})',
                                             lambda v: len(v) == 1)
                 for tos in (4, 8) for delay in DELAYS for q in (0.5, 0.99)}
    assert procs.stop(sv) == 0, sv.log.read_text()  # SIGTERM: the recorder stops, serve exits 0
    df = hopscope.load(str(out), strict=True)
    done = df[(df.status == "complete") & (df.out_if == "r-rx")]
    for tos in (4, 8):
        for delay in DELAYS:
            rows = done[done.tos == tos][delay].to_numpy(np.int64)
            assert len(rows) == 2 * N, (tos, delay)
            for q in (0.5, 0.99):
                got, = quantiles[(tos, delay, q)].values()
                assert got is not None and got > 0, (tos, delay, q)
                p = int(np.percentile(rows, q * 100, method="inverted_cdf"))
                want = {"kernel": hist.quantile(kernel[(tos, delay)], q), "records": p}
                for what, ns in want.items():
                    # within one bucket: Prometheus interpolates inside the classic
                    # bucket of the rank, the others name a point in it
                    assert abs(classic(got * 1e9) - classic(ns)) <= 1, \
                        (tos, delay, q, what, got * 1e9, ns)


def test_stale_snapshot_is_503_and_final_is_served(tb, procs, recorder, tmp_path):
    """serve of another recorder's snapshot: 200 while it is fresh, 503 once
    it is older than --stale (the recorder stopped with SIGSTOP), 200 again,
    and the final snapshot of a recorder that stopped is served however old"""
    tb.up()
    ipv4_only()
    snap = tmp_path / "live.json"
    rec = recorder("--aggregate", "--snapshot", str(snap))
    assert wait_for(snap.exists, timeout=60)
    _, url = serve(procs, "--snapshot", str(snap), "--stale", "2")
    scrape = lambda: get(url, OM)
    assert wait_for(lambda: scrape()[0] == 200, timeout=60), scrape()
    assert "hopscope_snapshot_final 0\n" in scrape()[2]
    rec.p.send_signal(signal.SIGSTOP)
    try:
        assert wait_for(lambda: scrape()[0] == 503, timeout=60), scrape()
        assert "old: is its recorder running?" in scrape()[2], scrape()
    finally:
        rec.p.send_signal(signal.SIGCONT)
    assert wait_for(lambda: scrape()[0] == 200, timeout=60), scrape()
    rec.stop()
    assert snapshot.read(snap).final

    def old_final():
        s, _, text = scrape()
        assert s == 200, (s, text)
        age = expfmt.parse(text, True)["hopscope_snapshot_age_seconds"]["samples"][0][2]
        return "hopscope_snapshot_final 1\n" in text and age > 2
    assert wait_for(old_final, timeout=60), scrape()


def test_recorder_usage_error_is_serves(procs, tmp_path):
    """a recorder option serve hands on that the recorder refuses: serve
    exits with the recorder's status and message"""
    p, _ = serve(procs, "--", "-n", "hst-sv-none", "-i", "x", "-O", "y", "--no-such-option")
    assert p.wait(timeout=60) == 2, p.log.read_text()
    assert "no-such-option" in p.log.read_text()


def test_recorder_ends_with_a_killed_serve(tb, procs, tmp_path):
    """kill -9 of serve: the kernel hands its recorder SIGTERM, and the
    recorder's links leave the router with it"""
    tb.up()
    ipv4_only()
    scratch = lambda: set(glob.glob(os.path.join(tempfile.gettempdir(), "hopscope-serve-*")))  # noqa: E731
    before = scratch()
    snap = tmp_path / "live.json"
    sv, _ = serve(procs, "--snapshot", str(snap), "--", "-n", livebed.P + "router",
                  "-i", "r-s1", "-O", "r-rx")
    assert wait_for(snap.exists, timeout=60), sv.log.read_text()
    recorder_running = lambda: subprocess.run(["pgrep", "-f", f"record -q --snapshot {snap}"],
                                              capture_output=True).returncode == 0
    assert recorder_running()
    sv.kill()
    sv.wait()
    assert wait_for(lambda: not recorder_running(), timeout=60)
    assert wait_for(lambda: not any(livebed.net_show().get(k) for k in ("xdp", "tc")),
                    timeout=30), livebed.net_show()
    # nothing of serve ran to remove its scratch folder: the next serve
    # does (live/proc.py, scratch_dir); this test removes its own now
    left = scratch() - before
    assert len(left) == 1, left
    for d in left:
        shutil.rmtree(d)
