"""The scratch folder `hopscope top` and `serve` keep for their recorder: a
kill -9 leaves it behind, so the next one removes those whose owner is gone
and that nobody touched for a while, and no other."""
import os
import subprocess
import sys
import time

from hopscope.live import proc


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def folder(tmp, name, age_s):
    path = tmp / name
    path.mkdir()
    (path / "snapshot.json").write_text("{}")
    then = time.time() - age_s
    for p in (path / "snapshot.json", path):
        os.utime(p, (then, then))
    return path


def test_leftovers_of_dead_owners_go_and_live_ones_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(proc.tempfile, "tempdir", None)  # TMPDIR read again
    gone = dead_pid()
    left = folder(tmp_path, f"hopscope-top-{gone}-abc", 3600)
    fresh = folder(tmp_path, f"hopscope-top-{gone}-new", 1)  # still being written
    alive = folder(tmp_path, f"hopscope-top-{os.getpid()}-old", 3600)
    other = folder(tmp_path, f"hopscope-serve-{gone}-abc", 3600)   # another prefix
    unnamed = folder(tmp_path, "hopscope-top-xyz", 3600)           # not ours to judge
    made = proc.scratch_dir("hopscope-top-")
    assert os.path.dirname(made) == str(tmp_path)
    assert os.path.basename(made).startswith(f"hopscope-top-{os.getpid()}-")
    assert not left.exists()
    assert fresh.exists() and alive.exists() and other.exists() and unnamed.exists()
