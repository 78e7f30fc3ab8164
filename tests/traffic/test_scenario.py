"""The scenario parser: the shipped files, what conditions a file makes, and
every kind of mistake refused with its file, line and problem."""
import glob
import json
import os
import subprocess
import sys

import pytest

from hopscope.traffic.scenario.load import ScenarioError, load_scenario, parse_scenario
from hopscope.traffic.testbed import layout, up_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = sorted(glob.glob(os.path.join(ROOT, "traffic", "*", "*.toml")))

BASE = """\
duration = 2
[senders.sender1]
tos = 4
size = 550
rate = 2000
"""


def problems(text, name="s.toml"):
    """The error lines of a bad scenario, as (line, message) pairs."""
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, name)
    out = []
    for line in str(e.value).splitlines():
        assert line.startswith(name + ":"), line
        where, msg = line[len(name) + 1:].split(": ", 1)
        out.append((int(where), msg))
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_scenarios_load(path):
    s = load_scenario(path)
    conds = s.conditions()
    assert conds and len({c.name for c in conds}) == len(conds)
    for c in conds:
        assert c.senders and all(x.rate > 0 for x in c.senders)
        json.dumps(c.to_dict())  # metadata.json takes it as it is


def test_paper_files_encode_the_paper():
    t1 = {c.name: c for c in load_scenario(os.path.join(ROOT, "traffic/paper/type1.toml")).conditions()}
    assert {c.senders[0].size["value"] for c in t1.values()} == {20, 550, 1400}
    assert all(c.senders[0].tos == 4 and c.senders[0].gaps == {"dist": "constant"} for c in t1.values())
    # each size from iperf3 (the Tables' sender1) and from D-ITG (Type2, Type3 and sender2)
    assert sorted((c.senders[0].generator, c.senders[0].size["value"]) for c in t1.values()) == [
        (g, size) for g in ("ditg", "iperf3") for size in (20, 550, 1400)]
    t2 = load_scenario(os.path.join(ROOT, "traffic/paper/type2.toml")).conditions()
    sizes = [c.senders[0].size for c in t2]
    assert {"dist": "normal", "mean": 600, "std": 200} in sizes
    assert {"dist": "pareto", "shape": 12, "scale": 550} in sizes
    t3 = load_scenario(os.path.join(ROOT, "traffic/paper/type3.toml")).conditions()
    assert {c.senders[0].gaps["dist"] for c in t3} == {"exponential", "pareto"}
    for table in ("table1", "table2", "table3"):
        for c in load_scenario(os.path.join(ROOT, f"traffic/paper/{table}.toml")).conditions():
            tos = {s.namespace: s.tos for s in c.senders}
            assert tos == {"sender1": 4, "sender2": 5}, (table, c.name)
    t1c = load_scenario(os.path.join(ROOT, "traffic/paper/table1.toml")).conditions()
    # 3 sender1 sizes x 2 scenarios x 3 sender2 sizes, and the control
    assert len([c for c in t1c if not c.name.startswith("control-")]) == 18


PAPER = sorted(glob.glob(os.path.join(ROOT, "traffic", "paper", "*.toml")))


@pytest.mark.parametrize("path", PAPER, ids=os.path.basename)
def test_paper_files_record_t0_behind_ethernet_links(path):
    """t0 is the paper's arrival (its input driver, before the input queue);
    the TBFs for its Fast Ethernet links, the router's output and each
    sender's input, count what the wire adds to each frame and, like a NIC,
    hold one frame's tokens, no burst."""
    for c in load_scenario(path).conditions():
        assert "t0" in c.tracer["stages"], c.name
        assert c.testbed["shape"] == "tbf:100mbit:ethernet:frame", c.name
        assert c.testbed["shape_in"] == "tbf:100mbit:ethernet:frame", c.name


@pytest.mark.parametrize("table", ["table1", "table2", "table3"])
def test_no_generator_shares_the_routers_cpu_but_in_the_controls(table):
    conds = {c.name: c for c in load_scenario(os.path.join(ROOT, f"traffic/paper/{table}.toml"))
             .conditions()}
    controls = [n for n in conds if n.startswith("control-s2-on-router-cpu_")]
    assert controls
    for name, c in conds.items():
        cpus = {s.name: s.cpu for s in c.senders}
        if name in controls:
            assert cpus == {"sender1": "sender", "sender2": "router"}, name
            # its twin: the same condition with sender2 on the senders' CPU
            twin = conds[name.removeprefix("control-s2-on-router-cpu_")]
            moved = [s.__class__(**{**s.__dict__, "cpu": "sender"}) for s in c.senders]
            assert tuple(moved) == twin.senders and c.testbed == twin.testbed, name
        else:
            assert set(cpus.values()) == {"sender"}, name


