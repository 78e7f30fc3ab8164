"""Fixtures for end-to-end tests: a namespaced testbed per test and a recorder
running against it. Everything a test starts is torn down, also on failure."""
import pytest

from testlib import PREFIX, Recorder, namespaced_testbed


@pytest.fixture
def testbed():
    yield from namespaced_testbed(PREFIX)


@pytest.fixture
def recorder(tmp_path):
    started = []

    def start(*extra, **kw):
        r = Recorder(tmp_path / f"run{len(started)}.hsr", *extra, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill()
