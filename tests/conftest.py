"""The whole suite's set-up: this tree's package and the test helpers
(tests/helpers/) on the path, and the markers that let a subset run
without root: `make check` is `-m "not root and not qemu and not slow"`.

A folder's tests carry its markers (FOLDERS); a test module in another
folder that needs more says so itself (`pytestmark = pytest.mark.root`)."""
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(TESTS), "userspace", "python"),
                os.path.join(TESTS, "helpers")]

MARKERS = {
    "root": "needs root: BPF programs, network namespaces, apt or make install",
    "qemu": "boots a kernel in QEMU (the module's tests, real NIC drivers, router configurations)",
    "slow": "takes minutes, not seconds",
}
FOLDERS = {
    "bpf": ("root",),               # BPF_PROG_TEST_RUN
    "e2e": ("root",),               # the namespace testbed and the recorder
    "testbed": ("root",),
    "traffic": ("root",),           # scenarios run on the testbed
    "install": ("root", "slow"),    # make deps, make install, pip installs
    "kmod": ("root", "qemu", "slow"),
    "nics": ("root", "qemu", "slow"),
    "routers": ("root", "qemu", "slow"),
    "notebooks": ("slow",),         # every notebook executed
    "fuzz": ("slow",),              # thousands of mutated files
}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_collection_modifyitems(items):
    for item in items:
        folder = os.path.relpath(str(item.path), TESTS).split(os.sep)[0]
        for name in FOLDERS.get(folder, ()):
            item.add_marker(name)
