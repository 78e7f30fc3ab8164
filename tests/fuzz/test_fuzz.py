"""Mutated record files through hopscope.load and `python -m hopscope
describe|verify|export`: each gives a clean result or a clear message with exit
1, never a traceback, a hang or a crash.

The mutations start from the checked-in recordings (tests/data/*.hsr, written
by the C recorder, format version 1), from single.hsr rewritten as version 2
(header CRC, numbered chunks) and as version 3 (records in COLUMNS chunks,
by tests/helpers/rawrecord.py): truncations, bit flips in the file header, the
header JSON, chunk headers and payloads, wrong-typed and hostile JSON with the
checksums recomputed, chunks swapped, left out and repeated. Fixed seed; every
mutation goes through hopscope.load and the CLI in this process, a sample of
them through real subprocesses; the whole test is bounded (TIME_BUDGET_S).

Where damage can be detected (a payload flip, any flip of a version 2 header
or chunk header, a cut, a missing or swapped chunk in version 2) it must be: verify
exits 1, load warns or raises. Nothing is ever returned as if whole.
"""
import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import hopscope
from hopscope import cli
from hopscope.record import format as fmt
from hopscope.record.reader import RecordFile, RecordFileError, RecordFileWarning
from hopscope.record.synth import recompute_checksums

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
sys.path.insert(0, os.path.join(ROOT, "tests"))
from rawrecord import COLUMNS, RECORD_KINDS, Raw, write  # noqa: E402
SEED = 14
TIME_BUDGET_S = 60
SUBPROCESS_SAMPLE = 10  # mutations also run through `python -m hopscope` (x3 commands)
PER_FILE_TIMEOUT_S = 20
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "userspace" / "python"))


# ---- the parts of a file ----

class Parsed:
    """A whole, intact record file cut into its parts."""

    def __init__(self, path):
        self.data = Path(path).read_bytes()
        rf = RecordFile(path)
        assert not rf.problems, rf.problems
        self.version = rf.version
        self.record_size = rf.record_size
        self.start = fmt.FILE_HEADER_V1_SIZE if rf.version == 1 else fmt.FILE_HEADER_SIZE
        self.header_end = rf.chunks[0].offset
        self.text = self.data[self.start:self.header_end]
        self.chunks = [(c.offset, c.end, c.type) for c in rf.chunks]

    def chunk_bytes(self, i):
        a, b, _ = self.chunks[i]
        return self.data[a:b]

    def build(self, text=None, chunks=None, renumber=False):
        """The file with another header JSON (padded here) and/or another list of
        chunk byte strings; CRCs recomputed by the caller when wanted."""
        text = self.text if text is None else text + b" " * (-len(text) % 8)
        chunks = [self.chunk_bytes(i) for i in range(len(self.chunks))] \
            if chunks is None else chunks
        if renumber and self.version >= 2:
            chunks = [c[:20] + np.uint32(i).tobytes() + c[24:] for i, c in enumerate(chunks)]
        return fmt.file_header(text, self.version, self.record_size) + text + b"".join(chunks)


def json_chunk(ctype, obj_bytes, index=0):
    head = np.zeros(1, fmt.CHUNK_DTYPE)
    head[0] = (fmt.CHUNK_MAGIC, ctype, 0, len(obj_bytes), zlib.crc32(obj_bytes), index)
    return head.tobytes() + obj_bytes + bytes(-len(obj_bytes) % 8)


def to_v2(src, dst):
    p = Parsed(src)
    p.version = 2
    dst.write_bytes(p.build(renumber=True))
    recompute_checksums(dst)
    return dst


def to_v3(src, dst):
    raw = Raw(src)
    write(dst, raw.header, [[COLUMNS if k in RECORD_KINDS else k, c] for k, c in raw.chunks])
    return dst


# ---- mutations: (name, bytes, detectable) ----

