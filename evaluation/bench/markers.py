"""Generated blocks of a Markdown page: the text between two marker lines,
which the script that makes it rewrites (and its --check compares)."""


class MarkerError(Exception):
    """A page without its two markers, each once and in order."""


def replace(text, block, begin, end):
    """text with block between the markers begin and end."""
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise MarkerError(f"no markers {begin!r} ... {end!r}, once each and in that order")
    start, stop = text.index(begin), text.index(end)
    return text[:start + len(begin)] + "\n" + block + "\n" + text[stop:]


def rewrite(page, block, begin, end, check=False):
    """Put block between the markers of the file page. check: change nothing;
    whether the page already holds it. Raises OSError and MarkerError."""
    with open(page) as f:
        text = f.read()
    new = replace(text, block, begin, end)
    if check:
        return new == text
    if new != text:
        with open(page, "w") as f:
            f.write(new)
    return True
