"""`hopscope throughput SCENARIO -o DIR`: per condition, the lossless
throughput in the manner of RFC 2544 section 26.1: the highest offered rate at
which the receivers got every packet the generators sent, found by binary
search between --min and --max to within --resolution, each trial a fresh run
of the condition (testbed up, senders, testbed down) without the recorder.

A trial that lost packets is run once more at the same rate before the loss
is believed (repeating a trial is RFC 2544 practice): the rate is lossy only
if both runs lost packets. A router that drops at a rate drops in both; a
packet lost once because something else on a shared machine held up the
sender or receiver for a moment does not move the search. A trial whose
senders fell short of the rate is run again the same way (docs/campaigns.md).

Writes DIR/throughput.json (format in docs/campaigns.md; scenarios reuse it)
and keeps each trial's folder under DIR/trials/CONDITION/.
"""
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace

from .generators import REACHED
from .progress import Progress
from .result import RunError
from .run import require_root, run_condition
from .scenario.load import ScenarioError, load_scenario
from .throughput_file import FILE, write_results


@dataclass
class Trial:
    rate_pps: float     # asked for, total over the senders
    sent: int           # by the generators
    received: int       # by the generators' receivers
    offered_pps: float  # sent / trial seconds, or the longer time a sender took
    seconds: float      # the trial's wall time, testbed included
    folder: str = ""    # its folder under DIR/trials/CONDITION/
    # where loss happened: packets the router's output queue dropped (a
    # shaper's, or a full queue), and the router CPU's steal (ms its vCPU
    # waited for the host): a stalled router forwards a burst after
    router_queue_dropped: int | None = None
    router_steal_ms: int | None = None
    attempts: tuple = ()  # a repeated rate: both runs in order (this one decided)

    @property
    def lossless(self):
        return self.sent > 0 and self.received >= self.sent

    @property
    def reached(self):
        return self.offered_pps >= REACHED * self.rate_pps

    @property
    def repeated(self):
        return bool(self.attempts)

    def to_dict(self):
        """As throughput.json holds it: a repeated rate has "repeated": true and
        both runs in "attempts"; its own fields are those of the run that
        decided it."""
        d = {k: v for k, v in asdict(self).items() if k != "attempts"}
        d["lossless"] = self.lossless
        if self.attempts:
            d.update(repeated=True, attempts=[a.to_dict() for a in self.attempts])
        return d


def decide(first, again):
    """Which of two runs at one rate decides it. The repeat does, unless it
    would clear a loss without having carried more packets than got through
    the lossy run: senders held back in the repeat (seen here: 3958 sent
    where the lossy run sent 4020 and 3999 got through) prove nothing about
    the rate, so the loss stands."""
    if not first.lossless and again.lossless and again.sent <= first.received:
        return first
    return again


def trials_needed(lo, hi, resolution):
    """Trials one search takes at most, repeats not counted: hi, lo (if above
    0), then halvings."""
    halvings = max(0, math.ceil(math.log2((hi - lo) / resolution))) if hi > lo else 0
    return 1 + (lo > 0) + halvings


