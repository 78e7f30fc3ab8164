#!/usr/bin/env python3
"""How fast hopscope.load turns a record file into a DataFrame (records/s).

Writes a synthetic file (hopscope.synth) unless --file is given, then loads it
--repeat times with the file in the page cache and prints the best and median
rate. Target: >= 20 million records/s for a 10M-record file.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "userspace" / "python"))
import hopscope  # noqa: E402
from hopscope.synth import write_synthetic  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000, help="records to synthesise")
    p.add_argument("--stages", default="t1,t2,t3,t4",
                   help="enabled stages of the synthetic file (default %(default)s)")
    p.add_argument("--file", help="load this record file instead of a synthetic one")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--verify", action="store_true", help="also check CRCs while loading")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hopscope-bench-") as tmp:
        path = a.file
        if path is None:
            path = os.path.join(tmp, "synthetic.hsr")
            t = time.perf_counter()
            write_synthetic(path, a.records, stages=a.stages.split(","))
            print(f"wrote {a.records} records ({os.path.getsize(path) / 1e9:.2f} GB) "
                  f"in {time.perf_counter() - t:.1f} s", flush=True)
        rates = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            df = hopscope.load(path, verify=a.verify)
            dt = time.perf_counter() - t
            rates.append(len(df) / dt)
            print(f"  {len(df)} records, {len(df.columns)} columns in {dt:.3f} s: "
                  f"{len(df) / dt / 1e6:.1f} M records/s", flush=True)
            del df
    print(f"load: best {max(rates) / 1e6:.1f} M records/s, "
          f"median {statistics.median(rates) / 1e6:.1f} M records/s (target 20)")


if __name__ == "__main__":
    main()
