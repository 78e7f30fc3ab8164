"""What the tests of a generated evaluation page share (a script that
writes a block between markers from a committed JSON, with --check)."""
import json
import re
import subprocess
import sys


def run(script, *args):
    return subprocess.run([sys.executable, script, *map(str, args)], capture_output=True,
                          text=True)


def planted_round_trip(script, data, readme, tmp_path, expect):
    """The page made from a changed JSON (data): --check says it differs,
    a run rewrites it to hold expect, --check then passes; a page without
    its markers is refused with a message, not a traceback."""
    js, page = tmp_path / "data.json", tmp_path / "README.md"
    js.write_text(json.dumps(data))
    page.write_text(readme.read_text())
    r = run(script, "--check", "--json", js, "--readme", page)
    assert r.returncode == 1 and "are not those of" in r.stderr, r.stderr
    assert run(script, "--json", js, "--readme", page).returncode == 0
    assert expect in page.read_text()
    assert run(script, "--check", "--json", js, "--readme", page).returncode == 0
    page.write_text("no markers")
    r = run(script, "--json", js, "--readme", page)
    assert r.returncode == 1 and "no markers" in r.stderr and "Traceback" not in r.stderr


def cited(folder, exts):
    """The files folder/README.md links to with these extensions, each
    checked to exist."""
    text = (folder / "README.md").read_text()
    found = set(re.findall(rf"\]\(([^)#]+\.(?:{'|'.join(exts)}))\)", text))
    for path in found:
        assert (folder / path).resolve().exists(), path
    return found
