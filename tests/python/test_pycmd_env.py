"""build/hopscope hands the Python commands glibc's malloc settings from
userspace/glibc.tunables (the one place evaluation/bench/analysis.py reads them too),
and a user's own GLIBC_TUNABLES wins."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")


def tunables_seen(tmp_path, **env):
    """GLIBC_TUNABLES as the Python that `hopscope describe` runs sees it"""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s" "$GLIBC_TUNABLES"\n')
    fake.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    r = subprocess.run([HOPSCOPE, "describe", "x.hsr"], capture_output=True, text=True,
                       env=dict(base, HOPSCOPE_PYTHON=str(fake), **env))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_python_commands_get_the_tunables_file(tmp_path):
    with open(os.path.join(ROOT, "userspace", "glibc.tunables")) as f:
        want = f.read().strip()
    assert "glibc.malloc.arena_max=1" in want
    assert tunables_seen(tmp_path) == want


def test_a_users_own_setting_wins(tmp_path):
    assert tunables_seen(tmp_path, GLIBC_TUNABLES="glibc.malloc.check=0") == "glibc.malloc.check=0"