def throughput_file(path, rates):
    path.write_text(json.dumps({"format": "hopscope-throughput/1", "scenario": "x", "method": {},
                                "conditions": {n: {"lossless_pps": r} for n, r in rates.items()}}))
    return str(path)


TWO = BASE + """
[senders.sender2]
generator = "iperf3"
size = 100
rate = 3000

[[conditions]]
name = "a"

[[conditions]]
name = "b"
senders.sender2 = { rate = 1000 }
"""


def test_at_lossless_offers_each_condition_its_own_rate_split_as_the_file(tmp_path):
    s = parse_scenario(TWO, str(tmp_path / "s.toml"))
    tp = throughput_file(tmp_path / "tp.json", {"a": 10000, "b": 30000, "other": None})
    a, b = s.at_lossless(tp).conditions()
    assert [x.rate for x in a.senders] == pytest.approx([4000, 6000])   # 2000 : 3000
    assert [x.rate for x in b.senders] == pytest.approx([20000, 10000])  # 2000 : 1000
    half = s.at_lossless(tp, 0.5).conditions()
    assert sum(x.rate for x in half[1].senders) == pytest.approx(15000)
    assert [x.rate for x in s.conditions()[0].senders] == [2000, 3000]  # the original kept
    with pytest.raises(ScenarioError, match=r"no lossless rate for b \(it has: a\)"):
        s.at_lossless(throughput_file(tmp_path / "t2.json", {"a": 1, "b": None}))
    with pytest.raises(ScenarioError, match=r"none.json: cannot read the lossless rates"):
        s.at_lossless(str(tmp_path / "none.json"))
    for bad in (0, -1, 11):
        with pytest.raises(ScenarioError, match="--fraction"):
            s.at_lossless(tp, bad)
    # what a generator cannot send is refused as in the file
    with pytest.raises(ScenarioError, match=r"b: sender1: 520000 pps is more than ITGSend"):
        s.at_lossless(throughput_file(tmp_path / "t3.json", {"a": 1000, "b": 780000}))


def test_cli_lossless_options(tmp_path):
    (tmp_path / "s.toml").write_text(TWO)
    tp = throughput_file(tmp_path / "tp.json", {"a": 10000, "b": 30000})
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))

    def hopscope(*args):
        return subprocess.run([sys.executable, "-m", "hopscope", *args], capture_output=True,
                              text=True, env=env)
    r = hopscope("scenario", "check", str(tmp_path / "s.toml"), "--lossless", tp,
                 "--fraction", "0.5")
    assert r.returncode == 0, r.stderr
    assert "sender1 ditg TOS 4 550 B 2000 pps" in r.stdout  # 0.5 x 10000 x 2/5
    assert "sender2 iperf3 TOS 0 100 B 5000 pps" in r.stdout  # 0.5 x 30000 x 1/3
    r = hopscope("scenario", "check", str(tmp_path / "s.toml"), "--fraction", "0.5")
    assert r.returncode == 2 and "--fraction needs --lossless" in r.stderr
    r = hopscope("campaign", str(tmp_path / "s.toml"), "-o", str(tmp_path / "c"), "--list",
                 "--lossless", str(tmp_path / "none.json"))
    assert r.returncode == 2 and "cannot read the lossless rates" in r.stderr
    assert "Traceback" not in r.stderr


def test_one_condition_with_defaults():
    (c,) = parse_scenario(BASE, "/x/one.toml").conditions()
    assert c.name == "one" and c.repetitions == 1
    assert c.testbed == {"mode": "rps", "routers": 1, "shape": "none", "shape_in": "none",
                         "sink": False, "shield": False}
    s = c.senders[0]
    assert (s.namespace, s.generator, s.protocol, s.port, s.cpu) == \
        ("sender1", "ditg", "udp", 10001, "sender")
    assert s.size == {"dist": "constant", "value": 550} and s.duration == 2 and s.packets() == 4000
    assert c.duration == 2