def mutations(p, rng, tag):
    out = []
    data, size = p.data, len(p.data)
    v2 = p.version >= 2

    def flip(at):
        b = bytearray(data)
        b[at] ^= 1 << rng.randrange(8)
        return bytes(b)

    # truncations: anywhere, in the file header, in a chunk header
    for at in sorted(rng.sample(range(1, size), 8)) + [3, p.start - 1, p.header_end + 10]:
        out.append((f"{tag} cut at {at}", data[:at], True))
    # bit flips in the fixed file header and in the header JSON: caught in version 2
    for _ in range(4):
        at = rng.randrange(0, p.start)
        out.append((f"{tag} file header flip at {at}", flip(at), v2))
    for _ in range(6):
        at = rng.randrange(p.start, p.header_end)
        out.append((f"{tag} header JSON flip at {at}", flip(at), v2))
    # chunk headers: every field means something in version 2
    for _ in range(8):
        a, _, _ = p.chunks[rng.randrange(len(p.chunks))]
        at = a + rng.randrange(fmt.CHUNK_HEADER_SIZE)
        out.append((f"{tag} chunk header flip at {at}", flip(at), v2 or at - a < 20))
    # payloads: the chunk CRC (a flip in the padding is not data)
    for _ in range(10):
        a, b, _ = p.chunks[rng.randrange(len(p.chunks))]
        h = np.frombuffer(data[a:a + fmt.CHUNK_HEADER_SIZE], fmt.CHUNK_DTYPE)[0]
        at = a + fmt.CHUNK_HEADER_SIZE + rng.randrange(int(h["bytes"]))
        out.append((f"{tag} payload flip at {at}", flip(at), True))
    # chunks swapped, left out, repeated (records chunks, or any two)
    n = len(p.chunks)
    rec = [i for i, (_, _, t) in enumerate(p.chunks) if t in fmt.RECORD_CHUNKS]
    order = list(range(n))
    if len(rec) >= 2:
        i, j = rec[0], rec[1]
        order[i], order[j] = order[j], order[i]
        out.append((f"{tag} record chunks {i} and {j} swapped",
                    p.build(chunks=[p.chunk_bytes(k) for k in order]), v2))
    for k in (rec[0], n // 2, n - 1):
        out.append((f"{tag} chunk {k} left out",
                    p.build(chunks=[p.chunk_bytes(m) for m in range(n) if m != k]),
                    v2 or k == n - 1 or p.chunks[k][2] in fmt.RECORD_CHUNKS))
    out.append((f"{tag} chunk {rec[0]} twice",
                p.build(chunks=[p.chunk_bytes(m) for m in range(n)][:rec[0] + 1]
                        + [p.chunk_bytes(m) for m in range(rec[0], n)]), True))
    return out


HOSTILE_HEADERS = {
    "interfaces a string": {"interfaces": "r-s1"},
    "interfaces of numbers": {"interfaces": [1, 2]},
    "interface name a number": {"interfaces": [{"name": 7, "ifindex": 2, "role": "in"}]},
    "ifindex a string": {"interfaces": [{"name": "x", "ifindex": "2"}]},
    "ifindex huge": {"interfaces": [{"name": "x", "ifindex": 10 ** 30}]},
    "stages an object": {"stages": {"t1": 1}},
    "stages of numbers": {"stages": [1, 2]},
    "kernel a list": {"kernel": ["6.1"]},
    "kernel release a number": {"kernel": {"release": 6}},
    "cpu a string": {"cpu": "x86"},
    "cpu count a string": {"cpu": {"count": "many"}},
    "start time huge": {"start_realtime_ns": 10 ** 40},
    "start time a float": {"start_realtime_ns": 1.5e300},
    "start time NaN": {"start_realtime_ns": float("nan")},
    "hostname a list": {"hostname": ["a"]},
    "hooks a number": {"hooks": 5},
    "hooks of junk": {"hooks": [1, "x", None, {"stage": 5, "priority": "high"}]},
    "format a number": {"format": 5},
    "netns a string": {"netns": "router"},
}
HOSTILE_TRAILERS = {
    "trailer userspace a list": {"userspace": [1, 2]},
    "trailer counters strings": {"counters": {"xdp_pkts": "many"}},
    "trailer records_written huge": {"userspace": {"records_written": 10 ** 30}},
    "trailer stop_reason a number": {"stop_reason": 3},
    "trailer by_status a list": {"userspace": {"records_by_status": [1]}},
    "trailer xdp_modes numbers": {"xdp_modes": {"r-s1": 1}},
    "trailer xdp_modes a list": {"xdp_modes": ["generic"]},
    "trailer ifaces a list": {"ifaces": [1]},
    "trailer ifaces bad state": {"ifaces": {"r-s1": {"state": "sideways", "ifindexes": [2],
                                                     "gone": 0, "down": 0}}},
    "trailer ifaces ifindexes strings": {"ifaces": {"r-s1": {"state": "up", "ifindexes": ["2"],
                                                             "gone": 0, "down": 0}}},
    "trailer a list": [1, 2, 3],
}


def hostile(p, tag):
    """(name, bytes, detectable): wrong-typed and hostile JSON, checksums recomputed."""
    header = json.loads(p.text)
    out = []
    for name, change in HOSTILE_HEADERS.items():
        h = dict(header, **change)
        out.append((f"{tag} header {name}", p.build(text=json.dumps(h).encode()), True))
    deep = b"[" * 100_000 + b"]" * 100_000
    out.append((f"{tag} header deeply nested",
                p.build(text=b'{"interfaces": ' + deep + b"}"), True))
    out.append((f"{tag} header huge integer",
                p.build(text=b'{"start_realtime_ns": 1' + b"0" * 5000 + b"}"), True))
    out.append((f"{tag} header not UTF-8",
                p.build(text=json.dumps(header).encode().replace(b'"command": "',
                                                                 b'"command": "caf\xe9 ')),
                False))
    n = len(p.chunks)
    last = n - 1
    assert p.chunks[last][2] == fmt.CHUNK_END
    for name, obj in HOSTILE_TRAILERS.items():
        chunks = [p.chunk_bytes(i) for i in range(last)]
        chunks.append(json_chunk(fmt.CHUNK_END, json.dumps(obj).encode(), last))
        out.append((f"{tag} {name}", p.build(chunks=chunks), True))
    chunks = [p.chunk_bytes(i) for i in range(last)]
    chunks.append(json_chunk(fmt.CHUNK_END, b'{"userspace": ' + b"[" * 50_000 + b"]" * 50_000
                             + b"}", last))
    out.append((f"{tag} trailer deeply nested", p.build(chunks=chunks), True))
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    rng = random.Random(SEED)
    v2 = to_v2(DATA / "single.hsr", d / "single-v2.hsr")
    v3 = to_v3(DATA / "single.hsr", d / "single-v3.hsr")
    assert fmt.CHUNK_COLUMNS in {t for _, _, t in Parsed(v3).chunks}
    out = []
    for path in (DATA / "single.hsr", DATA / "competitive.hsr", v2, v3):
        p = Parsed(path)
        tag = f"{path.name} (v{p.version})"
        out += mutations(p, rng, tag)
        for name, data, detectable in hostile(p, tag):
            f = d / "h.hsr"
            f.write_bytes(data)
            recompute_checksums(f)
            out.append((name, f.read_bytes(), detectable))
    files = []
    for k, (name, data, detectable) in enumerate(out):
        f = d / f"m{k:03d}.hsr"
        f.write_bytes(data)
        files.append((name, f, detectable))
    return files


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds, what):
    def fire(*_):
        raise _Timeout(f"{what}: no answer in {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check_load(name, path, detectable):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            df = hopscope.load(path)
        except RecordFileError as e:
            assert str(e), name
            return "refused"
    problems = [x for x in w if issubclass(x.category, RecordFileWarning)
                and "not covered by a checksum" not in str(x.message)
                and "not UTF-8" not in str(x.message)]
    if detectable:
        assert problems, f"{name}: loaded as if whole ({len(df)} rows, no warning)"
    return "loaded"


def _check_cli(name, args, detectable, run):
    rc, out, err = run(args)
    assert rc in (0, 1), f"{name}: {args[0]} exited {rc}\n{err[-2000:]}"
    assert "Traceback" not in err and "internal error" not in err, f"{name}: {args[0]}\n{err}"
    if rc == 1:
        assert err.strip(), f"{name}: {args[0]} exit 1 without a message"
    if args[0] == "verify" and detectable:
        assert rc == 1, f"{name}: verify passed a damaged file\n{out}"


def _in_process(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(args)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def _subprocess(args):
    r = subprocess.run([sys.executable, "-m", "hopscope", *args], capture_output=True,
                       text=True, env=ENV, timeout=PER_FILE_TIMEOUT_S)
    assert r.returncode >= 0, f"{args}: killed by signal {-r.returncode}"
    return r.returncode, r.stdout, r.stderr


def test_mutated_recordings(cases, tmp_path):
    t0 = time.monotonic()
    assert len(cases) > 150
    outcome = {}
    for name, path, detectable in cases:
        with _deadline(PER_FILE_TIMEOUT_S, name):
            outcome[name] = _check_load(name, path, detectable)
            _check_cli(name, ["verify", str(path)], detectable, _in_process)
            _check_cli(name, ["describe", str(path)], detectable, _in_process)
            _check_cli(name, ["describe", "--json", str(path)], detectable, _in_process)
    rng = random.Random(SEED)
    for name, path, detectable in rng.sample(cases, SUBPROCESS_SAMPLE):
        for args in (["verify", str(path)], ["describe", str(path)],
                     ["export", str(path), "--parquet", str(tmp_path / "o.parquet"),
                      "--csv", str(tmp_path / "o.csv")]):
            _check_cli(name, args, detectable, _subprocess)
    elapsed = time.monotonic() - t0
    assert elapsed < TIME_BUDGET_S, f"fuzzing took {elapsed:.0f} s"
    # both outcomes happen: some mutations are refused, most keep what is whole
    assert set(outcome.values()) == {"refused", "loaded"}


def test_export_in_process_on_hostile_files(cases, tmp_path):
    """export of every hostile-JSON case (the Parquet metadata holds the JSON)."""
    for name, path, detectable in cases:
        if "header " not in name and "trailer" not in name:
            continue
        with _deadline(PER_FILE_TIMEOUT_S, name):
            _check_cli(name, ["export", str(path), "--parquet", str(tmp_path / "o.parquet")],
                       detectable, _in_process)
