"""contrib/: the Grafana dashboard is valid JSON whose every query reads only
metrics `hopscope serve` exposes (its one list, hopscope.live.metrics), and
the systemd unit runs the installed hopscope with options serve and the
recorder accept. (tests/e2e/test_serve.py runs the dashboard's queries on a
real Prometheus.)"""
import argparse
import configparser
import os
import re
import shlex
import subprocess

from dashboard import ROOT, load, metric_names, queries
from hopscope.live import metrics, serve

UNIT = os.path.join(ROOT, "contrib", "systemd", "hopscope.service")
ENVFILE = os.path.join(ROOT, "contrib", "systemd", "hopscope.env")


def test_dashboard_queries_read_only_served_metrics():
    dash = load()
    assert dash["uid"] and dash["panels"]
    read = set()
    for expr in queries(dash):
        names = metric_names(expr)
        assert names and names <= metrics.sample_names(), (expr, names - metrics.sample_names())
        read |= names
    # every family a panel promises: delays, packets, drops, losses, probe cost, runs
    for name in ("hopscope_delay_seconds_bucket", "hopscope_delay_seconds_count",
                 "hopscope_kernel_events_total", "hopscope_drops_total",
                 "hopscope_unhistogrammed_packets_total", "hopscope_probe_cost_seconds_sum",
                 "hopscope_run_info", "hopscope_snapshot_age_seconds"):
        assert name in read, name


def test_metric_names_sees_through_promql():
    """the reader above would pass anything if it found no names"""
    e = ('histogram_quantile(0.5, sum by (le, tos) (rate(foo_bucket{a="b{c}"}[5m]))) / '
         'ignoring (x) bar_total offset 5m')
    assert metric_names(e) == {"foo_bucket", "bar_total"}


def unit():
    c = configparser.ConfigParser(strict=False, interpolation=None)
    c.optionxform = str
    c.read(UNIT)
    return c


def environment(c):
    """Environment= then EnvironmentFile= (the shipped example), as systemd reads them"""
    env = dict(a.split("=", 1) for a in c["Service"]["Environment"].split())
    with open(ENVFILE) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                env[k] = v
    return env


def exec_start(c, env):
    """ExecStart's argv: ${VAR} one word, $VAR split at whitespace (systemd.service(5))"""
    words = []
    for w in shlex.split(c["Service"]["ExecStart"]):
        if re.fullmatch(r"\$[A-Z_]+", w):
            words += env[w[1:]].split()
        else:
            words.append(re.sub(r"\$\{([A-Z_]+)\}", lambda m: env[m.group(1)], w))
    return words


def test_unit_runs_installed_serve_with_options_it_accepts():
    c = unit()
    s = c["Service"]
    assert s["EnvironmentFile"] == "/etc/default/hopscope"
    assert s["KillSignal"] == "SIGTERM" and s["Restart"] == "on-failure"
    argv = exec_start(c, environment(c))
    with open(os.path.join(ROOT, "Makefile")) as f:
        prefix = re.search(r"^PREFIX\s*\?=\s*(\S+)", f.read(), re.M).group(1)
    assert argv[0] == f"{prefix}/sbin/hopscope" and argv[1] == "serve"  # where make install puts it
    parser = argparse.ArgumentParser(prog="hopscope serve")
    serve.add_arguments(parser)
    args = parser.parse_args(argv[2:])  # exits 2, failing the test, on an option serve lacks
    assert args.listen and args.record and not args.snapshot
    # each of the recorder's options is one `hopscope record --help` lists
    help_ = subprocess.run([os.path.join(ROOT, "build", "hopscope"), "record", "--help"],
                           capture_output=True, text=True).stdout
    for opt in (a.split("=")[0] for a in args.record if a.startswith("-")):
        assert re.search(rf"(^|[ ,]){re.escape(opt)}[ =,\n]", help_, re.M), opt
    assert set(s["StateDirectory"].split()) == {"hopscope"} and \
        "/var/lib/hopscope/" in s["ExecStart"]
