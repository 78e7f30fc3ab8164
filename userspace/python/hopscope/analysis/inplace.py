"""Array steps done in the array's own memory: the usual numpy forms
(a[mask], np.diff) give a second array as large as the first, and fresh
memory is slow on a VM (evaluation/measurements.md). Each takes an array that
owns its data with no view of it left, and returns it shrunk in place."""
import numpy as np

CHUNK = 1 << 20  # elements moved at a time: a temporary of a few MB at most


def compact(a, keep):
    """a[keep], in a's memory."""
    end = 0
    for i in range(0, len(a), CHUNK):
        part = a[i:i + CHUNK][keep[i:i + CHUNK]]  # only ever moves down: i >= end
        a[end:end + len(part)] = part
        end += len(part)
    a.resize(end, refcheck=False)  # realloc to a smaller size: no copy
    return a


def diff(a):
    """np.diff(a), in a's memory."""
    n = max(len(a) - 1, 0)
    for i in range(0, n, CHUNK):
        j = min(i + CHUNK, n)
        np.subtract(a[i + 1:j + 1], a[i:j], out=a[i:j])
    a.resize(n, refcheck=False)
    return a
