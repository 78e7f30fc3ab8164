#!/usr/bin/env python3
"""The recorder's user-space path alone: records per second from the record
ring to the file on one CPU, with no router and no BPF program in the way.

build/recorder_path (evaluation/bench/recorder_path.c) fills one ring from a
producer thread on CPU 0 as the programs do, and drains it on CPU 1 with the
recorder's own code (userspace/ring.c, writer.c and its writing thread, which
shares the drain's CPU): the drain sets the pace. Each round writes the file
on tmpfs (/dev/shm) and on the disk of evaluation/ (a temporary folder),
beside the machine's limits measured in the same round: memcpy on CPU 1
(bytes a record x records/s against it) and the disk's sequential write (dd,
1 GiB, fdatasync). Goals: 5 M records/s from ring to tmpfs on one CPU, and the
disk file written within 2x the disk's sequential rate.

    evaluation/bench/recorder_path.py [--records N] [--rounds 3] [--dd-mib 1024]
Writes evaluation/results/recorder_path-CPU.json (one per CPU) and prints a table.
"""
import json
import os
import statistics
import subprocess
import tempfile

import benchlib
from benchlib import ROOT

BINARY = os.path.join(ROOT, "build", "recorder_path")
RECORD_BYTES = 160
SHIFT = 16  # a ring of 65536 records, one CPU's at the default --ring on two
PRODUCER_CPU, DRAIN_CPU = 0, 1
GOALS = {"tmpfs_records_per_s": 5e6, "disk_over_sequential": 0.5}


def run(*args):
    r = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{BINARY} {' '.join(map(str, args))}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def path(folder, records):
    """One run into folder: records/s, the drain's CPU per record."""
    f = os.path.join(folder, "bench.hsr")
    try:
        out = run("path", f, records, SHIFT, PRODUCER_CPU, DRAIN_CPU)
        size = os.path.getsize(f)
    finally:
        if os.path.exists(f):
            os.remove(f)
    # exact accounting: every record the producer made is in the file
    if out["error"] or out["written"] != records or out["not_stored"]:
        raise RuntimeError(f"records lost between ring and file: {out}")
    return {**out, "records_per_s": records / out["seconds"], "file_bytes": size,
            "drain_ns_per_record": out["drain_cpu_s"] * 1e9 / records,
            "io_ns_per_record": out["io_cpu_s"] * 1e9 / records}


def sequential_write(folder, mib):
    """The disk's sequential write rate, bytes/s: dd with fdatasync."""
    f = os.path.join(folder, "dd.bin")
    try:
        r = subprocess.run(["dd", "if=/dev/zero", f"of={f}", "bs=1M", f"count={mib}",
                            "conv=fdatasync"], capture_output=True, text=True, check=True)
    finally:
        if os.path.exists(f):
            os.remove(f)
    # "... bytes (...) copied, 1.23 s, 870 MB/s": the bytes and the seconds
    words = r.stderr.strip().splitlines()[-1].split()
    return int(words[0]) / float(words[words.index("s,") - 1])


def report(res):
    s = res["summary"]
    print(f"\nthe recorder's path, ring to file, one CPU (median of {len(res['rounds'])} rounds):")
    for where in ("tmpfs", "disk"):
        print(f"  {where:<6} {s[where + '_records_per_s'] / 1e6:6.2f} M records/s, "
              f"{s[where + '_records_per_s'] * RECORD_BYTES / 1e6:7.0f} MB/s, drain "
              f"{s[where + '_drain_ns_per_record']:5.0f} ns a record, writing thread "
              f"{s[where + '_io_ns_per_record']:5.0f} ns, file "
              f"{s[where + '_file_bytes'] / res['records']:.0f} B a record")
    print(f"  memcpy {s['memcpy_bytes_per_s'] / 1e9:.2f} GB/s on the drain's CPU: tmpfs's "
          f"{s['tmpfs_share_of_memcpy']:.1%} of it; disk sequential write "
          f"{s['disk_sequential_bytes_per_s'] / 1e6:.0f} MB/s, the file at "
          f"{s['disk_over_sequential']:.2f}x it")
    g = res["goals"]
    print(f"goal {g['tmpfs_records_per_s'] / 1e6:g} M records/s to tmpfs: "
          f"{'met' if s['tmpfs_records_per_s'] >= g['tmpfs_records_per_s'] else 'NOT met'}")
    print(f"goal the disk file within 2x the disk's sequential rate: "
          f"{'met' if s['disk_over_sequential'] >= g['disk_over_sequential'] else 'NOT met'}")


