"""Children a command starts and must not outlive it: the recorder that
`hopscope top` and `hopscope serve` run, a scenario's recorder and
generators (traffic/run.py); the scratch folder such a command keeps for
it; and where the recorder's program is."""
import ctypes
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _program():
    """The hopscope program that belongs to this package: the one that ran it
    (it says so in HOPSCOPE_PROGRAM, userspace/pycmd.c), else found as the
    program finds the package: a checkout's build/hopscope
    (userspace/python/../../build), else an installed PREFIX/sbin/hopscope
    (PREFIX/lib/hopscope/python/../../../sbin). The checkout's path when none
    exists, so a message names what `make` builds."""
    checkout = os.path.join(_PACKAGE, "..", "..", "build", "hopscope")
    installed = os.path.join(_PACKAGE, "..", "..", "..", "sbin", "hopscope")
    found = [p for p in (os.environ.get("HOPSCOPE_PROGRAM"), checkout, installed)
             if p and os.access(p, os.X_OK)]
    return os.path.normpath(found[0] if found else checkout)


HOPSCOPE = _program()


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


def start_attached(argv, timeout, **popen):
    """Popen(argv --ready-fd N, **popen) of a `hopscope record` argv and what
    it wrote on N: b"ready\n" once attached, b"" when it failed before, None
    after timeout seconds. argv may start with a wrapper (taskset)."""
    ready_r, ready_w = os.pipe()
    try:
        p = subprocess.Popen([*argv, "--ready-fd", str(ready_w)], pass_fds=(ready_w,), **popen)
        os.close(ready_w)
        ready_w = None
        try:
            return p, read_line(ready_r, timeout)
        except BaseException:  # Ctrl-C while waiting: no recorder the caller cannot stop
            p.kill()
            p.wait()
            raise
    finally:
        os.close(ready_r)
        if ready_w is not None:
            os.close(ready_w)


# a scratch folder whose owner is gone, untouched this long, is a leftover
# (a live recorder rewrites its snapshot there every second)
STALE_S = 60


def scratch_dir(prefix):
    """A new folder PREFIX<pid>-XXXXXXXX in the temporary directory, for this
    process. A kill -9 leaves such a folder behind (nothing of its owner runs
    to remove it), so first the earlier ones are removed whose owner is gone
    and whose files are STALE_S old."""
    tmp = tempfile.gettempdir()
    mine = re.compile(re.escape(prefix) + r"(\d+)-[^/]+")
    for name in os.listdir(tmp):
        m = mine.fullmatch(name)
        if m and not _alive(int(m[1])) and _untouched(os.path.join(tmp, name), STALE_S):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _untouched(path, seconds):
    """Nothing in the folder path (itself included) changed for seconds."""
    since = time.time() - seconds
    try:
        times = [os.lstat(path).st_mtime] + [e.stat(follow_symlinks=False).st_mtime
                                            for e in os.scandir(path)]
    except OSError:
        return False
    return max(times) < since