def test_cases_times_vary_make_named_conditions():
    text = BASE + """
[senders.sender2]
generator = "iperf3"
tos = 5
size = 100
rate = 500
cpu = "receiver"

[[conditions]]
name = "small"

[[conditions]]
name = "big"
repetitions = 3
senders.sender1 = { size = 1400, rate = 2000 }
[conditions.testbed]
shape = "tbf:100mbit:50p"

[vary]
"senders.sender2.rate" = [500, 1500.5]
"testbed.mode" = ["rps", "inline"]
"""
    conds = parse_scenario(text, "v.toml").conditions()
    assert [c.name for c in conds] == [
        "small_rate=500_mode=rps", "small_rate=500_mode=inline",
        "small_rate=1500.5_mode=rps", "small_rate=1500.5_mode=inline",
        "big_rate=500_mode=rps", "big_rate=500_mode=inline",
        "big_rate=1500.5_mode=rps", "big_rate=1500.5_mode=inline"]
    big = conds[-1]
    assert big.repetitions == 3 and big.testbed["shape"] == "tbf:100mbit:50p"
    assert big.testbed["mode"] == "inline"
    s1, s2 = big.senders
    assert (s1.size["value"], s1.rate, s1.tos) == (1400, 2000, 4)  # tos kept from the file
    assert (s2.rate, s2.port) == (1500.5, 10002)
    assert conds[0].testbed["shape"] == "none"


def test_shape_in_reaches_the_testbeds_options():
    """[testbed] shape_in: the senders' links shaped, as testbed.sh's
    --shape-in, and planned by testbed.sh itself (canonical form)."""
    (c,) = parse_scenario(BASE + '[testbed]\nshape = "tbf:100mbit:frame"\n'
                          'shape_in = "tbf:100mbit:ethernet:frame"\n', "in.toml").conditions()
    assert c.testbed["shape_in"] == "tbf:100mbit:ethernet:frame"
    args = up_options(**c.testbed)
    assert args[args.index("--shape-in") + 1] == "tbf:100mbit:ethernet:frame"
    lay = layout(**c.testbed)
    assert (lay["shape"], lay["shape_in"]) == ("tbf:100mbit:1000p:frame",
                                               "tbf:100mbit:1000p:ethernet:frame")
    assert "--shape-in tbf:100mbit:1000p:ethernet:frame" in lay["options"]
    assert "--shape-in" not in up_options(**{**c.testbed, "shape_in": "none"})


def test_with_rate_and_with_duration():
    text = BASE + """
[senders.sender2]
size = 100
rate = 3000
count = 600
cpu = "receiver"
gaps = { dist = "pareto", shape = 1.5 }
"""
    (c,) = parse_scenario(text).conditions()
    d = c.with_rate(2000)
    assert [s.rate for s in d.senders] == [800, 1200]
    assert d.senders[1].pareto_scale_ms() == pytest.approx(1000 * 0.5 / (1.5 * 1200))
    assert c.senders[0].rate == 2000  # the original is unchanged
    e = c.with_duration(0.5)
    assert all(s.count is None and s.duration == 0.5 for s in e.senders)
    assert e.duration == 0.5 and c.duration == 2
    assert d.to_dict()["senders"]["sender2"]["gaps"]["scale_ms"] == pytest.approx(
        d.senders[1].pareto_scale_ms())


def test_pareto_gaps_by_scale_set_the_rate():
    text = BASE.replace("rate = 2000", 'gaps = { dist = "pareto", shape = 1.5, scale_ms = 0.03 }')
    (c,) = parse_scenario(text).conditions()
    assert c.senders[0].rate == pytest.approx(1000 / (1.5 * 0.03 / 0.5))  # mean gap 0.09 ms


def test_syntax_error_names_its_line():
    with pytest.raises(ScenarioError, match=r"^s.toml:6: not valid TOML: "):
        parse_scenario(BASE + "rate = = 5\n", "s.toml")


@pytest.mark.parametrize("first, line, words", [
    ("repetitions = 1000000000", 1, "repetitions: must be at most 10000"),
])
def test_values_beyond_any_real_run_are_refused(first, line, words):
    got = problems(first + "\n" + BASE)
    assert any(n == line and words in msg for n, msg in got), got


def test_a_huge_vary_product_is_refused_before_it_is_made():
    """10^8 conditions would take minutes and gigabytes to make: refused at once"""
    axes = "\n".join(f"'senders.sender1.{k}' = [{', '.join(map(str, range(lo, lo + 100)))}]"
                      for k, lo in (("size", 20), ("rate", 1), ("tos", 0), ("port", 20000)))
    with pytest.raises(ScenarioError, match="make 100000000 conditions, more than 10000"):
        parse_scenario(BASE + "[vary]\n" + axes + "\n", "s.toml")


