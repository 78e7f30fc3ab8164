"""`hopscope campaign SCENARIO -o DIR`: every condition of a scenario times its
repetitions, each run in its own folder, resumable; docs/campaigns.md.

    DIR/campaign.json                        what this folder holds (and that it is a campaign)
    DIR/scenario.toml                        the scenario as last read
    DIR/runs/CONDITION/repN/                 run.hsr (a chain: rK.hsr, path/), generator logs,
                                             scenario.toml, metadata.json
    DIR/packets/condition=C/repetition=N/    the runs' records as one Parquet dataset (dataset.py),
                                             every router's with its hop and router id
    DIR/runs.*, DIR/summary.*, DIR/senders.* the statistics tables per run and router, the PDF
    DIR/paths.*                              a chain run's path: delivered, dropped per hop, transit

A run is finished when its metadata.json holds "campaign": {"finished": true}.
That is written last, once the run's records are in the dataset and its
statistics computed, so a run stopped at any point (Ctrl-C, kill, a crash) is
done again from scratch by the next invocation, and a finished one never is.
"""
import fcntl
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass

import pandas as pd

from ..analysis.runs import run_stats, sender_stats
from ..files import write_json
from ..record import dataset
from ..record.load import router_id
from ..report.campaign import write
from .progress import Progress
from .result import RunError
from .run import require_root, run_condition
from .scenario.cli import add_lossless_arguments, load_for
from .scenario.load import ScenarioError

FORMAT = "hopscope-campaign/1"
KEY = "campaign"  # our part of each run's metadata.json


class CampaignError(Exception):
    pass


@dataclass
class Run:
    condition: object  # scenario.Condition
    repetition: int    # from 1
    dir: str

    @property
    def label(self):
        return f"{self.condition.name} rep {self.repetition}"


def plan(scenario, outdir):
    """Every run of the scenario, conditions in file order, repetitions within."""
    return [Run(c, k, os.path.join(outdir, "runs", c.name, f"rep{k}"))
            for c in scenario.conditions() for k in range(1, c.repetitions + 1)]


def metadata_path(run_dir):
    return os.path.join(run_dir, "metadata.json")


def read_metadata(run_dir):
    """A run's metadata.json as a dict; None when it is missing or not whole JSON."""
    try:
        with open(metadata_path(run_dir)) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def finished(run):
    """The run's metadata when it is finished, else None. A finished run of a
    different condition under the same name is an error: its results would be
    mixed with this scenario's."""
    meta = read_metadata(run.dir)
    if not meta or not isinstance(meta.get(KEY), dict) or meta[KEY].get("finished") is not True:
        return None
    was, now = meta[KEY].get("condition"), _jsonable(run.condition.to_dict())
    if isinstance(was, dict) and isinstance(was.get("testbed"), dict):
        # a run finished before chains had one router, unsaid
        was = {**was, "testbed": {"routers": 1, **was["testbed"]}}
    if was != now:
        diff = sorted(k for k in set(was or {}) | set(now) if (was or {}).get(k) != now.get(k))
        raise CampaignError(
            f"{run.dir} holds a finished run of condition {run.condition.name!r} with other "
            f"settings ({', '.join(diff) or 'all'} differ from the scenario's): give this "
            "scenario its own -o folder, or remove that run folder to run it again")
    return meta


def _jsonable(d):
    """d as it reads back from JSON (tuples become lists), for comparing."""
    return json.loads(json.dumps(d))


def execute(run, outdir, prefix, path_pdf=True):
    """Do one run from scratch and mark it finished; returns its metadata."""
    shutil.rmtree(run.dir, ignore_errors=True)
    dataset.remove_run(outdir, run.condition.name, run.repetition)
    os.makedirs(run.dir)
    started = time.time()

    def finish(result, meta):
        # the dataset part first: "finished" goes into metadata.json with it
        part = dataset.write_run(records(result), outdir, run.condition.name, run.repetition)
        meta[KEY] = {
            "finished": True,
            "condition_name": run.condition.name,
            "repetition": run.repetition,
            "condition": _jsonable(run.condition.to_dict()),
            "started": started,
            "seconds": time.time() - started,
            "counts": counts(result),
            "problems": list(meta.get("record_problems") or ()),
            "dataset": os.path.relpath(part, outdir),
            "routers": [{"hop": k, "router": router_id(df.attrs["header"]), "role": role,
                         "forwarded": meta["counts"]["routers"][role]["forwarded"],
                         "complete": int((df["status"] == "complete").sum()),
                         "records": len(df), "stats": run_stats(df),
                         "senders": sender_stats(df)}
                        for k, (role, df) in enumerate(result.hops, 1)],
        }
    run_condition(run.condition, run.dir, prefix=prefix, record=True, finish=finish,
                  path_pdf=path_pdf)
    return read_metadata(run.dir)


