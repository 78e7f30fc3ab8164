"""The recorder (`hopscope record`, the C program) as a child of a Python
command: where its binary is, a child that cannot outlive its parent, and
the `ready` line of its --ready-fd."""
import ctypes
import os
import select
import signal
import time

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _binary():
    """The hopscope program beside this package, found as the program finds
    the package (userspace/pycmd.c): a checkout's build/hopscope
    (userspace/python/../../build), else an installed PREFIX/sbin/hopscope
    (PREFIX/lib/hopscope/python/../../../sbin). The checkout's path when
    neither exists, so a message names what `make` builds."""
    checkout = os.path.join(_PACKAGE, "..", "..", "build", "hopscope")
    installed = os.path.join(_PACKAGE, "..", "..", "..", "sbin", "hopscope")
    found = next((p for p in (checkout, installed) if os.access(p, os.X_OK)), checkout)
    return os.path.normpath(found)


HOPSCOPE = _binary()


def end_with_parent(parent):
    """A preexec_fn: the child gets SIGTERM when this process ends, however it ends
    (kill -9 included), so no recorder or generator outlives its run. The recorder
    ends cleanly on SIGTERM (links detached, file closed); `ip netns exec` and
    taskset exec without forking, so the setting reaches the program itself."""
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec():
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:     # the parent ended before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    return preexec


def read_line(fd, timeout):
    """What fd gives up to its first newline or end of file (b"" at once at end
    of file); None if that takes longer than timeout seconds."""
    got, end = b"", time.monotonic() + timeout
    while not got.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 64)
        if not chunk:
            break
        got += chunk
    return got
