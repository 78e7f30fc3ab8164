#!/usr/bin/env python3
"""How fast hopscope.load turns a record file into a DataFrame (records/s).

Writes a synthetic file (hopscope.synth) unless --file is given, then loads it
--repeat times back to back, the file in the page cache, and prints each rate,
the best and the median. Its goal, at least 5 times as fast as
pandas.read_parquet of the same records, is measured by evaluation/bench/analysis.

A load writes about 100 bytes of new columns per record. On a VM whose host
takes back freed guest memory (virtio-balloon free page reporting), touching
memory the process has not used recently is itself slow; --cold waits before
each load so that this cost is included, and the script also times touching
that much fresh memory alone so the two can be told apart.
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import benchlib  # noqa: F401 (the tree's package first on the path)
import hopscope
from hopscope.record.synth import write_synthetic


def touch_seconds(nbytes):
    t = time.perf_counter()
    a = np.empty(nbytes, np.uint8)
    a[::4096] = 1
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000, help="records to synthesise")
    p.add_argument("--stages", default="t1,t2,t3,t4",
                   help="enabled stages of the synthetic file (default %(default)s)")
    p.add_argument("--file", help="load this record file instead of a synthetic one")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-verify", action="store_true",
                   help="skip the chunk CRCs (load checks them by default)")
    p.add_argument("--cold", type=float, default=0, metavar="S",
                   help="wait S seconds before each load (freed memory goes back to the host)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hopscope-bench-") as tmp:
        path = a.file
        if path is None:
            path = os.path.join(tmp, "synthetic.hsr")
            t = time.perf_counter()
            write_synthetic(path, a.records, stages=a.stages.split(","))
            print(f"wrote {a.records} records ({os.path.getsize(path) / 1e9:.2f} GB) "
                  f"in {time.perf_counter() - t:.1f} s", flush=True)
        rates, out_bytes = [], 0
        for _ in range(a.repeat):
            time.sleep(a.cold)
            t = time.perf_counter()
            df = hopscope.load(path, verify=not a.no_verify)
            dt = time.perf_counter() - t
            out_bytes = int(df.memory_usage(index=False, deep=False).sum())
            rates.append(len(df) / dt)
            print(f"  {len(df)} records, {len(df.columns)} columns "
                  f"({out_bytes / 1e9:.2f} GB) in {dt:.3f} s: "
                  f"{len(df) / dt / 1e6:.1f} M records/s", flush=True)
            del df
        time.sleep(a.cold)
        print(f"touching {out_bytes / 1e9:.2f} GB of fresh memory alone: "
              f"{touch_seconds(out_bytes):.3f} s")
    print(f"load: best {max(rates) / 1e6:.1f} M records/s, "
          f"median {statistics.median(rates) / 1e6:.1f} M records/s")


if __name__ == "__main__":
    main()
