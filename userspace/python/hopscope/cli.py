"""`python3 -m hopscope SUBCOMMAND ...`: the Python half of the hopscope CLI.

The hopscope program runs `record` (and `layout`, `version`) itself and hands
every other subcommand to this module; its --help lists these from
`--commands`. Exit status: 0 done, 1 the file could not be used (or verify
found problems), 2 usage error.
"""
import argparse
import importlib
import os
import sys
import warnings

from . import __version__
from .record.reader import RecordFileError

# name -> (module, one-line summary). The module has add_arguments(parser) and
# run(args, parser) -> exit status, and is imported only when its subcommand
# runs, so one subcommand's dependencies never slow down another. This is the
# one list of the Python subcommands: add new ones here.
SUBCOMMANDS = {
    "export": ("hopscope.record.export", "write a record file as Parquet or CSV"),
    "verify": ("hopscope.record.verify", "check a record file: structure, CRC32 of every chunk"),
    "describe": ("hopscope.report.describe",
                 "summarise a record file: run, interfaces, counts, delays"),
    "report": ("hopscope.report.pdf", "a PDF report of one or more runs: tables and the paper's figures"),
    "path": ("hopscope.report.path",
             "the files of the routers along a path joined per packet: hops, links, clocks"),
    "paper": ("hopscope.report.paper",
              "the paper's claims (Sec. IV-D, IV-E) checked on campaigns, Figs. 4-12 redrawn"),
    "serve": ("hopscope.live.serve",
              "an OpenMetrics endpoint for Prometheus: a recorder's live snapshot"),
    "top": ("hopscope.live.top",
            "a running router's packets/s, delays, drops and tracer losses, every second"),
    "campaign": ("hopscope.traffic.campaign",
                 "run every condition of a scenario x its repetitions, resumable; summary"),
    "throughput": ("hopscope.traffic.throughput",
                   "lossless throughput of each condition of a scenario (binary search)"),
    "calibrate": ("hopscope.traffic.calibrate",
                  "measure each probe's cost at a low constant rate, as JSON for record --calibration"),
    "scenario": ("hopscope.traffic.scenario.cli",
                 "check a scenario file (traffic/README.md), or run each condition once"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"hopscope (python) {__version__}")
        return 0
    if argv[0] == "--commands":  # for the hopscope program's --help: NAME<TAB>SUMMARY
        for name, (_, summary) in SUBCOMMANDS.items():
            print(f"{name}\t{summary}")
        return 0
    name = argv[0]
    if name not in SUBCOMMANDS:
        print(f"hopscope: unknown subcommand {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module, summary = SUBCOMMANDS[name]
    cmd = importlib.import_module(module)
    parser = argparse.ArgumentParser(prog=f"hopscope {name}", description=summary,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_arguments(parser)
    args = parser.parse_args(argv[1:])  # exits 2 on a usage error
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return cmd.run(args, parser)
        except RecordFileError as e:
            print(f"hopscope {name}: {e}", file=sys.stderr)
        except BrokenPipeError:
            # the reader went away (| head): stop quietly, as a pipe's writer does,
            # and let nothing left in stdout's buffer fail at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except OSError as e:
            where = f"{e.filename}: {e.strerror}" if e.filename else str(e)
            print(f"hopscope {name}: {where}", file=sys.stderr)
        except KeyboardInterrupt:
            return 130
        except Exception as e:  # noqa: BLE001 - a message and exit 1, never a traceback
            print(f"hopscope {name}: internal error, please report it: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)
    return 1


def _usage():
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {n:<{width}}  {s}" for n, (_, s) in SUBCOMMANDS.items()]
    return ("usage: hopscope SUBCOMMAND [options]   (hopscope SUBCOMMAND --help for its options)\n"
            "\nsubcommands:\n" + "\n".join(lines) +
            "\n\n`hopscope record`, `layout` and `version` belong to the hopscope program itself.")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"hopscope: warning: {message}", file=sys.stderr)
