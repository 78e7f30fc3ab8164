#!/usr/bin/env python3
"""Keep CPUs for the testbed by placing its own processes, and back.

  shield.py on CPUS PID STATE
                            PID's threads (the process that brought the
                            testbed up, or asked for the shield again) off
                            CPUS (a list: 1 or 0,1); each one's CPUs are
                            remembered in STATE (appends). What PID starts
                            from then on inherits them: a test run's
                            recorder, generators and analysis, a bench's
                            windows
  shield.py off STATE       give those threads back the CPUs they had, unless
                            changed meanwhile; remove STATE

testbed.sh up --shield calls it with the CPU that forwards (in --mode inline
the senders' too) and its own caller. Nothing else on the machine is moved:
a task the testbed did not start stays where it is, and shares the router's
CPU if it runs there, as on a router that runs other work. Where a kernel
skips a probe in some task's context, the packets it leaves without a stage
are flagged and counted (docs/record-format.md, t4_unseen), not hidden by
moving that task away. The roles' processes are placed by their starters
(`testbed.sh cpu ROLE` for taskset -c), which may widen what they inherited.
"""
import os
import sys


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


def shield_on(cpus, pid, state):
    """PID's threads off cpus; the lines STATE keeps to give them back."""
    moved, lines = 0, []
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            allowed = os.sched_getaffinity(tid)
            if not allowed & cpus or not allowed - cpus:
                continue    # not on them, or pinned to them on purpose
            stamp = start_time(tid)
            os.sched_setaffinity(tid, allowed - cpus)
        except (ProcessLookupError, FileNotFoundError):
            continue        # a thread that ended meanwhile
        lines.append(f"{tid} {stamp} {cpulist(allowed)} {cpulist(allowed - cpus)}\n")
        moved += 1
    with open(state, "a") as f:
        f.writelines(lines)
    print(f"process {pid}: {moved} of its threads off CPU {cpulist(cpus)}; "
          "no other task moved")


def shield_off(state):
    try:
        with open(state) as f:
            saved = f.read().splitlines()
    except FileNotFoundError:
        return
    restored = changed = 0
    for line in saved:
        tid, stamp, before, during = line.split()
        try:
            if start_time(tid) != stamp:
                continue    # gone; its id is another task's now
            if os.sched_getaffinity(int(tid)) != parse_cpulist(during):
                changed += 1
                continue
            os.sched_setaffinity(int(tid), parse_cpulist(before))
            restored += 1
        except (ProcessLookupError, FileNotFoundError):
            continue        # gone
        except OSError:
            changed += 1    # e.g. a CPU it had is offline now
    os.unlink(state)
    print(f"gave {restored} threads their CPUs back"
          f"{f'; {changed} changed meanwhile, left as they are' if changed else ''}")


def main(argv):
    if (len(argv) == 4 and argv[0] == "on" and argv[1].replace(",", "").isdigit()
            and argv[2].isdigit()):
        shield_on(parse_cpulist(argv[1]), int(argv[2]), argv[3])
    elif len(argv) == 2 and argv[0] == "off":
        shield_off(argv[1])
    else:
        sys.exit("usage: shield.py on CPUS PID STATE | off STATE")


if __name__ == "__main__":
    main(sys.argv[1:])
