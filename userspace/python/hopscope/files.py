"""Writing files whole or not at all, and reading ones that may not exist yet."""
import contextlib
import json
import os


@contextlib.contextmanager
def atomic(path):
    """Yields a temporary name beside path; once the block has written it, it
    is synced and renamed to path, so a kill -9 or a crash leaves the old file
    or the new one, never half of one. On an error the temporary is removed."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path, obj):
    with atomic(path) as tmp, open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def read_text(path):
    """A file's text, or "" when it is not there (yet)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
