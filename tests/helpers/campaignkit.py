"""What the campaign and throughput tests share: the CLI in a process group
of its own, and the testbed prefix they use, cleaned up after."""
import os
import signal
import subprocess
import sys

from hopscope.traffic.testbed import Testbed
from testlib import namespaces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "hst-cp-"


def hopscope(*args):
    """`python3 -m hopscope ARGS` in its own process group, like a shell job:
    a signal to the group reaches the recorder and generators too."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    return subprocess.Popen([sys.executable, "-m", "hopscope", *map(str, args)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def stop_group(p, sig=signal.SIGKILL):
    """Signal p's process group (what is left of it) and reap p."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    if sig == signal.SIGKILL:
        p.wait()


def take_testbed_down():
    Testbed(PREFIX).down()


def our_namespaces():
    return namespaces(PREFIX)


def our_processes():
    """Processes a run of ours started: the recorder (its command names our
    router namespace) and whatever runs inside our namespaces."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{PREFIX}router" in cmd and "hopscope" in cmd and "record" in cmd:
            found.append(cmd)
    for ns in our_namespaces():
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        found += [f"pid {p} in {ns}" for p in pids.split()]
    return found


