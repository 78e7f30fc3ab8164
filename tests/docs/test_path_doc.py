"""docs/path.md's table of fates is the one the join gives (FATES), and its
options are `hopscope path`'s."""
import re
from pathlib import Path

from hopscope.analysis.path import FATES

DOC = (Path(__file__).resolve().parents[2] / "docs" / "path.md").read_text()


def test_the_fates_table_is_the_joins():
    table = DOC.split("<!-- fates:", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", table, re.M)
    assert dict(rows) == FATES


def test_every_option_of_hopscope_path_is_documented():
    import argparse
    from hopscope.report import path
    p = argparse.ArgumentParser()
    path.add_arguments(p)
    options = {o for a in p._actions for o in a.option_strings if o.startswith("--")}
    documented = set(re.findall(r"`(--[a-z-]+)", DOC))
    assert options - {"--help", "--out"} <= documented, options - documented