def search(cond, lo, hi, resolution, run_trial, progress=None):
    """Binary search for cond's lossless rate in [lo, hi] pps.

    run_trial(cond, rate_pps, index) -> Trial, index counting every run. A
    lossy trial is run again at the same rate, and only a second loss makes
    the rate lossy; so is a lossless one whose senders offered less than
    REACHED of the rate, and only a second shortfall ends the search on the
    generator. A repeat clears a loss only if it sent more packets than got
    through the lossy run (decide). The returned Trial of a repeated rate is
    the deciding run, both runs in .attempts. Returns (lossless_pps or None,
    limited_by, trials), one Trial per rate tried: limited_by is "max" when hi itself was lossless, "generator"
    when the senders could not offer a rate asked for (the result is what
    they did offer, a lower bound), else "loss".
    """
    trials, runs = [], [0]

    def run(rate, note=""):
        if progress:
            progress.start(f"{cond.name} at {rate:g} pps{note}")
        t = run_trial(cond, rate, runs[0])
        runs[0] += 1
        if progress:
            where = (f" ({t.router_queue_dropped} dropped by the router's output queue)"
                     if not t.lossless and t.router_queue_dropped is not None else "")
            progress.finish(f"sent {t.sent}, received {t.received}, offered {t.offered_pps:.0f}"
                            f" pps: {'lossless' if t.lossless else 'LOSS' + where}")
        return t

    def trial(rate):
        t = run(rate)
        if t.sent > 0 and not (t.lossless and t.reached):
            if progress:
                progress.total += 1
            why = (f"{t.sent - t.received} of {t.sent} lost" if not t.lossless
                   else f"offered {t.offered_pps:.0f} pps")
            again = run(rate, f" again ({why})")
            t = replace(decide(t, again), attempts=(t, again))
        trials.append(t)
        return t

    t = trial(hi)
    if t.lossless:
        return (hi, "max", trials) if t.reached else (t.offered_pps, "generator", trials)
    good, bad = 0.0, hi  # good: highest lossless rate so far (0 is lossless by definition)
    if lo > 0:
        t = trial(lo)
        if not t.lossless:
            return None, "loss", trials
        if not t.reached:
            return t.offered_pps, "generator", trials
        good = lo
    while bad - good > resolution:
        rate = round((good + bad) / 2)
        t = trial(rate)
        if t.lossless and not t.reached:
            return t.offered_pps, "generator", trials
        if t.lossless:
            good = rate
        else:
            bad = rate
    return (good if good > 0 else None), "loss", trials


