"""How much of the machine others used during a measurement: the "foreign CPU %" the bench/tf scripts print beside
each figure (the whole machine's busy time from /proc/stat, minus this process's and its children's CPU time)."""
import os


def busy_share():
    """(busy, total) clock ticks of the whole machine so far (/proc/stat's first line)."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], sum(v)


def own_cpu():
    """CPU seconds of this process and its waited-for children so far."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def foreign_pct(b0, b1, c0, c1):
    """Percent of the machine's time between two busy_share/own_cpu readings that other processes were busy."""
    total = (b1[1] - b0[1]) / os.sysconf('SC_CLK_TCK')
    busy = (b1[0] - b0[0]) / os.sysconf('SC_CLK_TCK')
    return round(max(0.0, busy - (c1 - c0)) / total * 100) if total > 0 else 0
