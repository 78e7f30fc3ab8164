"""The analysis side alone: `pip install ./userspace/python` into a fresh
virtualenv made from Debian's /usr/bin/python3 gives `python -m hopscope
describe|verify|export|report` that work for an unprivileged user (nobody),
with no root, no compiler and no recorder: PATH holds nothing at all."""
import os
import pwd
import shutil

import pytest

from installkit import (DATA, DEBIAN_PYTHON, SOURCE, copy_source, explain, package_files, run,
                        scratch)

RECORDS = 6013  # tests/data/single.hsr (tests/notebooks/test_recordings.py checks it)


@pytest.fixture(scope="module")
def venv():
    """(the venv's python, run(args) as nobody in a folder of its own)"""
    with scratch("pip") as top:
        copy_source(os.path.join(top, "userspace", "python"))
        py = os.path.join(top, "venv", "bin", "python")
        r = run([DEBIAN_PYTHON, "-m", "venv", os.path.join(top, "venv")])
        assert r.returncode == 0, explain(r)
        r = run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 "./userspace/python"], cwd=top)
        assert r.returncode == 0, explain(r)
        nobody = pwd.getpwnam("nobody")
        work, home, empty = (os.path.join(top, d) for d in ("work", "home", "empty"))
        for d in (work, home, empty):
            os.mkdir(d)
        for d in (work, home):
            os.chown(d, nobody.pw_uid, nobody.pw_gid)
        shutil.copy(os.path.join(DATA, "single.hsr"), work)  # a checkout may be private
        with open(os.path.join(work, "bad.hsr"), "wb") as f:
            f.write(b"HOPSCOPE" + bytes(range(256)) * 4)

        def as_nobody(*args):
            return run(["runuser", "-u", "nobody", "--", "/usr/bin/env", "-i",
                        f"PATH={empty}", f"HOME={home}", "LANG=C.UTF-8", py, *args],
                       cwd=work, env=None)

        yield py, work, as_nobody


def test_installed_package_is_whole(venv):
    py = venv[0]
    r = run([py, "-c", "import hopscope, os; from importlib.metadata import version; "
                       "print(os.path.dirname(hopscope.__file__)); "
                       "print(version('hopscope'), hopscope.__version__)"], cwd="/")
    assert r.returncode == 0, explain(r)
    where, versions = r.stdout.splitlines()
    dist, package = versions.split()
    assert dist == package  # pyproject reads the package's own version
    assert where.startswith(os.path.dirname(os.path.dirname(py))) and "site-packages" in where
    assert package_files(os.path.dirname(where)) == package_files(SOURCE)


def test_runs_as_nobody(venv):
    r = venv[2]("-c", "import os; print(os.geteuid())")
    assert r.returncode == 0 and r.stdout.strip() == str(pwd.getpwnam("nobody").pw_uid), explain(r)


def test_describe(venv):
    r = venv[2]("-m", "hopscope", "describe", "single.hsr")
    assert r.returncode == 0 and f"{RECORDS} records" in r.stdout, explain(r)


def test_verify(venv):
    r = venv[2]("-m", "hopscope", "verify", "single.hsr")
    assert r.returncode == 0 and "single.hsr: OK: " in r.stdout, explain(r)


def test_export(venv):
    py, work, as_nobody = venv
    r = as_nobody("-m", "hopscope", "export", "single.hsr", "--parquet", "out.parquet",
                  "--csv", "out.csv")
    assert r.returncode == 0, explain(r)
    with open(os.path.join(work, "out.csv")) as f:
        assert sum(1 for _ in f) == RECORDS + 1
    r = as_nobody("-c", "import pyarrow.parquet as pq; print(pq.read_metadata('out.parquet').num_rows)")
    assert r.returncode == 0 and r.stdout.strip() == str(RECORDS), explain(r)


def test_report(venv):
    work = venv[1]
    r = venv[2]("-m", "hopscope", "report", "single.hsr", "-o", "out.pdf")
    assert r.returncode == 0, explain(r)
    with open(os.path.join(work, "out.pdf"), "rb") as f:
        pdf = f.read()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 20_000


@pytest.mark.parametrize("args", [("describe", "bad.hsr"), ("verify", "bad.hsr"),
                                  ("export", "bad.hsr", "--csv", "bad.csv"),
                                  ("report", "bad.hsr", "-o", "bad.pdf"),
                                  ("describe", "missing.hsr")])
def test_bad_file_is_told_without_a_traceback(venv, args):
    r = venv[2]("-m", "hopscope", *args)
    assert r.returncode == 1, explain(r)
    assert "bad.hsr" in r.stderr or "missing.hsr" in r.stderr, explain(r)
    assert "Traceback" not in r.stderr + r.stdout, explain(r)
