"""The live snapshot of a run (`hopscope record --snapshot FILE`): the record
file's header and its latest COUNTERS JSON (counters, probe cost, stage
histograms) as one JSON object, replaced whole every second by a rename, so a
reader sees one whole snapshot or the one before (docs/record-format.md).

Histograms and counters are cumulative from the run's start; window() turns
two snapshots into the delays and counts of the time between them.
"""
import json

from ..record import hist
from ..record.reader import check_counters, check_header

FORMAT = "hopscope-snapshot"
VERSION = 1


class SnapshotError(Exception):
    """The snapshot cannot be read: missing, not JSON, or of another shape."""


class Snapshot:
    """One snapshot: .header and .counters as in a record file; .sequence
    (counts up by one per second), .realtime_ns (written), .monotonic_ns (the
    counters' read), .final (the recorder stopped: these are its END values)."""

    def __init__(self, obj, path="snapshot"):
        why = _check(obj)
        if why:
            raise SnapshotError(f"{path}: not a hopscope snapshot: {why}")
        self.path = path
        self.header = obj["header"]
        self.counters = obj["counters"]
        self.sequence = obj["sequence"]
        self.realtime_ns = obj["realtime_ns"]
        self.final = obj["final"]
        self.monotonic_ns = self.counters.get("monotonic_ns")

    @property
    def series(self):
        """The stage histogram series (record/hist.py), [] without histograms."""
        return hist.series(self.counters) or []

    @property
    def drops(self):
        """Dropped packets by last stage and kernel reason, [] without histograms."""
        return hist.drops(self.counters) or []

    def counter(self, name):
        """A kernel counter (include/hopscope.h's list), 0 when absent."""
        return (self.counters.get("counters") or {}).get(name, 0)


def read(path):
    """The snapshot at path; SnapshotError saying why it cannot be used."""
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.read())
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such snapshot (is `hopscope record --snapshot "
                            f"{path}` running?)") from None
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise SnapshotError(f"{path}: not JSON: {e}") from None
    return Snapshot(obj, path)


def _check(obj):
    if not isinstance(obj, dict):
        return "not a JSON object"
    if obj.get("format") != FORMAT:
        return f"format is {obj.get('format')!r}, not {FORMAT!r}"
    if obj.get("version") != VERSION:
        return f"version {obj.get('version')!r}; this reader knows {VERSION}"
    for k, t in (("sequence", int), ("realtime_ns", int), ("final", bool),
                 ("header", dict), ("counters", dict)):
        if type(obj.get(k)) is not t:
            return f"{k!r} missing or not {t.__name__}"
    return check_header(obj["header"]) or check_counters(obj["counters"])


def _key(s):
    return s["tos"], s["out_if"], s.get("path", "stack"), s["delay"]


def _minus(a, b):
    """series a - b (b earlier, or None): the delays added between them"""
    if b is None:
        return a
    d = {f: a[f] - b[f] for f in ("count", "sum_ns", "zero", "negative", "overflow")}
    d.update(tos=a["tos"], out_if=a["out_if"], path=a.get("path", "stack"), delay=a["delay"])
    d["buckets"] = {k: v - b["buckets"].get(k, 0) for k, v in a["buckets"].items()
                    if v - b["buckets"].get(k, 0) > 0}
    return d


def window(new, old):
    """What happened between snapshot old and new (old None: since the start):
    {"seconds", "series": [...], "counters": {name: delta}, "drops": [...]}.
    Series and counters only ever grow within a run; a recorder restarted in
    between (sequence or counts going back) raises SnapshotError."""
    if old is not None and (new.header.get("start_monotonic_ns") !=
                            old.header.get("start_monotonic_ns") or
                            new.sequence < old.sequence):
        raise SnapshotError(f"{new.path}: another run than the last snapshot's")
    before = {_key(s): s for s in (old.series if old else [])}
    series = [_minus(s, before.get(_key(s))) for s in new.series]
    if any(s["count"] < 0 for s in series):
        raise SnapshotError(f"{new.path}: a histogram shrank: another run?")
    old_c = (old.counters.get("counters") or {}) if old else {}
    counters = {k: v - old_c.get(k, 0) for k, v in (new.counters.get("counters") or {}).items()}
    old_d = {(x["stage"], x["reason"]): x["count"] for x in (old.drops if old else [])}
    drops = [dict(x, count=x["count"] - old_d.get((x["stage"], x["reason"]), 0))
             for x in new.drops]
    start = old.monotonic_ns if old else new.header.get("start_monotonic_ns")
    seconds = (new.monotonic_ns - start) / 1e9 if new.monotonic_ns and start else None
    return {"seconds": seconds, "series": series, "counters": counters,
            "drops": [x for x in drops if x["count"] > 0]}
