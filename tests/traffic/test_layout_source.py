"""The testbed's names, addresses and CPU plan are typed once, in
testbed/testbed.sh; hopscope.traffic reads them through traffic/testbed.py
(`testbed.sh layout --json`, `status --json`) and types none of them."""
import os
import re

from hopscope.traffic import testbed

PACKAGE = os.path.dirname(testbed.__file__)
LAYOUT = testbed.layout()


def literals():
    """Every interface name and address of the planned layout."""
    out = set()
    for ifaces in LAYOUT["interfaces"].values():
        for i in ifaces:
            out |= {i["name"], i["ipv4"], i["ipv6"], i["mac"]}
    return out


def test_the_layout_names_every_role():
    assert set(LAYOUT["namespaces"]) == {*LAYOUT["senders"], "router", "receiver"}
    assert LAYOUT["router"]["in"] == [i["name"] for i in LAYOUT["interfaces"]["router"]
                                      if i["peer_role"] in LAYOUT["senders"]]
    assert LAYOUT["router"]["out"] in [i["name"] for i in LAYOUT["interfaces"]["router"]]
    assert len(literals()) == 6 * 4  # 6 interfaces, each name, v4, v6, MAC distinct


def test_no_module_under_traffic_types_a_testbed_name_or_address():
    words = literals() | {"198.18.", "2001:2:"}
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path == testbed.__file__:
                continue
            with open(path) as f:
                text = f.read()
            for w in words:
                for m in re.finditer(rf"(?<![\w.:-]){re.escape(w)}(?![\w-])" if w[-1] not in ".:"
                                     else re.escape(w), text):
                    line = text.count("\n", 0, m.start()) + 1
                    found.append(f"{os.path.relpath(path, PACKAGE)}:{line}: {w}")
    assert not found, "typed again here (read hopscope.traffic.testbed.layout):\n" + "\n".join(found)


def test_scenario_cpus_come_from_the_testbed_plan():
    """A scenario's CPU roles resolve as testbed.sh plans them: two D-ITG
    pollers are refused exactly when the plan puts their roles on one CPU."""
    from hopscope.traffic.scenario.load import ScenarioError, parse_scenario
    for mode in ("rps", "inline", "napi"):
        plan = testbed.layout(mode=mode)["cpus"]
        text = (f'[testbed]\nmode = "{mode}"\n'
                '[senders.sender1]\nsize = 100\nrate = 5000\ncpu = "sender"\n'
                '[senders.sender2]\nsize = 100\nrate = 5000\ncpu = "router"\n')
        try:
            parse_scenario(text, "x.toml")
            refused = False
        except ScenarioError as e:
            refused = "busy-polling" in str(e)
        assert refused == (plan["sender"] == plan["router"]), (mode, plan)
