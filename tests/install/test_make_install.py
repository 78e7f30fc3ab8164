"""`make install DESTDIR=<tmp>`: the recorder, the Python package and the man
page where docs/install.md says; the installed binary runs the INSTALLED
package (not this checkout's, even from inside it), with the virtualenv's
Python; `make uninstall` takes every file back."""
import os
import sys

import pytest

from installkit import DATA, ROOT, SOURCE, env, explain, package_files, run, scratch

PREFIX = "/usr/local"


@pytest.fixture(scope="module")
def installed():
    """(DESTDIR, the files as make install left them)"""
    with scratch("install") as dest:
        r = run(["make", "-s", "-C", ROOT, "install", f"DESTDIR={dest}"])
        assert r.returncode == 0, explain(r)
        files = {os.path.relpath(os.path.join(d, f), dest)
                 for d, _, fs in os.walk(dest) for f in fs}
        yield dest, files


def test_layout(installed):
    dest, files = installed
    lib = "usr/local/lib/hopscope/python"
    want = {"usr/local/sbin/hopscope", "usr/local/share/man/man8/hopscope.8"}
    want |= {f"{lib}/{f}" for f in package_files(SOURCE)}
    assert files == want  # nothing else: no __pycache__, no build products
    assert os.stat(os.path.join(dest, "usr/local/sbin/hopscope")).st_mode & 0o777 == 0o755


def installed_binary(dest):
    return os.path.join(dest, PREFIX.lstrip("/"), "sbin", "hopscope")


def test_version(installed):
    r = run([installed_binary(installed[0]), "version"])
    assert r.returncode == 0 and r.stdout.startswith("hopscope "), explain(r)


def test_runs_the_installed_package(installed):
    """describe through a Python that first tells where `hopscope` comes from;
    run from inside userspace/python, next to this checkout's package, which
    must not be the one taken."""
    dest = installed[0]
    pylib = os.path.join(dest, PREFIX.lstrip("/"), "lib", "hopscope", "python")
    with scratch("wrapper") as tmp:
        wrapper = os.path.join(tmp, "python")
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
exec {sys.executable} -c 'import os, runpy, sys, hopscope
print("package:", os.path.dirname(hopscope.__file__), file=sys.stderr)
sys.argv = ["hopscope"] + sys.argv[3:]
runpy.run_module("hopscope", run_name="__main__", alter_sys=True)' "$@"
""")
        os.chmod(wrapper, 0o755)
        r = run([installed_binary(dest), "describe", os.path.join(DATA, "single.hsr")],
                cwd=SOURCE, env=env(HOPSCOPE_PYTHON=wrapper))
    assert r.returncode == 0, explain(r)
    assert f"package: {pylib}/hopscope\n" in r.stderr, explain(r)
    # what this checkout's package says of the same file
    mine = run([sys.executable, "-m", "hopscope", "describe", os.path.join(DATA, "single.hsr")],
               env=env(PYTHONPATH=SOURCE))
    assert mine.returncode == 0 and r.stdout == mine.stdout != "", explain(mine)


def test_default_python_is_the_venv(installed):
    """Without HOPSCOPE_PYTHON: the virtualenv's Python compiled in (make deps made it)."""
    r = run([installed_binary(installed[0]), "verify", os.path.join(DATA, "single.hsr")],
            cwd="/")
    assert r.returncode == 0 and ": OK: " in r.stdout, explain(r)


def test_missing_python_is_told(installed):
    r = run([installed_binary(installed[0]), "describe", os.path.join(DATA, "single.hsr")],
            env=env(HOPSCOPE_PYTHON="/nonexistent/bin/python"))
    assert r.returncode == 1, explain(r)
    assert "/nonexistent/bin/python (HOPSCOPE_PYTHON) is missing" in r.stderr
    assert "make deps" in r.stderr


def test_man_page_renders(installed):
    page = os.path.join(installed[0], "usr/local/share/man/man8/hopscope.8")
    r = run(["man", "-l", "--warnings", page], env=env(MANWIDTH="80", MAN_KEEP_FORMATTING=""))
    assert r.returncode == 0 and r.stderr == "", explain(r)
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "FILES", "ENVIRONMENT",
                    "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert f"\n{heading}\n" in r.stdout, heading


def test_uninstall_takes_every_file(installed):
    dest = installed[0]
    r = run(["make", "-s", "-C", ROOT, "uninstall", f"DESTDIR={dest}"])
    assert r.returncode == 0, explain(r)
    left = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs]
    assert left == []
    assert not os.path.exists(os.path.join(dest, "usr/local/lib/hopscope"))
