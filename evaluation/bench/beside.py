"""Other work for a bench to run beside the router and its recorder, as a
production machine has: started by the bench after the testbed is up (so the
shield, which places the testbed's own processes, leaves it where the
scheduler puts it), stopped with its whole process group at the end.

    with Beside("io", tmpdir):
        ... measure ...

Kinds (BESIDE): none; cpu, two busy loops at nice 0; fork, two loops
starting short-lived Python processes at nice 10 (a test suite's workers, a
compiler's jobs); io, a writer of 1 GiB files that syncs each (dirty pages
and writeback in the recorder's file system); mem, two processes touching
1 GiB arrays over and over (page allocation and reclaim); all of them.
"""
import os
import signal
import subprocess
import sys

WORK = {
    "cpu": ["sh", "-c", "while :; do :; done"],
    "fork": ["nice", "-n", "10", "sh", "-c", f"while :; do {sys.executable} -c 'import json'; done"],
    "io": ["sh", "-c", "while :; do dd if=/dev/zero of=\"$0/beside-io\" bs=1M count=1024 "
           "conv=fsync status=none; done"],
    "mem": [sys.executable, "-c", "while True: bytearray(1 << 30)[::4096] = bytes(1 << 18)"],
}
COPIES = {"cpu": 2, "fork": 2, "io": 1, "mem": 2}
BESIDE = ("none", *WORK, "all")


class Beside:
    """kind's processes, running from __enter__ to __exit__; dirpath is where
    the io writer writes (the recorder's file system)."""

    def __init__(self, kind, dirpath):
        if kind not in BESIDE:
            raise ValueError(f"--beside {kind!r}: expected one of {', '.join(BESIDE)}")
        self.kinds = list(WORK) if kind == "all" else [] if kind == "none" else [kind]
        self.dir, self.procs = dirpath, []

    def __enter__(self):
        try:
            for k in self.kinds:
                argv = [*WORK[k], self.dir] if k == "io" else WORK[k]
                for _ in range(COPIES[k]):
                    self.procs.append(subprocess.Popen(argv, start_new_session=True,
                                                       stdout=subprocess.DEVNULL,
                                                       stderr=subprocess.DEVNULL))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        path = os.path.join(self.dir, "beside-io")
        if os.path.exists(path):
            os.remove(path)
        return False