def test_deeply_nested_values_are_a_message_not_a_crash():
    text = BASE + "x = " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ScenarioError, match="nested too deeply"):
        parse_scenario(text, "s.toml")


@pytest.mark.parametrize("first, words", [
    ("bogus = 1", "bogus: unknown key (known here: conditions, description, duration"),
    ("repetitions = 'many'", "repetitions: must be a whole number, not 'many'"),
    ("repetitions = 0", "repetitions: must be at least 1, not 0"),
    ("throughput = 5", "throughput: must be a path"),
])
def test_each_top_level_mistake_names_line_1(first, words):
    got = problems(first + "\n" + BASE)
    assert any(n == 1 and words in msg for n, msg in got), got


@pytest.mark.parametrize("extra, line, words", [
    ("colour = 1", 6, "colour: unknown key"),                              # unknown key
    ("[testbed]\nqdisc = 'tbf'", 7, "testbed.qdisc: unknown key"),
    ("[tracer]\nstages = ['t9']", 7, "tracer.stages: must be a list of distinct stages"),
    ("count = 'many'", 6, "senders.sender1.count: must be a whole number, not 'many'"),  # wrong type
    ("[testbed]\nshape = 'tbf:fast'", 7, "rate 'fast' is not a tc rate"),
    ("[testbed]\nshape = 'tbf:1mbit:10'", 7, "must be packets (100p) or bytes of at least one frame"),
    ("[testbed]\nshape_in = 'tbf:fast'", 7, "--shape-in 'tbf:fast': rate 'fast' is not a tc rate"),
    ("[testbed]\nshape_in = 'tbf:1mbit:frame:frame'", 7, "'frame' twice"),
    ("[testbed]\nshape_in = 100", 7, "testbed.shape_in: must be a string"),
    ("[testbed]\nsink = 'yes'", 7, "testbed.sink: must be true or false"),
    ("[senders.sender9]\nsize = 100\nrate = 5", 6, "senders.sender9.namespace: sender 'sender9' names no"
                                                   " namespace of the testbed"),     # missing namespace
    ("[senders.x]\nnamespace = 'router'\nsize = 100\nrate = 5", 7,
     "senders.x.namespace: 'router' is not a namespace of the testbed"),
    ("[senders.sender2]\nsize = 100", 6, "senders.sender2.rate: required"),
    ("[senders.sender2]\nrate = 100\nsize = 1473", 8, "1473 is out of range: ITGSend UDP payloads are 20..1472"),
    ("[senders.sender2]\nrate = 100\nsize = {dist = 'normal', mean = 600}", 8, "dist = 'normal' takes mean, std"),
    ("[senders.sender2]\ngenerator = 'iperf3'\nrate = 100\nsize = {dist = 'pareto', shape = 12, scale = 550}",
     9, "iperf3 sends one size"),
    ("[senders.sender2]\ngenerator = 'iperf3'\nsize = 100\nrate = 100\ngaps = 'exponential'", 10,
     "iperf3 paces at a constant rate"),
    ("[senders.sender2]\nsize = 100\nrate = 200000\ncpu = 'receiver'", 8,
     "impossible rate: 200000 pps is more than ITGSend sends"),                   # impossible rate
    ("[senders.sender2]\nsize = 100\nrate = 100\ngaps = {dist = 'pareto', shape = 1}", 9,
     "Pareto gaps need shape > 1"),
    ("[senders.sender2]\nsize = 100\nrate = 0.1\nduration = 1\ncpu = 'receiver'", 8,
     "impossible rate: 0.1 pps for 1 s sends no packet"),
    ("[senders.sender2]\nsize = 100\nrate = 5000", 6,
     "impossible rate: sender2 and sender1 are D-ITG senders busy-polling CPU 0"),
    ("[senders.sender2]\nsize = 100\nrate = -3", 8, "senders.sender2.rate: must be above 0"),
    ("[senders.sender2]\nsize = 100\nrate = 'lossless*0.5'", 8, "needs throughput = "),
    ("[senders.sender2]\nsize = 100\nrate = 10\nport = 10001", 9, "10001 is sender1's port too"),
    ("[senders.sender2]\nsize = 100\nrate = 10\nport = 9001", 9, "9001 is the signalling port of a D-ITG receiver"),
    ("[senders.sender2]\nsize = 100\nrate = 10\ncount = 5\nduration = 1", 9, "give count (packets) or duration"),
    ("[senders.sender2]\nsize = 100\nrate = 10\nseed = 2", 9, "senders.sender2.seed: must be above 0 and below 1"),
    ("[senders.sender2]\nsize = 100\nrate = 10\nsend_buffer = 100000", 9, "only iperf3 sets its socket buffer"),
    ("[senders.sender2]\nsize = 100\nrate = 10\ncpu = 77", 9, "senders.sender2.cpu: must be one of"),
    ("[testbed]\nsink = true", 7, "the sink drops UDP data before any receiver sees it"),
    ("[vary]\n'senders.sender1.colour' = [1, 2]", 7, "is not a key that can vary"),
    ("[vary]\n'senders.sender1.rate' = []", 7, "must be a list of at least one value"),
    ("[[conditions]]\nname = 'a b'", 7, "each [[conditions]] needs name"),
    ("[[conditions]]\nname = 'a'\n[[conditions]]\nname = 'a'", 9, "two conditions are named 'a'"),
    ("[senders.sender2]\nsize = 100\nrate = 10\nduration = 1e308", 9,
     "senders.sender2.duration: must be at most 86400"),
    ("[senders.sender2]\nsize = 100\nrate = 10\ncount = 100000000000000000", 9,
     "senders.sender2.count: must be at most 10000000000"),
    ("[vary]\n'senders.sender1.size' = [" + ", ".join(map(str, range(20, 120))) + "]\n"
     "'senders.sender1.rate' = [" + ", ".join(map(str, range(1, 102))) + "]", 6,
     "make 10100 conditions, more than 10000"),
])
def test_each_mistake_names_its_line(extra, line, words):
    got = problems(BASE + extra + "\n")
    assert any(n == line and words in msg for n, msg in got), got


