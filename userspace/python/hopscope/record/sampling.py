"""What a record file says of its sampling (`hopscope record --sample`):
the header's "sampling" (the setting) and the COUNTERS and END JSON's (the
N in force, the packets seen at t1, traced and left out).
docs/record-format.md, "sampling"."""

MODES = ("off", "fixed", "auto")
_COUNTS = ("n_min", "n_max", "seen", "sampled", "unsampled")


def _count(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64


def check(obj):
    """Why a "sampling" object is not of the documented shape, or None."""
    if not isinstance(obj, dict):
        return "'sampling' is not an object"
    if obj.get("mode") not in MODES:
        return f"sampling.mode is {obj.get('mode')!r}, not one of {', '.join(MODES)}"
    if not _count(obj.get("n")) or obj["n"] < 1:
        return "sampling.n is not a positive integer"
    pct = obj.get("cpu_budget_pct")
    if pct is not None and (isinstance(pct, bool) or not isinstance(pct, (int, float))):
        return "sampling.cpu_budget_pct is not a number"
    for k in _COUNTS:
        if k in obj and not _count(obj[k]):
            return f"sampling.{k} is not a count"
    return None


def summary(header, counters):
    """df.attrs["sampling"]: the setting and, from the last COUNTERS or END,
    the counts, with `scale`, what a count of traced packets is multiplied by
    to estimate all of them (N when fixed; seen / sampled under auto, whose N
    changed during the run); None for a file without sampling (written
    before it, or by the kernel module)."""
    head = header.get("sampling")
    if head is None or check(head):
        return None
    out = {"mode": head["mode"], "n": head["n"], "cpu_budget_pct": head.get("cpu_budget_pct")}
    got = (counters or {}).get("sampling")
    if got is not None and not check(got):
        out.update({k: got[k] for k in ("n",) + _COUNTS if k in got})
    if out["mode"] == "auto":
        seen, traced = out.get("seen"), out.get("sampled")
        out["scale"] = seen / traced if seen and traced else None
    else:
        out["scale"] = float(out["n"])
    return out