def records(result):
    """Every router's records of a run, in path order, each with its hop
    (1..N) and router id: the run's part of the dataset."""
    parts = [df.assign(hop=k, router=router_id(df.attrs["header"]))
             for k, (_, df) in enumerate(result.hops, 1)]
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def counts(result):
    """What one run counted: generators, the last router, the recorders
    (complete: the first router's; records: every router's)."""
    return {
        "sent": sum(result.sent.values()),
        "received": sum(result.received.values()),
        "forwarded": result.forwarded,
        "complete": result.complete,
        "records": sum(len(df) for _, df in result.hops),
    }


def _note(meta):
    c = meta[KEY]["counts"]
    return ", ".join(f"{k} {c[k]}" for k in ("sent", "received", "forwarded", "complete"))


class _Lock:
    """One campaign at a time per folder."""

    def __init__(self, outdir):
        self.path = os.path.join(outdir, ".lock")

    def __enter__(self):
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.seek(0)
            pid = self.f.read().strip() or "?"
            self.f.close()
            raise CampaignError(f"another campaign (pid {pid}) is writing "
                                f"{os.path.dirname(self.path)}; wait for it or stop it")
        self.f.truncate(0)
        self.f.write(str(os.getpid()))
        self.f.flush()
        return self

    def __exit__(self, *exc):
        self.f.close()


def prepare(outdir, scenario_path):
    """Make outdir a campaign folder; refuse a folder that holds something else."""
    marker = os.path.join(outdir, "campaign.json")
    if os.path.isdir(outdir) and os.listdir(outdir) and not os.path.exists(marker):
        raise CampaignError(f"{outdir} is not empty and holds no campaign (no campaign.json): "
                            "give a new or empty folder")
    os.makedirs(outdir, exist_ok=True)
    if not os.path.exists(marker):
        write_json(marker, {"format": FORMAT, "created": time.time(),
                             "scenario": os.path.abspath(scenario_path)})


def run_campaign(scenario, scenario_path, outdir, prefix="hs-", keep_going=False,
                 path_pdf=True):
    """Every run not yet finished, then the summary. Returns the exit status:
    0 all finished, 1 some failed, 130 interrupted (rerun to resume)."""
    prepare(outdir, scenario_path)
    with _Lock(outdir):
        runs = plan(scenario, outdir)
        done = [finished(r) for r in runs]  # metadata, or None while to do
        with open(os.path.join(outdir, "scenario.toml"), "w") as f:
            f.write(scenario.source_text)
        todo = [i for i, m in enumerate(done) if not m]
        before = [m[KEY]["seconds"] for m in done if m]
        progress = Progress(len(runs), done=len(runs) - len(todo),
                            estimate=sum(before) / len(before) if before else None)
        if len(todo) < len(runs):
            progress.message(f"{len(runs) - len(todo)} of {len(runs)} runs already finished "
                             f"in {outdir}; running the other {len(todo)}")
        failed = []
        status = 0
        try:
            with _sigterm_as_interrupt():
                for i in todo:
                    run = runs[i]
                    progress.start(run.label)
                    try:
                        meta = execute(run, outdir, prefix, path_pdf)
                    except KeyboardInterrupt:
                        raise
                    except Exception as e:  # the run's own failure: say which, go on or stop
                        progress.fail(f"{type(e).__name__}: {e}")
                        failed.append(run)
                        if not keep_going:
                            break
                        continue
                    done[i] = meta
                    for p in meta[KEY]["problems"]:
                        progress.message(f"{run.label}: record file: {p}")
                    progress.finish(_note(meta))
        except KeyboardInterrupt:
            progress.close()
            n = sum(1 for m in done if m)
            print(f"campaign: interrupted; {n} of {len(runs)} runs finished. Run the same "
                  "command again to do the rest.", file=sys.stderr)
            return 130
        progress.close()
        finished_runs = [m for m in done if m]
        out = sys.stderr
        if finished_runs:
            paths = write_summary(finished_runs, outdir,
                                  title=f"{os.path.basename(scenario_path)}: "
                                        f"{len(finished_runs)} of {len(runs)} runs")
            print(f"campaign: {len(finished_runs)} of {len(runs)} runs finished in {outdir}; "
                  f"summary: {', '.join(os.path.basename(p) for p in paths)}", file=out)
        if failed or len(finished_runs) < len(runs):
            left = len(runs) - len(finished_runs)
            print(f"campaign: {len(failed)} run(s) failed, {left} not finished: "
                  + ", ".join(r.label for r in failed)
                  + ". Run the same command again to retry them.", file=out)
            status = 1
        return status


def _summary_entry(meta, outdir):
    """A run finished before campaigns recorded chains: one router, its id not kept ("")."""
    c = meta[KEY]
    # a run finished before metadata had "senders": from its part of the dataset
    senders = c.get("senders") or sender_stats(pd.read_parquet(os.path.join(outdir,
                                                                            c["dataset"])))
    return {"condition": c["condition_name"], "repetition": c["repetition"], "router": "",
            "stats": c["stats"], "counts": c["counts"], "senders": senders}


