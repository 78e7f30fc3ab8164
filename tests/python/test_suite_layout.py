"""The suite's own layout: pytest imports test modules by basename (its
default import mode, rootdir without packages), so two test files of one
name in different folders stop the whole run at collection; and what tests
share lives in tests/helpers/, not among them."""
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_names_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [n for n, k in names.items() if k > 1], names.most_common(3)


def test_helpers_live_in_helpers():
    """Beside the tests only test modules and fixtures (conftest.py)."""
    stray = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
             if p.parent.name != "helpers" and not p.name.startswith("test_")
             and p.name != "conftest.py"]
    assert not stray, f"helpers among the tests (move them to tests/helpers/): {stray}"
