"""What the notebooks share: this checkout's hopscope package, the input each
one reads (an environment variable, else the small real data checked in under
tests/data), and a few ways of showing a run."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data")
# this checkout's package before any installed one: the notebooks go with it
sys.path.insert(0, os.path.join(REPO, "userspace", "python"))

# stage_stats columns that are times (ns): shown in µs
TIME_COLUMNS = ("min", "mean", "std", "p50", "p90", "p99", "p99_9", "max")


def input_path(variable, default_name):
    """The file $variable names (a relative path is taken from the
    repository's top), else tests/data/default_name."""
    given = os.environ.get(variable)
    path = os.path.join(REPO, given) if given else os.path.join(DATA, default_name)
    if not os.path.isfile(path):
        where = f"{variable}={given}" if given else f"the default of {variable}"
        raise FileNotFoundError(f"{path}: no such file ({where})")
    note = "" if given else f"   (default; set {variable} to read another)"
    print(f"{variable}: {path}{note}")
    return path


def in_us(stats, keys=()):
    """A stats.stage_stats table for reading: key columns, stage, count, the
    times in µs (2 decimals), negative and missing."""
    out = stats[[*keys, "stage", "count"]].copy()
    for c in TIME_COLUMNS:
        out[f"{c} (µs)"] = (stats[c] / 1000).round(2)
    out[["negative", "missing"]] = stats[["negative", "missing"]]
    return out.set_index([*keys, "stage"])


def output_qdiscs(df):
    """'r-rx: tbf rate 20 Mbit/s, pfifo limit 50' for each output interface,
    from the record file's header (`tc -j qdisc show` at the start)."""
    lines = []
    for i in df.attrs["header"].get("interfaces") or ():
        if i.get("role") != "out":
            continue
        parts = []
        for q in i.get("qdisc") or ():
            opt = q.get("options") or {}
            text = q.get("kind", "?")
            if "rate" in opt:  # tc -j gives bytes/s
                text += f" rate {opt['rate'] * 8 / 1e6:g} Mbit/s"
            if "limit" in opt:
                text += f" limit {opt['limit']}"
            parts.append(text)
        lines.append(f"{i.get('name')}: {', '.join(parts) or 'unknown qdisc'}")
    return "\n".join(lines)
