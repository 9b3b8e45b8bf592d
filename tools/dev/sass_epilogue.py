#!/usr/bin/env python3
"""How a kernel's SiLUs are laid out in its machine code: a static reading that needs no GPU.

    python3 tools/dev/sass_epilogue.py FILE.sass [FILE.sass ...] [--kernel REGEX]
    tools/dev/sass_epilogue.py --build OUTDIR [--kernel REGEX]     (compiles the GEMM kernel files first)

FILE.sass is `cuobjdump -sass` of a cubin (nvcc -cubin -arch=sm_90a). cuobjdump comes with the CUDA toolkit; where
the toolkit has none (a minimal install), the pip package nvidia-cuda-cuobjdump holds it (bin/cuobjdump); set
CUOBJDUMP to its path. With --build the script compiles src/backends/cuda/{conv_implicit_gemm, conv_wgmma,
conv_halo_wgmma, conv_halo, conv_gemm_tma}.cu itself (nvcc from PATH, -O3 -arch=sm_90a, as the library's build) into
OUTDIR and reads those.

With --values, for every kernel the basic blocks that hold 8 or more MUFU instead (an epilogue that finishes that many
values: a SiLU is one MUFU since the twenty-eighth session), the smallest six: instructions, and of them MUFU / FADD /
FMUL / FFMA. The fortieth session's table of epilogue costs (docs/kernels-conv.md) is this.

With --loops, for every kernel each loop instead (a backward branch and the instructions from its target, inner
loops included): its size, its branches (BRA), convergence regions (BSSY: the compiler's bracket around a divergent
branch), MMAs (HMMA) and its most frequent opcodes. The thirty-sixth session read the fused kernels' epilogues this
way (a SASS of FILE.o from a CUDA build: `cuobjdump -sass build/CMakeFiles/yolo12_cuda.dir/src/backends/cuda/X.cu.o`).

For every kernel (or those whose mangled name matches --kernel): its instruction count, its basic blocks (split at
branch targets and after branches), and the histogram of MUFU instructions per basic block (a SiLU in the fp16
epilogue is two: EX2 and RCP). A SiLU behind its own branch gives blocks of two MUFU: one value's exp and reciprocal,
whose latencies nothing else in the block can cover; a straight-line epilogue gives blocks of 16 or more, which the
scheduler interleaves. This is what led to variant f16_epi_hoist (seventeenth session, docs/kernels-conv.md); it says
nothing about time, which only a GPU measures.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

FILES = ["conv_implicit_gemm", "conv_wgmma", "conv_halo_wgmma", "conv_halo", "conv_gemm_tma"]
INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")
TARGET = re.compile(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)")


def kernels(sass):
    """(mangled name, [(address, instruction)]) per function of a cuobjdump listing."""
    for part in re.split(r"\n\s*Function : ", sass)[1:]:
        name = part.split("\n", 1)[0].strip()
        yield name, [(int(a, 16), op.strip()) for a, op in INSTR.findall(part)], part


def blocks(instrs, text):
    targets = {int(t, 16) for t in TARGET.findall(text)}
    out, cur = [], []
    for addr, op in instrs:
        if addr in targets and cur:
            out.append(cur)
            cur = []
        cur.append(op)
        if re.search(r"\bBRA\b|\bEXIT\b|\bRET\b", op):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def short(name):
    m = re.search(r"(conv2d_\w+?|dwconv_\w+?)(I[LN].*)?E?v?N", name)
    return (m.group(1) + (m.group(2) or "")) if m else name[:70]


def mufu_blocks(sass, kernel_re=""):
    """(mangled name, instruction count, MUFU count, Counter {MUFU in a block: blocks}) per kernel of a listing."""
    for name, instrs, text in kernels(sass):
        if kernel_re and not re.search(kernel_re, name):
            continue
        per_block = [sum("MUFU" in op for op in b) for b in blocks(instrs, text)]
        yield name, len(instrs), sum(per_block), collections.Counter(x for x in per_block if x)


def opcode(op):
    """The opcode of an instruction without its predicate and modifiers: '@!P0 BRA 0x50' -> 'BRA'."""
    return re.sub(r"^@!?U?P\w+\s+", "", op).split()[0].split(".")[0]


def loops(sass, kernel_re=""):
    """Per kernel: (mangled name, [(first index, last index, Counter {opcode: count})]), one entry per backward branch
    (a loop's body from its target to the branch, inner loops included), in listing order."""
    for name, instrs, _ in kernels(sass):
        if kernel_re and not re.search(kernel_re, name):
            continue
        index = {addr: i for i, (addr, _) in enumerate(instrs)}
        found = []
        for i, (addr, op) in enumerate(instrs):
            m = TARGET.search(op)
            if m and int(m.group(1), 16) <= addr and int(m.group(1), 16) in index:
                first = index[int(m.group(1), 16)]
                found.append((first, i, collections.Counter(opcode(o) for _, o in instrs[first:i + 1])))
        yield name, found


def report_loops(path, kernel_re, top=12):
    with open(path) as f:
        sass = f.read()
    print(f"== {os.path.basename(path)}")
    for name, found in loops(sass, kernel_re):
        print(short(name)[:110])
        for first, last, ops in found:
            size = last - first + 1
            mix = ", ".join(f"{k} {v}" for k, v in ops.most_common(top))
            print(f"  loop {first}-{last}: {size} instr; BSSY {ops['BSSY']}, BRA {ops['BRA']}, HMMA {ops['HMMA']}; {mix}")


def report(path, kernel_re):
    with open(path) as f:
        sass = f.read()
    print(f"== {os.path.basename(path)}")
    for name, count, mufu, hist in mufu_blocks(sass, kernel_re):
        spread = " ".join(f"{k}x{v}" for k, v in sorted(hist.items()))
        print(f"{short(name)[:78]:78s} instr {count:6d}  MUFU {mufu:4d}  MUFU per block (count x blocks): {spread}")


def value_blocks(sass, kernel_re="", least=8):
    """Per kernel: (mangled name, sorted set of (instructions, MUFU, FADD, FMUL, FFMA)) of its basic blocks of at
    least `least` MUFU (an epilogue finishing that many values)."""
    for name, instrs, text in kernels(sass):
        if kernel_re and not re.search(kernel_re, name):
            continue
        found = set()
        for b in blocks(instrs, text):
            ops = collections.Counter(opcode(o) for o in b)
            if ops["MUFU"] >= least:
                found.add((len(b), ops["MUFU"], ops["FADD"], ops["FMUL"], ops["FFMA"]))
        yield name, sorted(found)


def report_values(path, kernel_re, most=6):
    """value_blocks of a listing, the `most` smallest of each kernel (the fortieth session's table in
    docs/kernels-conv.md)."""
    with open(path) as f:
        sass = f.read()
    print(f"== {os.path.basename(path)}")
    for name, found in value_blocks(sass, kernel_re):
        rows = "; ".join(f"{n} ({m} / {a} / {u} / {f})" for n, m, a, u, f in found[:most])
        print(f"{short(name)[:78]:78s} {rows or '-'}")


def build(outdir):
    os.makedirs(outdir, exist_ok=True)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not cuobjdump:
        sys.exit("no cuobjdump: set CUOBJDUMP (the CUDA toolkit's, or the pip package nvidia-cuda-cuobjdump's)")
    paths = []
    for f in FILES:
        cubin = os.path.join(outdir, f + ".cubin")
        subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90a", "--expt-relaxed-constexpr", "-I", "include", "-I",
                        "src", "-I", "src/backends/cuda", "-cubin", f"src/backends/cuda/{f}.cu", "-o", cubin],
                       cwd=root, check=True)
        sass = os.path.join(outdir, f + ".sass")
        with open(sass, "w") as out:
            subprocess.run([cuobjdump, "-sass", cubin], stdout=out, check=True)
        paths.append(sass)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--build", metavar="OUTDIR")
    ap.add_argument("--loops", action="store_true", help="each loop's size and opcode mix instead of the MUFU blocks")
    ap.add_argument("--values", action="store_true",
                    help="the blocks of 8 or more MUFU: size and MUFU / FADD / FMUL / FFMA (an epilogue's cost)")
    args = ap.parse_args()
    paths = build(args.build) if args.build else args.files
    if not paths:
        ap.error("give .sass files or --build OUTDIR")
    for p in paths:
        (report_loops if args.loops else report_values if args.values else report)(p, args.kernel)


if __name__ == "__main__":
    main()