def main():
    ap = benchlib.parser("recorder_path", __doc__, rounds=3, per_cpu=True)
    ap.add_argument("--records", type=int, default=10_000_000, help="records a run")
    ap.add_argument("--dd-mib", type=int, default=1024,
                    help="MiB dd writes to measure the disk's sequential rate (default 1024)")
    a = ap.parse_args()
    if min(a.records, a.rounds, a.dd_mib) < 1:
        ap.error("--records, --rounds and --dd-mib must be at least 1")
    if not os.access(BINARY, os.X_OK):
        ap.exit(1, f"evaluation/bench/recorder_path.py: {BINARY} not found: run make\n")
    if os.cpu_count() < 2:
        ap.exit(1, "evaluation/bench/recorder_path.py: needs two CPUs (producer and drain)\n")
    res = {"machine": benchlib.machine(), "records": a.records, "ring_records": 1 << SHIFT,
           "record_bytes": RECORD_BYTES, "goals": GOALS, "rounds": []}

    def body():
        with tempfile.TemporaryDirectory(dir="/dev/shm") as shm, \
                tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "evaluation")) as disk:
            for i in range(a.rounds):
                rnd = {"memcpy_bytes_per_s": run("memcpy", 256, 8, DRAIN_CPU)["bytes_per_s"],
                       "tmpfs": path(shm, a.records), "disk": path(disk, a.records),
                       "disk_sequential_bytes_per_s": sequential_write(disk, a.dd_mib)}
                res["rounds"].append(rnd)
                print(f"round {i + 1}/{a.rounds}: tmpfs {rnd['tmpfs']['records_per_s'] / 1e6:.2f}"
                      f" M/s, disk {rnd['disk']['records_per_s'] / 1e6:.2f} M/s", flush=True)

    benchlib.measure("recorder_path", body, lambda: None)
    rs = res["rounds"]
    med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
    res["summary"] = {
        "tmpfs_records_per_s": med(lambda r: r["tmpfs"]["records_per_s"]),
        "disk_records_per_s": med(lambda r: r["disk"]["records_per_s"]),
        "tmpfs_drain_ns_per_record": med(lambda r: r["tmpfs"]["drain_ns_per_record"]),
        "disk_drain_ns_per_record": med(lambda r: r["disk"]["drain_ns_per_record"]),
        "tmpfs_io_ns_per_record": med(lambda r: r["tmpfs"]["io_ns_per_record"]),
        "disk_io_ns_per_record": med(lambda r: r["disk"]["io_ns_per_record"]),
        "tmpfs_file_bytes": med(lambda r: r["tmpfs"]["file_bytes"]),
        "disk_file_bytes": med(lambda r: r["disk"]["file_bytes"]),
        "memcpy_bytes_per_s": med(lambda r: r["memcpy_bytes_per_s"]),
        "tmpfs_share_of_memcpy": med(lambda r: r["tmpfs"]["records_per_s"] * RECORD_BYTES
                                     / r["memcpy_bytes_per_s"]),
        "disk_sequential_bytes_per_s": med(lambda r: r["disk_sequential_bytes_per_s"]),
        "disk_over_sequential": med(lambda r: r["disk"]["records_per_s"] * RECORD_BYTES
                                    / r["disk_sequential_bytes_per_s"]),
    }
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
