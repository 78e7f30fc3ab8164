"""`hopscope verify FILE...`: the header's CRC32 (version 2 files), every
chunk's structure, number and CRC32, every record's status and flow, and the
file's invariants (what it says, checked against itself: invariants.py);
exit 0 only when each file is whole, intact and consistent."""
import sys

from . import format as fmt
from .load import to_dataframe
from .reader import RecordFile, RecordFileError


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="record files (.hsr)")
    p.epilog = ("Checks the header's CRC32, reads every chunk, checks its CRC32 and every\n"
                "record's status and flow, and what the file says against itself: times\n"
                "within the run, stage order, status against stages, interfaces against\n"
                "the header, END's counts against the records (docs/record-format.md,\n"
                "\"The file's invariants\").\n"
                "Exit status 0 when every file is whole, intact and consistent, 1 otherwise.\n\n"
                "example:\n  hopscope verify run.hsr")


def run(args, parser):
    bad = 0
    for path in args.files:
        try:
            rf = RecordFile(path, verify=True)
            to_dataframe(rf)  # adds what the records and counts say wrongly to rf.problems
        except RecordFileError as e:
            print(e, file=sys.stderr)
            bad += 1
            continue
        kinds = [c.type for c in rf.chunks]
        end = rf.trailer.get("stop_reason", "?") if rf.trailer else None
        nrec = sum(k in fmt.RECORD_CHUNKS for k in kinds)
        summary = (f"{rf.n_records} records in {nrec} chunks, "
                   f"{len(rf.flows)} flows, {kinds.count(fmt.CHUNK_COUNTERS)} counter snapshots, "
                   + (f"END (stopped: {end})" if rf.trailer else "no END") +
                   f"; CRC32 checked on {len(rf.chunks)} chunks"
                   + ("" if rf.version == 1 else " and the header"))
        for note in rf.notes:
            print(f"{path}: note: {note}", file=sys.stderr)
        if rf.problems:
            bad += 1
            print(f"{path}: PROBLEMS: {summary}", file=sys.stderr)
            for p in rf.problems:
                print(f"  - {p}", file=sys.stderr)
            print(f"  whole up to byte {rf.whole_bytes} of {rf.size}", file=sys.stderr)
        else:
            print(f"{path}: OK: {summary}")
    return 1 if bad else 0