def _summary_entries(meta, outdir):
    """One entry per router of a finished run, for the statistics tables."""
    c = meta[KEY]
    if "routers" not in c:
        return [_summary_entry(meta, outdir)]
    return [{"condition": c["condition_name"], "repetition": c["repetition"],
             "router": r["router"], "stats": r["stats"], "senders": r["senders"],
             "counts": {**c["counts"], "forwarded": r["forwarded"], "complete": r["complete"]}}
            for r in c["routers"]]


def write_summary(finished_runs, outdir, title):
    """runs, summary and senders (.csv, .parquet) per run and router,
    summary.pdf, and paths (.csv, .parquet) when a run was a chain; returns
    the paths written."""
    entries = [e for m in finished_runs for e in _summary_entries(m, outdir)]
    return write(entries, outdir, title, paths_table(finished_runs))


def paths_table(finished_runs):
    """One row per chain run: packets that entered the path, delivered, dropped
    at each hop, lost otherwise, and the end-to-end transit's p50 and p99 (ns)."""
    rows = []
    for m in finished_runs:
        p = m.get("path")
        if not p:
            continue
        row = {"condition": m[KEY]["condition_name"], "repetition": m[KEY]["repetition"],
               "routers": len(p["routers"]), "entered": p["entered"],
               "delivered": p["fates"].get("delivered", 0)}
        row.update({f"dropped_hop{k}": p["dropped_by_hop"].get(r, 0)
                    for k, r in enumerate(p["routers"], 1)})
        row["other"] = row["entered"] - row["delivered"] - sum(p["dropped_by_hop"].values())
        row.update(transit_p50_ns=p["transit_p50_ns"], transit_p99_ns=p["transit_p99_ns"])
        rows.append(row)
    return pd.DataFrame(rows)


class _sigterm_as_interrupt:
    """kill (SIGTERM) stops a campaign like Ctrl-C: the current run's testbed
    is taken down by the runner's own cleanup."""

    def __enter__(self):
        self.old = signal.signal(signal.SIGTERM, self._raise)

    def __exit__(self, *exc):
        signal.signal(signal.SIGTERM, self.old)

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt


# ---- `hopscope campaign` ----

def add_arguments(p):
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml), see traffic/")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="campaign folder: new, empty, or one this scenario ran in before "
                        "(its finished runs are kept)")
    p.add_argument("--prefix", default="hs-", metavar="P",
                   help="testbed namespace prefix (HS_PREFIX; default hs-)")
    p.add_argument("--keep-going", action="store_true",
                   help="after a failed run, go on with the others (default: stop)")
    p.add_argument("--list", action="store_true",
                   help="list the runs and which are finished; run nothing")
    p.add_argument("--no-path-pdf", action="store_true",
                   help="a chain's runs: write no path/path.pdf (seconds per run; the "
                        "tables are written all the same)")
    add_lossless_arguments(p)
    p.epilog = ("Each run: testbed up, recorders and senders, testbed down; its folder gets\n"
                "run.hsr (a chain: rK.hsr and path/), the generator logs, the scenario and\n"
                "metadata.json. Interrupted\n"
                "(Ctrl-C, kill)? Run the same command again: finished runs are kept.\n"
                "Results: DIR/summary.{csv,parquet,pdf}, DIR/runs.{csv,parquet}, a chain's\n"
                "DIR/paths.{csv,parquet} and the Parquet dataset DIR/packets/\n"
                "(docs/campaigns.md has DuckDB and Spark queries).\n\n"
                "examples:\n"
                "  hopscope campaign traffic/campaigns/ci.toml -o results/ci/\n"
                "  hopscope campaign traffic/paper/table1.toml -o results/table1/ --list\n"
                "  hopscope campaign traffic/paper/type1.toml -o results/type1-lossless/ "
                "--lossless results/type1/throughput.json")


def run(args, parser):
    try:
        scenario = load_for(args, args.scenario)
    except ScenarioError as e:
        print(f"hopscope campaign: {e}", file=sys.stderr)
        return 2  # a bad scenario file is a usage error, as for `scenario check`
    try:
        if args.list:
            return _list(scenario, args.output)
        require_root()
        return run_campaign(scenario, args.scenario, args.output, prefix=args.prefix,
                            keep_going=args.keep_going, path_pdf=not args.no_path_pdf)
    except (CampaignError, RunError) as e:
        print(f"hopscope campaign: {e}", file=sys.stderr)
        return 1


def _list(scenario, outdir):
    runs = plan(scenario, outdir)
    n = 0
    for r in runs:
        meta = finished(r)
        n += meta is not None
        state = f"finished ({_note(meta)})" if meta else "to do"
        print(f"{r.label}: {state}")
    print(f"{n} of {len(runs)} runs finished in {outdir}")
    return 0