def test_values_from_a_condition_or_vary_are_blamed_on_their_own_line():
    text = BASE + """
[[conditions]]
name = "ok"

[[conditions]]
name = "bad"
senders.sender1 = { size = 550, rate = "fast" }

[vary]
"duration" = [1, -1]
"""
    got = problems(text)
    assert (12, "senders.sender1.rate: 'fast' is neither packets per second nor \"lossless\", "
                "\"lossless*F\", \"lossless[CONDITION]*F\"") in got
    assert any(n == 15 and msg.startswith("duration: must be above 0") for n, msg in got), got


def test_every_problem_of_a_file_is_reported_once_in_line_order():
    text = "bogus = 1\n" + BASE.replace("tos = 4", "tos = 300") + "[testbed]\nmode = 'fast'\n"
    got = problems(text)
    assert [n for n, _ in got] == [1, 4, 8]


def test_lossless_rates_come_from_the_throughput_file(tmp_path):
    (tmp_path / "tp.json").write_text(json.dumps({
        "format": "hopscope-throughput/1", "scenario": "x", "method": {},
        "conditions": {"a": {"lossless_pps": 4000}, "b": {"lossless_pps": None}}}))
    text = 'throughput = "tp.json"\n' + BASE.replace("rate = 2000", 'rate = "lossless[a]*0.7"')
    (c,) = parse_scenario(text, str(tmp_path / "s.toml")).conditions()
    assert c.senders[0].rate == pytest.approx(2800)
    bad = text.replace("lossless[a]", "lossless[b]")
    with pytest.raises(ScenarioError, match=r"s.toml:6: .*found no lossless rate for 'b'"):
        parse_scenario(bad, str(tmp_path / "s.toml"))
    with pytest.raises(ScenarioError, match=r"has no condition 's'"):
        parse_scenario(text.replace("lossless[a]", "lossless"), str(tmp_path / "s.toml"))
    with pytest.raises(ScenarioError, match=r":1: throughput: cannot read"):
        parse_scenario(text.replace("tp.json", "none.json"), str(tmp_path / "s.toml"))


def test_cli_check_exits_2_with_the_line_and_0_when_good(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE + "[senders.sender3]\nsize = 100\nrate = 10\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    r = subprocess.run([sys.executable, "-m", "hopscope", "scenario", "check", str(bad)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert f"{bad}:6: senders.sender3.namespace:" in r.stderr
    r = subprocess.run([sys.executable, "-m", "hopscope", "scenario", "run", str(bad), "-o",
                        str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "sender3" in r.stderr
    assert not (tmp_path / "out").exists()  # refused before anything started
    r = subprocess.run([sys.executable, "-m", "hopscope", "scenario", "check", *SHIPPED],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": OK: ") == len(SHIPPED)
