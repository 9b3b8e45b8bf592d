#!/usr/bin/env python3
"""What kernel tuning measured, per conv and in total, from the lines YOLO12_CONV_TUNE_LOG=1 writes.

    python3 tools/dev/tune_log_report.py LOG [--kernel halo_wgmma] [--top 30] [--keys conv] [--by-shape | --gaps]
    python3 tools/dev/tune_log_report.py LOG --agree LOG2 [--slack 0.03] [--top 30] [--keys conv]

Each line `tune <key>: <plan> <ms>; <plan> <ms>; ...` (conv_tune.cu) is one conv at one batch size; its first
plan is conv_select's. For every batch size the report gives the sum over convs of conv_select's time, of the
fastest candidate, of the fastest candidate other than --kernel's (the kernel being evaluated: the plans whose
name starts with it), and of the fastest of --kernel's own, and then the convs on which --kernel gains or loses
most against the best of the others, with both plans. Times are per launch, in ms. Reads nothing else; the
tuned profile logs of tools/gpu_check.sh perf (profile_*tuned*.log) hold these lines.

`--by-shape` lists, instead of single convs, each conv shape (the key without its views' leading dimensions and
alignments) with how many convs of it there are and the summed best of --kernel's plans against the summed best of the
others: the table a selection rule is fitted to (docs/kernels-conv.md, "The fifteenth session").

`--gaps` lists where conv_select's plan loses to the fastest candidate, per conv shape (largest summed loss first):
how many convs of the shape, the summed time of conv_select's plans and of the fastest ones, and the plans (the
most frequent fastest one); the table the selection rules are refitted to (docs/kernels-conv.md, "The eighteenth
session"). --kernel plays no part in it. The fused kernels' lines (`stem_pair ...`, `halo_pair ...`, `dw_branch ...`,
`chain ...`) are left out and counted: they name the fused way first whatever the untuned rule runs.

`--agree LOG2` compares two logs (two GPUs, or two builds) shape by shape, at each batch size, where both timed the
shape: for every plan timed on every conv of the shape in both logs, its summed time over the fastest such plan's,
in each log; the plan whose worse ratio of the two is smallest is the common choice. Listed first, the shapes where
the common choice is within --slack (default 3 %) of each log's fastest and faster than each log's logged rule (what
a rule change can take with both GPUs' measurements behind it), the largest summed gain first; then the shapes where
no plan is within the slack in both logs and the logs' fastest plans differ (what the GPUs disagree on). yolo12m and
yolo12l share most conv shapes, so an m log of one GPU and an l log of another compare too.

The conv chains' tuning (conv_chain.cu) writes lines of the same form, `tune chain f16 ...: chain fused <ms>; chain
split <ms>; chain links <ms>`: `--keys chain --kernel "chain fused"` reports the chains alone, the fused kernel
against the other ways; `--keys conv` the convs alone.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"^tune (?P<key>.*?): (?P<plans>.*)$")
BATCH = re.compile(r" b(\d+) ")


def parse(lines):
    """[(key, batch, [(plan, ms), ...])] for every tune line; other lines are skipped."""
    out = []
    for line in lines:
        m = LINE.match(line.strip())
        if not m:
            continue
        plans = []
        for entry in m.group("plans").split("; "):
            name, _, ms = entry.rpartition(" ")
            try:
                plans.append((name, float(ms)))
            except ValueError:
                plans = []
                break
        if not plans:
            continue
        b = BATCH.search(" " + m.group("key") + " ")
        out.append((m.group("key"), int(b.group(1)) if b else 0, plans))
    return out


def best(plans, keep):
    chosen = [p for p in plans if keep(p[0])]
    return min(chosen, key=lambda p: p[1]) if chosen else None


def report(rows, kernel, top):
    text = []
    by_batch = collections.defaultdict(list)
    for row in rows:
        by_batch[row[1]].append(row)
    mine = lambda name: name.startswith(kernel)
    for batch in sorted(by_batch):
        group = by_batch[batch]
        sums = collections.Counter()
        deltas = []
        for key, _, plans in group:
            sums["select"] += plans[0][1]
            sums["fastest"] += best(plans, lambda n: True)[1]
            other = best(plans, lambda n: not mine(n))
            own = best(plans, mine)
            sums["others"] += other[1] if other else 0.0
            if own:
                sums["convs"] += 1
                sums["own_or_others"] += min(own[1], other[1]) if other else own[1]
                if other:
                    deltas.append((own[1] - other[1], key, own, other))
        text.append(f"batch {batch}: {len(group)} convs; sum of conv_select's plans {sums['select']:.3f} ms, of the "
                    f"fastest {sums['fastest']:.3f} ms, of the fastest without {kernel} {sums['others']:.3f} ms; "
                    f"{kernel} ran on {sums['convs']} convs")
        deltas.sort()
        for delta, key, own, other in deltas[:top]:
            text.append(f"  {delta:+.4f} ms  {key}: {own[0]} {own[1]:.4f} vs {other[0]} {other[1]:.4f}")
        if len(deltas) > top:
            text.append(f"  ... {len(deltas) - top} more")
    return "\n".join(text)


VIEWS = re.compile(r" ld\S+( al\S+)?")


def shape_of(key):
    """The conv's shape: its key without the views' leading dimensions and alignments."""
    return VIEWS.sub("", key)


def report_by_shape(rows, kernel):
    """Per batch size, per shape with a plan of --kernel and one of another kernel: count, sums, the best plans."""
    mine = lambda name: name.startswith(kernel)
    groups = collections.OrderedDict()
    for key, batch, plans in rows:
        own, other = best(plans, mine), best(plans, lambda n: not mine(n))
        if own and other:
            groups.setdefault((batch, shape_of(key)), []).append((own, other))
    text = []
    for batch in sorted({b for b, _ in groups}):
        text.append(f"batch {batch}: {kernel} against the best other plan, per shape (n convs, summed ms)")
        lines = []
        for (b, shape), pairs in groups.items():
            if b != batch:
                continue
            own_sum, other_sum = sum(o[1] for o, _ in pairs), sum(t[1] for _, t in pairs)
            lines.append((own_sum - other_sum, f"  {own_sum - other_sum:+.4f} ms  {shape} (n={len(pairs)}): {kernel} "
                          f"{own_sum:.4f} ({pairs[0][0][0]}) vs {other_sum:.4f} ({pairs[0][1][0]})"))
        text += [line for _, line in sorted(lines)]
    return "\n".join(text)


def rule_unknown(key, plans):
    """A fused kernel's line (stem_pair, halo_pair, dw_branch, chain): its first plan is always the fused way, which is
    not necessarily what runs untuned (dw_branch_preferred, for one, sends yolo12s's P3 class branch to its links)."""
    return not key.startswith("conv ") and plans[0][0].endswith(" fused")


def report_gaps(rows, top):
    """Per batch size, per shape: conv_select's plans against the fastest, the largest summed loss first. The fused
    kernels' lines are left out (rule_unknown) and counted."""
    groups = collections.OrderedDict()
    left_out = sum(1 for key, _, plans in rows if rule_unknown(key, plans))
    for key, batch, plans in rows:
        if not rule_unknown(key, plans):
            groups.setdefault((batch, shape_of(key)), []).append((plans[0], best(plans, lambda n: True)))
    text = []
    if left_out:
        text.append(f"({left_out} lines of the fused kernels left out: their first plan is the fused way, not "
                    f"necessarily the untuned rule's)")
    for batch in sorted({b for b, _ in groups}):
        lines = []
        total_select = total_best = 0.0
        for (b, shape), pairs in groups.items():
            if b != batch:
                continue
            select_sum, best_sum = sum(s[1] for s, _ in pairs), sum(f[1] for _, f in pairs)
            total_select += select_sum
            total_best += best_sum
            names = collections.Counter(f[0] for _, f in pairs)
            lines.append((best_sum - select_sum, f"  {best_sum - select_sum:+.4f} ms  {shape} (n={len(pairs)}): "
                          f"{select_sum:.4f} ({pairs[0][0][0]}) -> {best_sum:.4f} ({names.most_common(1)[0][0]})"))
        lines.sort()
        text.append(f"batch {batch}: conv_select {total_select:.3f} ms, the fastest {total_best:.3f} ms "
                    f"({total_best - total_select:+.3f}); per shape, largest loss first")
        text += [line for _, line in lines[:top]]
        if len(lines) > top:
            text.append(f"  ... {len(lines) - top} more shapes")
    return "\n".join(text)


def shape_totals(rows):
    """{(batch, shape): (n convs, logged rule's summed ms, its plan name, {plan: summed ms})}, the plans being those
    timed on every conv of the shape."""
    groups = collections.OrderedDict()
    for key, batch, plans in rows:
        groups.setdefault((batch, shape_of(key)), []).append(plans)
    out = collections.OrderedDict()
    for k, convs in groups.items():
        names = set.intersection(*[{name for name, _ in plans} for plans in convs])
        totals = {name: sum(dict(plans)[name] for plans in convs) for name in names}
        out[k] = (len(convs), sum(plans[0][1] for plans in convs), convs[0][0][0], totals)
    return out


def report_agree(rows_a, rows_b, top, slack):
    """Per batch size, the shapes both logs timed: the changes both support, then the shapes they disagree on."""
    ta, tb = shape_totals(rows_a), shape_totals(rows_b)
    text = []
    both = [k for k in ta if k in tb]
    for batch in sorted({b for b, _ in both}):
        agree, differ = [], []
        shapes = [k for k in both if k[0] == batch]
        for k in shapes:
            (na, rule_a, name_a, pa), (nb, rule_b, name_b, pb) = ta[k], tb[k]
            common = [n for n in pa if n in pb]
            if not common:
                continue
            best_a, best_b = min(pa.values()), min(pb.values())
            ratio = {n: max(pa[n] / best_a, pb[n] / best_b) for n in common}
            pick = min(common, key=lambda n: (ratio[n], pa[n] + pb[n]))
            gain_a, gain_b = rule_a - pa[pick], rule_b - pb[pick]
            head = f"{k[1]} (n={na} / {nb})"
            if ratio[pick] <= 1 + slack and gain_a > 0 and gain_b > 0:
                agree.append((-(gain_a + gain_b),
                              f"  {-gain_a:+.4f} / {-gain_b:+.4f} ms  {head}: {name_a} / {name_b} -> {pick} "
                              f"({pa[pick] / best_a:.2f}x / {pb[pick] / best_b:.2f}x of each log's fastest)"))
            elif ratio[pick] > 1 + slack:
                fa, fb = min(pa, key=pa.get), min(pb, key=pb.get)
                if fa != fb:  # each log's time for the other's fastest plan, where it timed that plan
                    xa, xb = pa.get(fb), pb.get(fa)
                    shown = lambda t: "untimed" if t is None else f"{t:.4f}"
                    differ.append((-(xa - best_a if xa else 0) - (xb - best_b if xb else 0),
                                   f"  {head}: fastest {fa} {best_a:.4f} / {fb} {best_b:.4f} ms; each other's "
                                   f"{shown(xa)} / {shown(xb)}; rule {name_a} {rule_a:.4f} / {name_b} {rule_b:.4f}"))
        text.append(f"batch {batch}: {len(shapes)} shapes in both logs; {len(agree)} where one plan within "
                    f"{slack * 100:g} % of both logs' fastest beats both logged rules (summed ms gained in each log):")
        text += [line for _, line in sorted(agree)[:top]]
        text.append(f"batch {batch}: {len(differ)} shapes where no plan is within {slack * 100:g} % in both and the "
                    f"fastest differ:")
        text += [line for _, line in sorted(differ)[:top]]
    return "\n".join(text)


def read_rows(path, keys):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [r for r in parse(f) if r[0].startswith(keys)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--kernel", default="halo_wgmma", help="the plans being evaluated: names starting with this")
    ap.add_argument("--top", type=int, default=30, help="convs listed per batch size")
    ap.add_argument("--keys", default="", help="only the lines whose key starts with this (conv, chain)")
    ap.add_argument("--by-shape", action="store_true", help="per conv shape, not per conv")
    ap.add_argument("--gaps", action="store_true", help="where conv_select's plan loses to the fastest, per shape")
    ap.add_argument("--agree", metavar="LOG2", help="compare with a second log, shape by shape")
    ap.add_argument("--slack", type=float, default=0.03, help="--agree: how far from each log's fastest counts as even")
    args = ap.parse_args(argv)
    logs = [args.log] + ([args.agree] if args.agree else [])
    rows = [read_rows(path, args.keys) for path in logs]
    for path, r in zip(logs, rows):
        if not r:
            print(f"{path}: no 'tune ...' lines (was YOLO12_CONV_TUNE_LOG=1 set?)", file=sys.stderr)
            return 1
    if args.agree:
        print(report_agree(rows[0], rows[1], args.top, args.slack))
        return 0
    rows = rows[0]
    if args.gaps:
        print(report_gaps(rows, args.top))
    else:
        print(report_by_shape(rows, args.kernel) if args.by_shape else report(rows, args.kernel, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
