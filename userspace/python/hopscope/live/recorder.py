"""The recorder `hopscope top -- RECORD_ARGS` runs for itself:
`hopscope record --aggregate --snapshot` into a temporary folder, in its own
session (a Ctrl-C reaches top, which then stops it) and ended with top
however top ends (proc.end_with_parent). Its stderr goes to a file, never to
the screen; top shows it after the screen is closed."""
import os
import shutil
import signal
import subprocess
import time

from .proc import HOPSCOPE, end_with_parent, scratch_dir, start_attached

READY_S = 60   # loading and attaching the probes; slow on a busy machine
FIRST_S = 30   # its first snapshot, a second after it attached
STOP_S = 30    # a recorder stops (detaches, writes END) well within this


class RecorderError(Exception):
    """The recorder could not be started; .status: its exit status (2: the
    arguments given for it were wrong), None while unknown."""
    status = None


class OwnRecorder:
    """Started and attached once constructed (RecorderError if not); stop()
    always, also on an error (top does it in a finally)."""

    def __init__(self, record_args):
        self.dir = scratch_dir("hopscope-top-")
        self.snapshot = os.path.join(self.dir, "snapshot.json")
        self.err_path = os.path.join(self.dir, "recorder.stderr")
        self.p = None
        try:
            self._start(list(record_args))
        except BaseException as e:
            code, _ = self.stop()
            if isinstance(e, RecorderError):
                e.status = code
            raise

    def _start(self, record_args):
        # ours first, so the user's -o (or --counters-every) wins; then theirs;
        # the snapshot is ours. A COUNTERS chunk a minute, not a second: top
        # may run for days, and its file is only kept when -o asks for it
        if not os.access(HOPSCOPE, os.X_OK):
            raise RecorderError(f"{HOPSCOPE} not found: run make")
        argv = [HOPSCOPE, "record", "--aggregate", "-q", "--counters-every", "60", "-o",
                os.path.join(self.dir, "top.hsr"), *record_args, "--snapshot", self.snapshot]
        with open(self.err_path, "wb") as err:
            self.p, line = start_attached(argv, READY_S, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=err,
                                          start_new_session=True,
                                          preexec_fn=end_with_parent(os.getpid()))
        if line != b"ready\n":
            why = f"not attached within {READY_S} s" if line is None else "it did not attach"
            raise RecorderError(f"the recorder failed: {why}\n{self.stderr()}".rstrip())
        end = time.monotonic() + FIRST_S  # its first snapshot comes a second later
        while not os.path.exists(self.snapshot):
            if self.failed() or time.monotonic() > end:
                raise RecorderError(f"the recorder wrote no snapshot in {FIRST_S} s: "
                                    f"{self.failed() or 'still running'}\n{self.stderr()}".rstrip())
            time.sleep(0.1)

    def failed(self):
        """Why the recorder is gone while top still runs, or None."""
        if self.p is None or self.p.poll() is None:
            return None
        return f"the recorder stopped (exit {self.p.returncode})"

    def stderr(self):
        try:
            with open(self.err_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """Stop it as Ctrl-C would (SIGINT: probes detached, file closed),
        killed if it does not stop; the temporary folder removed. Returns
        (exit status or None, its stderr)."""
        code = None
        if self.p is not None:
            if self.p.poll() is None:
                self.p.send_signal(signal.SIGINT)
            try:
                code = self.p.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                self.p.kill()
                code = self.p.wait()
        err = self.stderr()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code, err
