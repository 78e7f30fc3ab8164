"""What every bench shares: the paths it imports from, its command line's
common options, the checks before it starts, one run whose testbed always
comes down, and the JSON and report at the end.

A bench is a script: `main()` builds its parser with `parser()`, calls
`preflight()`, fills a result dict inside `measure()`, and ends with
`finish()`. Its results go to evaluation/results/NAME.json by default.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "evaluation", "results")
# the tree's package first, and the test helpers the benches measure with
sys.path[:0] = [os.path.join(ROOT, "userspace", "python"), os.path.join(ROOT, "tests", "helpers")]
import hopscope  # noqa: E402
from hopscope.traffic.testbed import TestbedError  # noqa: E402
from overhead_table import cpu_slug  # noqa: E402

# what a failed run raises; a bench prints it as one line and exits 1
FAILURES = (RuntimeError, AssertionError, OSError, subprocess.SubprocessError, TestbedError,
            hopscope.RecordFileError)


def parser(name, doc, rounds=None, epilog=None, per_cpu=False):
    """The bench's parser: its docstring's first paragraph, --rounds when it
    has rounds (default rounds), and -o/--output, evaluation/results/NAME.json,
    or NAME-CPU.json with per_cpu (a result that moves with the CPU: one file
    for each, CPU as overhead_table.cpu_slug names it)."""
    ap = argparse.ArgumentParser(prog=f"evaluation/bench/{name}.py",
                                 description=doc.split("\n\n")[0], epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    if rounds:
        ap.add_argument("--rounds", type=int, default=rounds)
    if per_cpu:
        name = f"{name}-{cpu_slug(cpu())}"
    ap.add_argument("-o", "--output", default=os.path.join(RESULTS, f"{name}.json"))
    return ap


def add_nice(ap):
    ap.add_argument("--nice", default="-20",
                    help="ITGSend's autogroup nice, -20..19: its weight against the other tasks "
                         "on the senders' CPU (default -20); 'none': leave it as it comes")


def nice(ap, value):
    """--nice as an int, None for 'none'; a usage error otherwise."""
    if value == "none":
        return None
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or not -20 <= n <= 19:
        ap.error(f"--nice {value!r}: expected -20..19 or none")
    return n


def preflight(name, tools=()):
    """Root, the tools the bench runs, and SIGTERM ending the run as Ctrl-C
    does (through measure()'s cleanup)."""
    if os.geteuid():
        sys.exit(f"evaluation/bench/{name}.py: needs root (BPF, network namespaces)")
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        sys.exit(f"evaluation/bench/{name}.py: {', '.join(missing)} not found")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def rotated(items, i):
    """items started at round i's place: each round runs them in another order."""
    k = i % len(items)
    return items[k:] + items[:k]


def measure(name, body, cleanup):
    """body() with the bench's failures said in one line (exit 1), and
    cleanup() after it whatever happened."""
    try:
        body()
    except FAILURES as e:
        sys.exit(f"evaluation/bench/{name}.py: {str(e).strip()}")
    finally:
        cleanup()


def finish(res, output, report):
    """Write the result as JSON, print its report, and where it went."""
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        json.dump(res, f, indent=1)
    report(res)
    print(f"\n{output}")


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def cpu_task_ticks(cpu):
    """Ticks CPU cpu has spent running tasks (user, nice, system), from the
    machine's own account (/proc/stat): how busy it was, with no other
    process read."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                user, nice, system = map(int, line.split()[1:4])
                return user + nice + system
    raise SystemExit(f"no cpu{cpu} in /proc/stat")


def cpu():
    """The CPU, from /proc/cpuinfo's first processor: its model name, vendor,
    family and model (overhead_table.cpu_label names it from these)."""
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if not line.strip():
                break  # the first processor's block
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    number = lambda key: int(fields[key]) if fields.get(key, "").isdigit() else None  # noqa: E731
    return {"model_name": fields.get("model name", ""), "vendor_id": fields.get("vendor_id", ""),
            "family": number("cpu family"), "model": number("model")}


def machine():
    """What the numbers were measured on: kernel, CPUs, date, load average,
    the commit, and how many tracked files differed from it (the build is
    the work tree's)."""
    model = cpu()["model_name"]
    git = ["git", "-C", ROOT]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.split("\n")
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": model,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "loadavg": loadavg(), "commit": commit,
            "tracked_files_modified": sum(1 for x in dirty if x.strip())}


def fmt(x, spec):
    """x formatted, or "-" where there is none."""
    return format(x, spec) if x is not None else "-"
