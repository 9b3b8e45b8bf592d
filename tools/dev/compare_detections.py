#!/usr/bin/env python3
"""Compare two yolo12-infer JSON Lines outputs (--json) image by image.

    compare_detections.py [--label TEXT] [--box-tol PX] [--score-tol X] [--min-score S]
                          [--margin M] REF.jsonl OTHER.jsonl

Records are paired by (source, frame). Within a record, detections are paired one to one: same class,
closest boxes first (largest coordinate difference). Two modes:

- strict (no --min-score): both sides must have the same number of detections, every detection must
  pair with one of the same class, boxes within --box-tol pixels (default 0.01) and scores within
  --score-tol (default 1e-4). The JSON rounds boxes to 0.01 px and scores to 1e-4, so the defaults
  mean "the same numbers as printed".
- thresholded (--min-score S): only detections scoring above S count; those must pair with a
  detection of the same class on the other side with boxes within --box-tol (set it, e.g. 2). A
  detection above S whose partner fell just under S, or vanished under the CLI's --conf, is tolerated
  when its score is within --margin (default 0.02) of S: fp16 moves scores by about 1e-3.

Prints one line: "LABEL: OK (...)" or "LABEL: MISMATCH (...)", with the first problems found.
Exit status: 0 match, 1 mismatch, 2 unreadable input. Standard library only.
"""
import argparse
import json
import sys

SLACK = 1e-6  # rounding of the printed values


def read(path):
    records = {}
    order = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON ({e})") from None
            key = (r.get("source"), r.get("frame"))
            if key in records:
                raise ValueError(f"{path}:{n}: {key[0]} appears twice")
            records[key] = r
            order.append(key)
    return records, order


def box_diff(a, b):
    return max(abs(x - y) for x, y in zip(a["box"], b["box"]))


def pair(ref, other):
    """One-to-one pairs of same-class detections, closest boxes first: (pairs, unpaired_ref, unpaired_other)."""
    cands = []
    for i, a in enumerate(ref):
        for j, b in enumerate(other):
            if a["class_id"] == b["class_id"]:
                cands.append((box_diff(a, b), i, j))
    cands.sort()
    used_i, used_j, pairs = set(), set(), []
    for d, i, j in cands:
        if i in used_i or j in used_j:
            continue
        used_i.add(i)
        used_j.add(j)
        pairs.append((i, j, d))
    return (pairs, [i for i in range(len(ref)) if i not in used_i],
            [j for j in range(len(other)) if j not in used_j])


def describe(d):
    return f"{d['class_name']} {d['score']:.4f} [{', '.join(f'{v:.2f}' for v in d['box'])}]"


def compare(ref_path, other_path, args):
    ref, ref_order = read(ref_path)
    other, _ = read(other_path)
    problems = []
    stats = {"images": 0, "detections": 0, "box": 0.0, "score": 0.0, "borderline": 0}
    if not ref:
        problems.append(f"{ref_path} holds no records")
    for key in ref_order:
        name = key[0] if key[1] is None else f"{key[0]}#{key[1]}"
        a = ref[key]
        b = other.get(key)
        if b is None:
            problems.append(f"{name}: missing in {other_path}")
            continue
        if "error" in a or "error" in b:
            problems.append(f"{name}: error: {a.get('error') or b.get('error')}")
            continue
        stats["images"] += 1
        da, db = a["detections"], b["detections"]
        pairs, only_a, only_b = pair(da, db)
        if args.min_score is None:
            if len(da) != len(db):
                problems.append(f"{name}: {len(da)} vs {len(db)} detections")
            for i in only_a:
                problems.append(f"{name}: only in ref: {describe(da[i])}")
            for j in only_b:
                problems.append(f"{name}: only in other: {describe(db[j])}")
            for i, j, d in pairs:
                sd = abs(da[i]["score"] - db[j]["score"])
                stats["detections"] += 1
                stats["box"] = max(stats["box"], d)
                stats["score"] = max(stats["score"], sd)
                if d > args.box_tol + SLACK or sd > args.score_tol + SLACK:
                    problems.append(f"{name}: {describe(da[i])} vs {describe(db[j])}")
        else:
            s = args.min_score
            for i, j, d in pairs:
                ha, hb = da[i]["score"] > s, db[j]["score"] > s
                if not (ha or hb):
                    continue
                if d > args.box_tol + SLACK:
                    # Boxes too far apart to be the same object: treat both as unpaired.
                    only_a.append(i)
                    only_b.append(j)
                    continue
                if ha != hb:  # one side just above the threshold, the other just under
                    if max(da[i]["score"], db[j]["score"]) <= s + args.margin:
                        stats["borderline"] += 1
                        continue
                    problems.append(f"{name}: score across {s}: {describe(da[i])} vs {describe(db[j])}")
                    continue
                stats["detections"] += 1
                stats["box"] = max(stats["box"], d)
                stats["score"] = max(stats["score"], abs(da[i]["score"] - db[j]["score"]))
            for side, dets, idx in (("ref", da, only_a), ("other", db, only_b)):
                for k in idx:
                    if dets[k]["score"] <= s:
                        continue
                    if dets[k]["score"] <= s + args.margin:
                        stats["borderline"] += 1
                        continue
                    problems.append(f"{name}: only in {side}: {describe(dets[k])}")
    for key in other:
        if key not in ref:
            problems.append(f"{key[0]}: only in {other_path}")
    return problems, stats


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ref")
    p.add_argument("other")
    p.add_argument("--label", default=None, help="what the verdict line starts with")
    p.add_argument("--box-tol", type=float, default=0.01, help="pixels, per box coordinate")
    p.add_argument("--score-tol", type=float, default=1e-4, help="strict mode only")
    p.add_argument("--min-score", type=float, default=None, help="thresholded mode: compare detections above this")
    p.add_argument("--margin", type=float, default=0.02, help="thresholded mode: tolerance around --min-score")
    args = p.parse_args()
    label = args.label or f"{args.other} vs {args.ref}"
    try:
        problems, st = compare(args.ref, args.other, args)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{label}: UNREADABLE ({e})")
        return 2
    what = "all detections" if args.min_score is None else f"score > {args.min_score}"
    summary = (f"{st['images']} images, {st['detections']} paired detections ({what}), "
               f"max box diff {st['box']:.2f} px, max score diff {st['score']:.4f}")
    if st["borderline"]:
        summary += f", {st['borderline']} near the threshold ignored"
    if problems:
        shown = "; ".join(problems[:4]) + (f"; ... {len(problems) - 4} more" if len(problems) > 4 else "")
        print(f"{label}: MISMATCH ({summary}): {shown}")
        return 1
    print(f"{label}: OK ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
