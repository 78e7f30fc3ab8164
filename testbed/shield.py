#!/usr/bin/env python3
"""Keep CPUs for the testbed: move every other task off them, and back.

  shield.py on CPUS STATE [--softirq-first CPU]
                            move tasks allowed on CPUS (a list: 1 or 0,1) and
                            elsewhere off CPUS; remember each one's affinity
                            in STATE (appends). --softirq-first: CPU's
                            ksoftirqd to SCHED_FIFO 1, ahead of the tasks
                            that share that CPU (remembered too)
  shield.py off STATE       give them back the affinity they had, unless it
                            was changed meanwhile; remove STATE. A thread or
                            child process started while the shield was up by
                            a task it moved inherited that task's narrowed
                            CPUs: it gets the task's CPUs back too, if it
                            still has exactly those (one pinned there on
                            purpose in that window cannot be told apart)

testbed.sh up calls it with the CPU that forwards (in --mode inline the
senders' CPU too). Why: on the 6.18 VM this was built on, BPF tracepoint
programs were skipped for packets that CPU transmitted while another
process's task was the interrupted one (README, Known limits); a router
machine runs nothing else on its forwarding CPU either.

With --shield senders (runs that record nothing: hopscope throughput) it
keeps the senders' CPU instead (and the router's when a CPU is left for the
rest): a D-ITG sender busy-polls its gaps, and beside two CPU-bound tasks on
its CPU it sent 30 % of the rate asked. With two CPUs everything else then
shares the router's, and --softirq-first keeps the router's softirq work
(forwarding, the shaper's dequeue) ahead of it: deferred to ksoftirqd at
normal priority beside two CPU-bound tasks, a TBF at 2000 pps sent 160
packets fewer in 2 s than its rate (1 run in 25), none with ksoftirqd at
SCHED_FIFO 1 (0 in 25). Tasks pinned to CPU
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


def parents(tid):
    """(process id, parent process id) of a task, from /proc/TID/status."""
    ids = {}
    with open(f"/proc/{tid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Tgid", "PPid"):
                ids[key] = int(value)
    return ids["Tgid"], ids["PPid"]


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


def narrow_workqueues(cpus, saved):
    """Returns the line to remember, or None if the mask was left alone."""
    try:
        with open(WQ_MASK) as f:
            old = parse_hex_mask(f.read())
        new = old - cpus
        if new == old or not new or any(line.startswith("wq ") for line in saved):
            return None
        with open(WQ_MASK, "w") as f:
            f.write(hex_mask(new))
    except OSError:
        return None
    return f"wq {cpulist(old)} {cpulist(new)}"


def softirq_first(cpu, saved):
    """CPU's ksoftirqd to SCHED_FIFO 1; the line to remember, or None if it
    was not at SCHED_OTHER (already raised, by us or someone)."""
    if any(line.startswith("fifo ") for line in saved):
        return None
    for tid in tasks():
        try:
            with open(f"/proc/{tid}/comm") as f:
                if f.read().strip() != f"ksoftirqd/{cpu}":
                    continue
            if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                return None
            stamp = start_time(tid)
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(1))
        except (ProcessLookupError, FileNotFoundError):
            continue
        return f"fifo {tid} {stamp}"
    return None


def shield_on(cpus, state, softirq_cpu=None):
    saved = []
    if os.path.exists(state):
        with open(state) as f:
            saved = f.read().splitlines()
    known = {line.split()[0] for line in saved}
    moved = pinned = vanished = 0
    # this run's own start: tasks started later are the shield's era (shield_off)
    fresh = [] if "since" in known else [f"since {start_time(os.getpid())}"]
    # a second pass catches threads started while the first one ran
    for _ in range(2):
        for tid in tasks():
            if str(tid) in known:
                continue
            try:
                allowed = os.sched_getaffinity(tid)
                if not allowed & cpus or not allowed - cpus:
                    continue    # not on them, or pinned to them on purpose
                stamp = start_time(tid)
                os.sched_setaffinity(tid, allowed - cpus)
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
            fresh.append(f"{tid} {stamp} {cpulist(allowed)} {cpulist(allowed - cpus)}")
            moved += 1
    wq = narrow_workqueues(cpus, saved)
    if wq:
        fresh.append(wq)
    fifo = softirq_first(softirq_cpu, saved) if softirq_cpu is not None else None
    if fifo:
        fresh.append(fifo)
    with open(state, "a") as f:
        f.writelines(line + "\n" for line in fresh)
    print(f"moved {moved} tasks off CPU {cpulist(cpus)}"
          f"{'' if not wq else ' and the unbound workqueues'}; "
          f"{pinned} that cannot move (per-CPU kernel threads) stay"
          + (f"; ksoftirqd/{softirq_cpu} at SCHED_FIFO 1" if fifo else ""))


def shield_off(state):
    try:
        with open(state) as f:
            saved = f.read().splitlines()
    except FileNotFoundError:
        return
    restored = changed = 0
    moved = {}  # process id -> (CPUs before, during) of the processes moved
    for line in saved:
        fields = line.split()
        if fields[0] == "since":
            continue
        if fields[0] == "fifo":
            tid, stamp = int(fields[1]), fields[2]
            try:
                if start_time(tid) != stamp:
                    continue
                if (os.sched_getscheduler(tid) == os.SCHED_FIFO
                        and os.sched_getparam(tid).sched_priority == 1):
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                else:
                    changed += 1
            except (ProcessLookupError, FileNotFoundError):
                pass
            continue
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
            if parents(tid)[0] == tid:
                moved[tid] = (parse_cpulist(before), parse_cpulist(during))
        except (ProcessLookupError, FileNotFoundError):
            continue    # gone
        except OSError:
            changed += 1    # e.g. a CPU it had is offline now
    since = next((int(line.split()[1]) for line in saved if line.startswith("since ")), None)
    heirs = follow_heirs(moved, since) if since is not None else 0
    os.unlink(state)
    print(f"gave {restored} tasks their CPUs back"
          f"{f' and {heirs} started by them meanwhile' if heirs else ''}"
          f"{f'; {changed} changed meanwhile, left as they are' if changed else ''}")


def follow_heirs(moved, since):
    """Tasks started after since (ticks) that inherited a moved process's
    narrowed CPUs, as its threads or its children, given its CPUs back; how
    many. Left alone: moved tasks' heirs with any other CPUs."""
    n, done = 0, set()
    for _ in range(3):  # heirs of heirs: a child's own children, started later
        before = n
        for tid in tasks():
            try:
                if tid in done or int(start_time(tid)) <= since:
                    continue
                tgid, ppid = parents(tid)
                owner = moved.get(tgid if tgid != tid else ppid)
                if owner and os.sched_getaffinity(tid) == owner[1]:
                    os.sched_setaffinity(tid, owner[0])
                    done.add(tid)
                    n += 1
                    if tgid == tid:
                        moved[tid] = owner
            except OSError:
                continue    # gone, or not ours to move
        if n == before:
            break
    return n


def main(argv):
    if (len(argv) in (3, 5) and argv[0] == "on" and argv[1].replace(",", "").isdigit()
            and (len(argv) == 3 or (argv[3] == "--softirq-first" and argv[4].isdigit()))):
        shield_on(parse_cpulist(argv[1]), argv[2], int(argv[4]) if len(argv) == 5 else None)
    elif len(argv) == 2 and argv[0] == "off":
        shield_off(argv[1])
    else:
        sys.exit("usage: shield.py on CPUS STATE [--softirq-first CPU] | off STATE")


if __name__ == "__main__":
    main(sys.argv[1:])
