"""A live run: the snapshot `hopscope record --snapshot FILE` rewrites every
second (snapshot.py), and what `hopscope top` and `hopscope serve` make of it."""
