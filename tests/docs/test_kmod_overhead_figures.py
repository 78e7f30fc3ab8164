"""evaluation/overhead.md's figures for the kernel module are what
evaluation/bench/kmod_overhead makes of the committed
evaluation/results/kmod_overhead.json: none typed by hand or left stale
when the bench is run again."""
import importlib.machinery
import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "evaluation", "bench", "kmod_overhead")
JSON = os.path.join(ROOT, "evaluation", "results", "kmod_overhead.json")
PAGE = os.path.join(ROOT, "evaluation", "overhead.md")


def bench():
    loader = importlib.machinery.SourceFileLoader("kmod_overhead", BENCH)
    spec = importlib.util.spec_from_loader("kmod_overhead", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def pct(s):
    return f"{s['median'] * 100:.1f} % ({s['min'] * 100:.1f}–{s['max'] * 100:.1f})"


def test_module_figures_are_the_committed_json():
    b = bench()
    s = b.summarise(json.load(open(JSON))["runs"])
    text = " ".join(open(PAGE).read().split())
    rate = [b.fmt(s["rate"][k]) for k in ("floor/untraced", "traced/untraced", "traced/floor")]
    cpu = [b.fmt(s["cpu0_cost"][k]) for k in ("floor/untraced", "traced/untraced", "traced/floor")]
    assert f"| forwarded packets/s | {rate[0]} | **{rate[1]}** | {rate[2]} |" in text
    assert f"| CPU0's time per forwarded packet | {' | '.join(cpu)} |" in text
    for st in b.STAGES:
        assert f"{st} {pct(s['probe_share'][st])}" in text
    assert f"together {pct(s['probe_share']['sum'])}" in text
