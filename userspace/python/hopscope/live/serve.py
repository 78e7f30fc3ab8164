"""`hopscope serve`: a running recorder's snapshot as an OpenMetrics endpoint
for Prometheus (metrics.py), or a recorder of its own started as a child so
that one service does both (docs/metrics.md).

A snapshot that is missing, unreadable or older than --stale seconds (its
recorder stopped without a final one, or hangs) is answered with 503: the
scrape fails, Prometheus' `up` goes to 0 and the series end, where serving
the last numbers again would draw a dead recorder as a quiet router. A final
snapshot (the recorder stopped cleanly) is served as it is, with
hopscope_snapshot_final 1.
"""
import argparse
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from . import metrics, snapshot
from .proc import HOPSCOPE, end_with_parent, scratch_dir

EPILOG = """\
examples:
  hopscope record -n router -i r-s1 -O r-rx --aggregate --snapshot /run/hs.json -o run.hsr &
  hopscope serve --listen 127.0.0.1:9419 --snapshot /run/hs.json
      serve a running recorder's snapshot
  hopscope serve --listen 127.0.0.1:9419 -- -n router -i eth0 -O eth1 -o /var/lib/hopscope/run.hsr
      start `hopscope record --aggregate -q --counters-every 60 --snapshot ...` with
      these options and serve it; SIGTERM or SIGINT stops both, and serve exits
      with the recorder's status (without -o its record file is temporary)

Metrics: docs/metrics.md. Exit status: 0 stopped by a signal (or the recorder
ended well), 1 runtime error, 2 usage error."""


def listen_address(text):
    """ADDR:PORT ([ADDR]:PORT for IPv6) -> (family, sockaddr)"""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not ADDR:PORT (e.g. 127.0.0.1:9419)")
    try:
        family, _, _, _, addr = socket.getaddrinfo(host or None, int(port), type=socket.SOCK_STREAM,
                                                   flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {host}: {e.strerror}") from None
    return family, addr


def seconds(text):
    try:
        v = float(text)
    except ValueError:
        v = 0
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0")
    return v


def add_arguments(p):
    p.epilog = EPILOG
    p.add_argument("--listen", required=True, type=listen_address, metavar="ADDR:PORT",
                   help="address and port to serve /metrics on (port 0: any free one)")
    p.add_argument("--snapshot", metavar="FILE",
                   help="the snapshot of `hopscope record --snapshot FILE`; with recorder "
                        "options, where the recorder started here writes it")
    p.add_argument("--stale", type=seconds, default=5.0, metavar="SEC",
                   help="answer 503 when the snapshot is older than this and not final "
                        "(default 5; the recorder writes one a second)")
    p.add_argument("record", nargs="*", metavar="-- RECORD_OPTION",
                   help="options of a `hopscope record` to start and serve (after --)")


def run(args, parser):
    if not args.record and not args.snapshot:
        parser.error("give --snapshot FILE (a running recorder's), or the options of a "
                     "recorder to start after --")
    clash = [o for o in ("--snapshot", "--ready-fd") if _given(args.record, o)]
    if clash:
        parser.error(f"{clash[0]} is serve's to set, not among the recorder's options")
    if args.record and not os.access(HOPSCOPE, os.X_OK):
        print(f"hopscope serve: {HOPSCOPE} not found: run make", file=sys.stderr)
        return 1
    if not args.record:
        try:
            snapshot.read(args.snapshot)
        except snapshot.SnapshotError as e:
            print(f"hopscope serve: {e}", file=sys.stderr)
            return 1
    tmp = scratch_dir("hopscope-serve-") if args.record else None
    try:
        path = args.snapshot or os.path.join(tmp, "snapshot.json")
        try:
            server = _server(args.listen, path, args.stale)
        except OSError as e:
            print(f"hopscope serve: cannot listen on {_url(args.listen[1])}: {e.strerror}",
                  file=sys.stderr)
            return 1
        with server:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            print(f"hopscope serve: {_url(server.server_address)}/metrics serves {path}",
                  file=sys.stderr, flush=True)
            if not args.record:
                stop = threading.Event()
                _on_signals(lambda sig: stop.set())
                stop.wait()
                status = 0
            else:
                status = _recorder(args.record, path, tmp)
            server.shutdown()
        return status
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _given(argv, option):
    return any(a == option or a.startswith(option + "=") for a in argv)


def _recorder(options, path, tmp):
    """Run the recorder until it ends, handing it SIGTERM and SIGINT; its exit
    status (128 + the signal that killed it)."""
    argv = [HOPSCOPE, "record", "-q", "--snapshot", path]
    if not (_given(options, "--aggregate") or _given(options, "--histograms")):
        argv.append("--aggregate")
    if not _given(options, "--counters-every"):
        argv += ["--counters-every", "60"]
    if not (_given(options, "--output") or any(a.startswith("-o") for a in options)):
        argv += ["-o", os.path.join(tmp, "run.hsr")]
    pending = []
    child = None

    def forward(sig):
        if child is None:
            pending.append(sig)
        elif child.poll() is None:
            child.send_signal(sig)
    _on_signals(forward)
    if pending:
        return 0
    child = subprocess.Popen([*argv, *options], stdin=subprocess.DEVNULL,
                             preexec_fn=end_with_parent(os.getpid()))
    for sig in pending:  # a signal between the check and Popen
        child.send_signal(sig)
    status = child.wait()
    return 128 - status if status < 0 else status


def _on_signals(handler):
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _: handler(s))


def _url(addr):
    host, port = addr[0], addr[1]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


def _server(listen, path, stale):
    family, addr = listen

    class Server(http.server.ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

    server = Server(addr, _Handler)
    server.snapshot, server.stale, server.problem = path, stale, None
    return server


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "hopscope-serve"

    def do_GET(self):
        if self.path.split("?")[0] == "/":
            self._send(200, "text/plain; charset=utf-8",
                       "hopscope serve: metrics at /metrics (docs/metrics.md)\n")
        elif self.path.split("?")[0] != "/metrics":
            self._send(404, "text/plain; charset=utf-8", "not found: try /metrics\n")
        else:
            self._metrics()

    def _metrics(self):
        now = time.time_ns()
        try:
            snap = snapshot.read(self.server.snapshot)
            age = (now - snap.realtime_ns) / 1e9
            if age > self.server.stale and not snap.final:
                raise snapshot.SnapshotError(f"{snap.path}: {age:.0f} s old: is its recorder "
                                             "running?")
        except snapshot.SnapshotError as e:
            self._problem(str(e))
            self._send(503, "text/plain; charset=utf-8", f"hopscope serve: {e}\n")
            return
        om = "application/openmetrics-text" in self.headers.get("Accept", "")
        try:
            body = metrics.text(snap, now, openmetrics=om)
        except Exception as e:  # noqa: BLE001 - a 500 and a line, never a traceback
            self._problem(f"internal error, please report it: {type(e).__name__}: {e}")
            self._send(500, "text/plain; charset=utf-8", f"hopscope serve: {self.server.problem}\n")
            return
        self._problem(None)
        self._send(200, metrics.OPENMETRICS if om else metrics.PROMETHEUS, body)

    def _problem(self, why):
        """said on stderr when the answer turns to 503 and back, not at every scrape"""
        if why != self.server.problem:
            print(f"hopscope serve: {why or 'snapshot readable again'}", file=sys.stderr,
                  flush=True)
            self.server.problem = why

    def _send(self, code, ctype, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # a line per scrape would fill the journal
        pass
