"""A small C program built against userspace/ sources, for the tests that
drive one C file of the recorder directly (test_writer_c, test_routerlock_c)."""
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(tmp_path_factory, name, program, sources, libs=(), sanitize=False):
    """program (C text) linked with userspace/SOURCES into an executable
    NAME; with sanitize, ASan and UBSan where this machine has their
    runtime (the plain build otherwise still runs the checks); sanitize
    "thread": ThreadSanitizer, which must be there."""
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed (scripts/install-deps.sh installs it)"
    d = tmp_path_factory.mktemp(name)
    (d / "main.c").write_text(program)
    exe = d / name
    base = [gcc, "-std=gnu11", "-g", "-Wall", "-Werror", "-I", str(ROOT / "include"),
            "-I", str(ROOT / "userspace"), "-o", str(exe), str(d / "main.c"),
            *(str(ROOT / "userspace" / f) for f in sources), *libs]
    if sanitize == "thread":
        subprocess.run(base[:1] + ["-O1", "-fsanitize=thread"] + base[1:], check=True)
        return exe
    if sanitize and not subprocess.run(base[:1] + ["-fsanitize=address,undefined"] + base[1:],
                                       capture_output=True).returncode:
        return exe
    subprocess.run(base, check=True)
    return exe
