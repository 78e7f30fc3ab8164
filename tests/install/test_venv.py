"""The tests run in the virtualenv `make deps` made (tests/run.sh), and so do
a test's `python3` and the notebooks' kernel (tests/notebooks)."""
import os
import shutil
import sys

import nbformat
import pytest
from nbclient import NotebookClient

CHOSEN = os.environ.get("HOPSCOPE_PYTHON")
pytestmark = pytest.mark.skipif(not CHOSEN, reason="not run by tests/run.sh")


def test_pytest_runs_the_chosen_python():
    assert os.path.realpath(shutil.which(CHOSEN) or CHOSEN) == os.path.realpath(sys.executable)


def test_a_virtualenv_is_first_on_path():
    if sys.prefix == sys.base_prefix:
        pytest.skip(f"HOPSCOPE_PYTHON={CHOSEN} is no virtualenv's")
    assert os.path.dirname(shutil.which("python3")) == os.path.join(sys.prefix, "bin")


def test_notebook_kernel_is_this_python():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys; print(sys.executable, sys.prefix)")])
    NotebookClient(nb, kernel_name="python3", timeout=60).execute()
    assert nb.cells[0].outputs[0]["text"].split() == [sys.executable, sys.prefix]
