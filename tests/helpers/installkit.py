"""What the installation tests share: the tree, a clean environment, commands
run with a time limit, temporary folders removed even when a test fails."""
import contextlib
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "userspace", "python")  # pyproject.toml and the package
DATA = os.path.join(ROOT, "tests", "data")
BINARY = os.path.join(ROOT, "build", "hopscope")
DEBIAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # Debian's own directories only
DEBIAN_PYTHON = "/usr/bin/python3"
# what chooses a Python or a virtualenv, or passes make's own settings down
CHOOSERS = ("PYTHON", "VENV", "HOPSCOPE_PYTHON", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH",
            "VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "FORCE")


def env(**override):
    """This process's environment without anything that picks a Python, plus override."""
    e = {k: v for k, v in os.environ.items() if k not in CHOOSERS}
    e.update(override)
    return e


def run(cmd, timeout=900, **kw):
    """cmd's CompletedProcess (text); a hang fails the test instead of the run."""
    kw.setdefault("env", env())
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout, **kw)


def explain(r):
    return f"{' '.join(r.args)}: exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"


@contextlib.contextmanager
def scratch(prefix):
    """A new folder that everyone can enter (tests run commands as nobody), removed
    at the end whatever happens."""
    path = tempfile.mkdtemp(prefix=f"hopscope-{prefix}-")
    try:
        os.chmod(path, 0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def package_files(top):
    """The package's files under top (hopscope/...), without byte code."""
    out = set()
    for d, dirs, files in os.walk(os.path.join(top, "hopscope")):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        out.update(os.path.relpath(os.path.join(d, f), top) for f in files
                   if not f.endswith((".pyc", ".pyo")))
    return out


def copy_source(dest):
    """A copy of userspace/python as a fresh clone has it: no build/, no egg-info,
    no byte code (pip builds in the source folder it is given)."""
    shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*.egg-info", "build", "dist"))
    return dest


def binary():
    """build/hopscope, built if this run has not built it yet."""
    if not os.access(BINARY, os.X_OK):
        r = run(["make", "-s", "-C", ROOT, "build/hopscope"])
        assert r.returncode == 0, explain(r)
    return BINARY
