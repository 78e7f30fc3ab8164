"""The testbed, driven through testbed/testbed.sh, and its layout: the one
place its namespaces, interfaces, addresses and CPU plan are typed is that
script; hopscope.traffic, the tests and the benches make and read theirs
from here.

    tb = Testbed("hs-").up("--mode", "inline")   # testbed.sh up, the router's CPU kept
    tb.spawn("receiver", "iperf3", "-s")         # killed at tb.down()
    lay = layout(mode="inline")          # planned: `testbed.sh layout --json`
    lay["cpus"]["router"], lay["senders"], lay["interfaces"]["receiver"][0]["ipv4"]
    live = layout("hs-", live=True)      # the testbed up now: `testbed.sh status --json`
    chain = layout(routers=3, shape={"r2": "tbf:20mbit"})   # senders -> r1 -> r2 -> r3 -> receiver
    [r["netns"] for r in chain["routers"]]

The JSON's keys are in testbed/README.md ("Layout as JSON").
"""
import functools
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))
TESTBED = os.path.join(ROOT, "testbed", "testbed.sh")


class TestbedError(Exception):
    """testbed.sh refused (bad options, not up, not healthy); the message says why."""


class Testbed:
    """One testbed on prefix. up() and run() raise TestbedError with
    testbed.sh's message; down() also kills what spawn() started, and is
    quiet where nothing is up. log: a file every command and its output is
    appended to."""
    __test__ = False  # not a test class, though test modules import it

    def __init__(self, prefix="", log=None):
        self.prefix, self.log = prefix, log
        self.procs = []

    def run(self, *args, check=True):
        """testbed.sh ARGS; its stdout."""
        r = subprocess.run([TESTBED, *args], env=dict(os.environ, HS_PREFIX=self.prefix),
                           capture_output=True, text=True)
        if self.log:
            with open(self.log, "a") as f:
                f.write(f"$ testbed.sh {' '.join(args)}\n{r.stdout}{r.stderr}")
        if check and r.returncode != 0:
            raise TestbedError(f"testbed.sh {' '.join(args)}: {_message(r)}")
        return r.stdout

    def up(self, *args, shield="router"):
        """testbed.sh up ARGS; shield: the CPUs the testbed keeps its own
        processes (this one's, and what it starts) off ("router", the
        default: measurements want the router's CPU to the router;
        "senders"; None or False: shared). No other task is moved."""
        self.run("up", *args, *(["--shield", shield] if shield else []))
        return self

    def down(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs.clear()
        self.run("down", check=False)

    def spawn(self, name, *cmd, **kw):
        """A background process in the namespace name (sender1, router, ...),
        killed at down()."""
        p = subprocess.Popen(["ip", "netns", "exec", self.prefix + name, *cmd],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        self.procs.append(p)
        return p


def _message(r):
    """testbed.sh's own message, without its "testbed.sh: " lead."""
    msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return msg.split(": ", 1)[1] if msg.startswith("testbed.sh: ") else msg


def up_options(mode="rps", shape="none", shape_in="none", sink=False, shield=False, routers=1):
    """testbed.sh up's options for a scenario's [testbed] (its keys): shield
    True keeps the router's CPU (--shield router), "senders" the senders'
    (--shield senders), False none (testbed.sh's default). routers: how many
    in the chain (--routers); shape: the last router's output shaper, or a
    mapping of router ("r2" or 2) to its output's shaper (--shape rK=SPEC)."""
    args = ["--routers", str(routers)] if routers != 1 else []
    args += ["--mode", mode]
    if isinstance(shape, str):
        args += ["--shape", shape]
    else:
        for k, spec in sorted(shape.items(), key=lambda kv: _router_number(kv[0])):
            args += ["--shape", f"r{_router_number(k)}={spec}"]
    args += ["--shape-in", shape_in] if shape_in != "none" else []
    args += ["--sink"] if sink else []
    if shield is not False:
        args += ["--shield", "router" if shield is True else shield]
    return args


def _router_number(key):
    """2 for "r2" or 2; testbed.sh judges the range."""
    text = str(key)
    text = text[1:] if text.startswith("r") else text
    if not text.isdigit():
        raise TestbedError(f"shape: router {key!r}: expected rK or K, a router's number on the chain")
    return int(text)


def layout(prefix="", *, live=False, mode="rps", shape="none", shape_in="none", sink=False,
           shield=False, routers=1):
    """The testbed's layout as a dict (a fresh copy; change it freely).

    live=False: what `testbed.sh up` with these options (up_options) would
    make (nothing is made; cached per prefix and options). live=True: the
    testbed up now under prefix, with its routers' netns inodes and problems
    (read anew each call; the options are ignored); TestbedError unless it is
    up and healthy. lay["routers"] lists the chain's routers in path order;
    with more than one, lay["router"] is None."""
    if live:
        doc = _json(prefix, "status", "--json")
        if not doc.get("up"):
            raise TestbedError(f"the testbed {prefix!r} is not up")
        if not doc.get("healthy"):
            raise TestbedError(f"the testbed {prefix!r} is up but not healthy: "
                               + "; ".join(doc.get("problems") or ()))
        return doc
    return json.loads(_planned(prefix, tuple(up_options(mode, shape, shape_in, sink, shield,
                                                        routers))))


@functools.lru_cache(maxsize=None)
def _planned(prefix, options):
    return json.dumps(_json(prefix, "layout", "--json", *options, check=True))


def _json(prefix, *args, check=False):
    if not os.access(TESTBED, os.X_OK):
        raise TestbedError(f"{TESTBED} not found: hopscope's traffic runs need its source tree")
    r = subprocess.run([TESTBED, *args], env=dict(os.environ, HS_PREFIX=prefix),
                       capture_output=True, text=True)
    if r.returncode != 0 and (check or not r.stdout.strip()):
        raise TestbedError(_message(r))
    return json.loads(r.stdout)


def address(lay, role, family=4):
    """The address of role's (first) interface: ipv4 or ipv6."""
    return lay["interfaces"][role][0][f"ipv{family}"]


def interface(lay, role):
    """The name of role's (first) interface."""
    return lay["interfaces"][role][0]["name"]
