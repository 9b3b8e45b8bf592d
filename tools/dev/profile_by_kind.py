#!/usr/bin/env python3
"""A per-op profile's time and floors summed by kind of op (1x1 convs, 3x3 convs, attention, ...).

    python3 tools/dev/profile_by_kind.py LOG [--batch 32]

LOG is what `yolo12-bench --profile-ops` prints (tools/gpu_check.sh and tools/dev/call_prebuilt.sh profile keep it as
profile_*.log). Its roofline section for the batch (`roofline fp16 bN: ...`, then one line per op: its median, its
floor, the floor's bound, the multiple, the gap and the op's label) is summed per kind of the label; each op is timed
alone, so the sums add up to the section's "sum of medians", not to the graph's time. Prints a Markdown table, the
kinds by time. docs/kernels-conv.md's table of n's and s's batch-32 time by kind came from this.
"""
import argparse
import re
import sys

OP = re.compile(r"^\s*op\s+\d+\s+([0-9.]+) ms\s+floor\s+([0-9.]+) ms \((?:bytes|flops)\)\s+[0-9.]+x\s+gap\s+-?[0-9.]+ ms\s+(.*)$")

# (kind, test on the label), the first that matches wins.
KINDS = [
    ("attention", lambda l: l.startswith("attention")),
    ("stem pair", lambda l: l.startswith("conv pair 3x3/2")),
    ("halo pairs", lambda l: l.startswith("conv pair")),
    ("Detect's class branches", lambda l: l.startswith("conv branch")),
    ("depthwise", lambda l: re.search(r" g(\d+) ", l) is not None and re.search(r" g1 ", l) is None),
    ("1x1 convs", lambda l: " 1x1/" in l),
    ("3x3/2 convs", lambda l: " 3x3/2 " in l),
    ("3x3/1 convs", lambda l: " 3x3/1 " in l),
    ("upsample", lambda l: l.startswith("upsample")),
]


def kind_of(label):
    for name, test in KINDS:
        if test(label):
            return name
    return "other"


def parse(lines, batch):
    """The (median ms, floor ms, label) of each op in LOG's roofline section for `batch`, and the section's header."""
    head = "roofline fp16 b%d:" % batch
    ops, header, inside = [], None, False
    for line in lines:
        if line.startswith("roofline "):
            inside = line.startswith(head)
            if inside:
                header = line.strip()
            continue
        if inside:
            m = OP.match(line)
            if m:
                ops.append((float(m.group(1)), float(m.group(2)), m.group(3).strip()))
            elif line.strip():
                inside = False
    return ops, header


def table(ops):
    sums = {}
    for t, floor, label in ops:
        k = sums.setdefault(kind_of(label), [0, 0.0, 0.0])
        k[0] += 1
        k[1] += t
        k[2] += floor
    rows = ["| kind | ops | time | floor | time / floor |", "|---|---|---|---|---|"]
    for name, (n, t, floor) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
        rows.append("| %s | %d | %.3f ms | %.3f ms | %.1fx |" % (name, n, t, floor, t / floor if floor else 0.0))
    n = sum(v[0] for v in sums.values())
    t = sum(v[1] for v in sums.values())
    floor = sum(v[2] for v in sums.values())
    rows.append("| all | %d | %.3f ms | %.3f ms | %.1fx |" % (n, t, floor, t / floor if floor else 0.0))
    return "\n".join(rows)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args(argv)
    with open(a.log) as f:
        ops, header = parse(f.read().splitlines(), a.batch)
    if not ops:
        print("no roofline section for batch %d in %s" % (a.batch, a.log), file=sys.stderr)
        return 1
    print(header)
    print(table(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
