#!/usr/bin/env python3
"""Keep one CPU for the router: move every other task off it, and back.

  shield.py on CPU STATE    move tasks allowed on CPU and elsewhere off CPU;
                            remember each one's affinity in STATE (appends)
  shield.py off STATE       give them back the affinity they had, unless it
                            was changed meanwhile; remove STATE

testbed.sh up calls it with the CPU that forwards (in --mode inline the
senders' CPU too). Why: on the 6.18 VM this was built on, BPF tracepoint
programs were skipped for packets that CPU transmitted while another
process's task was the interrupted one (README, Known limits); a router
machine runs nothing else on its forwarding CPU either. Tasks pinned to CPU
alone (the NAPI threads of --mode napi, a receiver started with taskset) stay;
per-CPU kernel threads cannot move and are counted. The unbound-workqueue
mask is narrowed too, so the kernel's own unbound workers follow.
"""
import errno
import os
import sys

WQ_MASK = "/sys/devices/virtual/workqueue/cpumask"


def tasks():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            yield int(tid)


def start_time(tid):
    """The task's start time in ticks: tells a task from a later one with its id."""
    with open(f"/proc/{tid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def cpulist(cpus):
    return ",".join(str(c) for c in sorted(cpus))


def parse_cpulist(text):
    cpus = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def hex_mask(cpus):
    value = sum(1 << c for c in cpus)
    words = []
    while True:
        words.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
        if not value:
            break
    return ",".join(reversed(words))


def parse_hex_mask(text):
    value = int(text.strip().replace(",", ""), 16)
    return {c for c in range(value.bit_length()) if value >> c & 1}


def narrow_workqueues(cpu, saved):
    """Returns the line to remember, or None if the mask was left alone."""
    try:
        with open(WQ_MASK) as f:
            old = parse_hex_mask(f.read())
        if cpu not in old or len(old) < 2 or any(line.startswith("wq ") for line in saved):
            return None
        with open(WQ_MASK, "w") as f:
            f.write(hex_mask(old - {cpu}))
    except OSError:
        return None
    return f"wq {cpulist(old)} {cpulist(old - {cpu})}"


def shield_on(cpu, state):
    saved = []
    if os.path.exists(state):
        with open(state) as f:
            saved = f.read().splitlines()
    known = {line.split()[0] for line in saved}
    moved = pinned = vanished = 0
    fresh = []
    # a second pass catches threads started while the first one ran
    for _ in range(2):
        for tid in tasks():
            if str(tid) in known:
                continue
            try:
                allowed = os.sched_getaffinity(tid)
                if cpu not in allowed or len(allowed) < 2:
                    continue
                stamp = start_time(tid)
                os.sched_setaffinity(tid, allowed - {cpu})
            except ProcessLookupError:
                vanished += 1
                continue
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.EPERM):
                    raise
                pinned += 1  # a per-CPU kernel thread (PF_NO_SETAFFINITY), or not ours to move
                known.add(str(tid))
                continue
            known.add(str(tid))
            fresh.append(f"{tid} {stamp} {cpulist(allowed)} {cpulist(allowed - {cpu})}")
            moved += 1
    wq = narrow_workqueues(cpu, saved)
    if wq:
        fresh.append(wq)
    with open(state, "a") as f:
        f.writelines(line + "\n" for line in fresh)
    print(f"moved {moved} tasks off CPU {cpu}"
          f"{'' if not wq else ' and the unbound workqueues'}; "
          f"{pinned} that cannot move (per-CPU kernel threads) stay")


def shield_off(state):
    try:
        with open(state) as f:
            saved = f.read().splitlines()
    except FileNotFoundError:
        return
    restored = changed = 0
    for line in saved:
        fields = line.split()
        if fields[0] == "wq":
            try:
                with open(WQ_MASK) as f:
                    if parse_hex_mask(f.read()) == parse_cpulist(fields[2]):
                        with open(WQ_MASK, "w") as w:
                            w.write(hex_mask(parse_cpulist(fields[1])))
                    else:
                        changed += 1
            except OSError:
                changed += 1
            continue
        tid, stamp, before, during = int(fields[0]), fields[1], fields[2], fields[3]
        try:
            if start_time(tid) != stamp:
                continue
            if os.sched_getaffinity(tid) != parse_cpulist(during):
                changed += 1
                continue
            os.sched_setaffinity(tid, parse_cpulist(before))
            restored += 1
        except (ProcessLookupError, FileNotFoundError):
            continue    # gone
        except OSError:
            changed += 1    # e.g. a CPU it had is offline now
    os.unlink(state)
    print(f"gave {restored} tasks their CPUs back"
          f"{f'; {changed} changed meanwhile, left as they are' if changed else ''}")


def main(argv):
    if len(argv) == 3 and argv[0] == "on" and argv[1].isdigit():
        shield_on(int(argv[1]), argv[2])
    elif len(argv) == 2 and argv[0] == "off":
        shield_off(argv[1])
    else:
        sys.exit("usage: shield.py on CPU STATE | off STATE")


if __name__ == "__main__":
    main(sys.argv[1:])
