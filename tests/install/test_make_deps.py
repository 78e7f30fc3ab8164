"""`make deps` with nothing but Debian's own directories on PATH (so the
Python is Debian's /usr/bin/python3, PEP 668 externally managed) into a
virtualenv of its own (VENV): it succeeds, the venv holds the dependency
list of userspace/python/pyproject.toml and not hopscope itself, and
build/hopscope runs the analysis commands with it, and its pyspark runs a
local Spark session on the Java it installed. Then: a second run is
quick, a changed list is installed again, an editable hopscope left in a
Python by an older install-deps is removed, and a folder that is not a
virtualenv is never deleted."""
import os
import time
import tomllib

import pytest

from installkit import (DATA, DEBIAN_PATH, DEBIAN_PYTHON, ROOT, SOURCE, binary, copy_source, env,
                        explain, run, scratch)


def deps(venv, **extra):
    return run(["make", "-s", "-C", ROOT, "deps", f"VENV={venv}"],
               env=env(PATH=DEBIAN_PATH, **extra))


def wanted():
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return project["dependencies"] + project["optional-dependencies"]["test"]


@pytest.fixture(scope="module")
def made():
    """(scratch folder, VENV, the first make deps)"""
    with scratch("deps") as top:
        venv = os.path.join(top, "venv")
        yield top, venv, deps(venv)


def test_made_from_debians_python(made):
    top, venv, r = made
    assert r.returncode == 0, explain(r)
    assert f"making the virtualenv {venv} from {DEBIAN_PYTHON}" in r.stdout, explain(r)
    with open(os.path.join(venv, "pyvenv.cfg")) as f:
        assert "home = /usr/bin\n" in f.read()


def test_holds_the_pyproject_list_and_not_hopscope(made):
    venv = made[1]
    with open(os.path.join(venv, "hopscope-requirements.txt")) as f:
        assert f.read().split() == wanted()
    py = os.path.join(venv, "bin", "python")
    r = run([py, "-c", "import pandas, numpy, pyarrow, matplotlib, pytest, nbclient, ipykernel,"
                       " duckdb, pyspark"], cwd="/")
    assert r.returncode == 0, explain(r)
    r = run([py, "-c", "import hopscope"], cwd="/")
    assert r.returncode == 1 and "No module named 'hopscope'" in r.stderr, explain(r)


def test_the_cli_runs_with_it(made):
    py = os.path.join(made[1], "bin", "python")
    r = run([binary(), "describe", os.path.join(DATA, "single.hsr")],
            env=env(PATH=DEBIAN_PATH, HOPSCOPE_PYTHON=py))
    assert r.returncode == 0 and "6013 records" in r.stdout, explain(r)


def test_spark_runs_on_debians_java(made):
    """tests/traffic's Spark query needs both halves: apt's JVM, the venv's pyspark."""
    py = os.path.join(made[1], "bin", "python")
    # the quick JIT alone: a JVM this short starts in half the time
    code = ("from pyspark.sql import SparkSession\n"
            "s = (SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')"
            ".config('spark.driver.host', '127.0.0.1')"
            ".config('spark.driver.extraJavaOptions', '-XX:TieredStopAtLevel=1').getOrCreate())\n"
            "print(s.range(5).count(), s.version)\n"
            "s.stop()\n")
    r = run([py, "-c", code], cwd="/", timeout=300, env=env(PATH=DEBIAN_PATH))
    assert r.returncode == 0 and r.stdout.split()[0] == "5", explain(r)


def test_second_run_is_quick(made):
    t = time.monotonic()
    r = deps(made[1])
    took = time.monotonic() - t
    assert r.returncode == 0 and "Python packages up to date" in r.stdout, explain(r)
    assert took < 15, f"make deps took {took:.1f} s with everything installed"


def test_a_changed_list_is_installed_again(made):
    stamp = os.path.join(made[1], "hopscope-requirements.txt")
    with open(stamp, "a") as f:
        f.write("a-package-no-longer-wanted\n")
    r = deps(made[1])
    assert r.returncode == 0 and "installing into" in r.stdout, explain(r)
    with open(stamp) as f:
        assert f.read().split() == wanted()


def test_removes_an_old_editable_install(made):
    """What the older install-deps left: `pip install -e userspace/python` in the
    Python it ran (here a venv of Debian's, standing in for the system's)."""
    top, venv, _ = made
    old = os.path.join(top, "old")
    src = copy_source(os.path.join(top, "oldtree", "python"))
    py = os.path.join(old, "bin", "python")
    for cmd in ([DEBIAN_PYTHON, "-m", "venv", old],
                [py, "-m", "pip", "install", "-q", "--no-deps", "-e", src]):
        r = run(cmd)
        assert r.returncode == 0, explain(r)
    found = [py, "-c", "import importlib.util as u; print(u.find_spec('hopscope') is not None)"]
    assert run(found, cwd="/").stdout == "True\n"
    r = deps(venv, PYTHON=py)
    assert r.returncode == 0, explain(r)
    assert f"removing the editable hopscope (file://{src}) from {py}" in r.stdout, explain(r)
    assert run(found, cwd="/").stdout == "False\n"


def test_never_deletes_a_folder_that_is_not_a_venv(made):
    top = made[0]
    mine = os.path.join(top, "mine")
    os.mkdir(mine)
    keep = os.path.join(mine, "keep.txt")
    with open(keep, "w") as f:
        f.write("mine\n")
    r = deps(mine)
    assert r.returncode != 0 and "is not a virtualenv" in r.stderr, explain(r)
    assert os.path.exists(keep)