def trial_runner(outdir, prefix, trial_seconds):
    """run_trial for search(): one run of the condition at a rate, in its own
    folder. A trial records nothing, so its shield keeps the senders' CPU
    rather than the router's (testbed.sh --shield senders; with two CPUs the
    rest of the run's processes share the router's): the router forwards in
    softirq, which preempts other tasks, while a generator sharing its CPU
    sends less than asked."""
    def run_trial(cond, rate, index):
        if cond.testbed["shield"] is True:
            cond = replace(cond, testbed={**cond.testbed, "shield": "senders"})
        name = f"{index + 1:02d}-{rate:g}pps"
        folder = os.path.join(outdir, "trials", cond.name, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        started = time.monotonic()
        r = run_condition(cond.with_rate(rate).with_duration(trial_seconds), folder,
                          prefix=prefix, record=False)
        sent, received = sum(r.sent.values()), sum(r.received.values())
        # an iperf3 sender held back (its link's shaper) sends its count late
        seconds = max([trial_seconds, *r.send_seconds.values()])
        return Trial(rate, sent, received, sent / seconds, time.monotonic() - started,
                     name, r.counters["router_out_queue"]["dropped"],
                     r.counters["cpu_steal_ms"].get(str(r.cpus["router"])))
    return run_trial


def run_search(scenario, scenario_path, outdir, lo, hi, resolution, trial_seconds,
               prefix="hs-"):
    """Search every condition; write DIR/throughput.json after each. Exit status."""
    os.makedirs(outdir, exist_ok=True)
    conditions = scenario.conditions()
    method = {"search": "binary", "resolution_pps": resolution, "trial_seconds": trial_seconds,
              "min_pps": lo, "max_pps": hi, "lossy_trials_repeated": True}
    progress = Progress(len(conditions) * trials_needed(lo, hi, resolution), what="throughput")
    run_trial = trial_runner(outdir, prefix, trial_seconds)
    results, out = {}, sys.stderr
    path = os.path.join(outdir, FILE)
    try:
        for cond in conditions:
            pps, limited_by, trials = search(cond, lo, hi, resolution, run_trial,
                                             progress)
            # the search may end early: count the trials it did not need as done
            progress.done += max(0, trials_needed(lo, hi, resolution) - len(trials))
            best = [t.offered_pps for t in trials if t.lossless and t.rate_pps == pps]
            results[cond.name] = {"lossless_pps": pps, "limited_by": limited_by,
                                  "lossless_offered_pps": best[0] if best else pps,
                                  "condition": json.loads(json.dumps(cond.to_dict())),
                                  "trials": [t.to_dict() for t in trials]}
            write_results(path, scenario_path, method, results)
            progress.message(_verdict(cond.name, pps, limited_by, trials, lo, hi))
    except KeyboardInterrupt:
        progress.close()
        print(f"throughput: interrupted; {len(results)} of {len(conditions)} conditions "
              f"searched{f', in {path}' if results else ''}", file=out)
        return 130
    progress.close()
    print(f"throughput: {path}", file=out)
    return 0


def _verdict(name, pps, limited_by, trials, lo, hi):
    lossy = [t.rate_pps for t in trials if not t.lossless]
    if pps is None:
        return f"{name}: packets lost even at {min(lossy):g} pps: no lossless rate above {lo:g}"
    if limited_by == "max":
        return f"{name}: lossless up to the --max {hi:g} pps (not searched higher)"
    if limited_by == "generator":
        return (f"{name}: lossless at {pps:.0f} pps, all the senders offered (asked for more): "
                "a lower bound")
    offered = next(t.offered_pps for t in trials if t.lossless and t.rate_pps == pps)
    repeated = sum(t.repeated for t in trials)
    cleared = sum(t.repeated and t.lossless for t in trials)
    return (f"{name}: lossless throughput {pps:g} pps asked, {offered:.0f} pps offered "
            f"(lost packets at {min(lossy):g} pps asked; {len(trials)} trials"
            + (f", {repeated} lossy ones run again, {cleared} of them lossless then"
               if repeated else "") + ")")


# ---- `hopscope throughput` ----

def add_arguments(p):
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help=f"where {FILE} and the trials' folders go")
    p.add_argument("--max", type=float, required=True, metavar="PPS",
                   help="highest rate tried (total over the senders); tried first")
    p.add_argument("--min", type=float, default=0.0, metavar="PPS",
                   help="lowest rate of interest (default 0); tried second when above 0")
    p.add_argument("--resolution", type=float, metavar="PPS",
                   help="stop when the lossless and lossy rates are this close "
                        "(default 1%% of --max)")
    p.add_argument("--trial-seconds", type=float, default=5.0, metavar="S",
                   help="how long each trial sends (default 5)")
    p.add_argument("--prefix", default="hs-", metavar="P",
                   help="testbed namespace prefix (HS_PREFIX; default hs-)")
    p.epilog = ("Each trial is a run of the condition at one rate (testbed up, senders,\n"
                "testbed down) without the recorder; lossless = every packet the generators\n"
                "sent was received. A trial that lost packets is run once more at the same\n"
                "rate, and the rate counts as lossy only if that run loses packets too: a\n"
                "router that drops at a rate drops again, a packet lost once to a busy\n"
                "machine does not end the search low (repeating a trial is RFC 2544\n"
                f"practice). A trial whose senders offered under {REACHED:.0%} of the rate is run\n"
                "again too; a second shortfall ends the search (a generator limit).\n"
                f"Result: DIR/{FILE} (docs/campaigns.md).\n\n"
                "example:\n"
                "  hopscope throughput traffic/paper/type1.toml -o results/type1/ --max 100000")


def run(args, parser):
    resolution = args.resolution if args.resolution is not None else args.max / 100
    if not 0 <= args.min < args.max:
        parser.error(f"--min {args.min:g} must be at least 0 and below --max {args.max:g}")
    if resolution < 1:
        parser.error("--resolution must be at least 1 pps (rates are whole packets per second)")
    if args.trial_seconds <= 0:
        parser.error("--trial-seconds must be above 0")
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as e:
        print(f"hopscope throughput: {e}", file=sys.stderr)
        return 2  # a bad scenario file is a usage error, as for `scenario check`
    try:
        require_root()
    except RunError as e:
        print(f"hopscope throughput: {e}", file=sys.stderr)
        return 1
    return run_search(scenario, args.scenario, args.output, args.min, args.max, resolution,
                      args.trial_seconds, prefix=args.prefix)
