#!/usr/bin/env python3
"""What an edit does to each kernel's registers and to the blocks per SM they allow: a static reading, no GPU needed.

    python3 tools/dev/reg_usage.py OLD NEW [--kernel REGEX] [--all]

OLD and NEW are object files or cubins built for sm_90a (the library's build folder has
CMakeFiles/yolo12_cuda.dir/src/backends/cuda/*.cu.o; `nvcc -cubin -arch=sm_90a` makes one for a single file), or text
files holding `cuobjdump -res-usage` output. cuobjdump comes with the CUDA toolkit; where the toolkit has none, the
pip package nvidia-cuda-cuobjdump holds it (bin/cuobjdump): set CUOBJDUMP to its path.

For each kernel in both (names compared without their anonymous-namespace hash, which differs between builds), where
REG or STACK changed (every kernel with --all): old -> new. Where the name gives the block size
(conv2d_implicit_gemm_f16<BM, BN, BK, WARPS_M, WARPS_N, ...>: WARPS_M x WARPS_N warps), it also prints the blocks per
SM that registers allow (65,536 per SM, allocated per warp in steps of 256, at most 64 warps) and flags a drop.
Shared memory limits blocks per SM too; this reads registers only. The twenty-eighth session found this way that 64-bit
row pointers had taken the 128 x 128 tile from 128 to 130 registers, one block per SM instead of two, which had cost
yolo12m and x 1-2 % at batch 32 (docs/kernels-conv.md, "The twenty-eighth session").
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

FUNCTION = re.compile(r"Function (\S+):")
USAGE = re.compile(r"REG:(\d+) STACK:(\d+)")
ANON = re.compile(r"_GLOBAL__N__\w+?_cu_[0-9a-f]{8}")  # the hash of the file; the length of the next name follows
F16_TILE = re.compile(r"conv2d_implicit_gemm_f16ILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E")


def parse(text):
    """{kernel name without the anonymous-namespace hash: (registers, stack bytes)} of a -res-usage listing."""
    out, name = {}, None
    for line in text.splitlines():
        m = FUNCTION.search(line)
        if m:
            name = ANON.sub("", m.group(1))
            continue
        m = USAGE.search(line)
        if m and name:
            out[name] = (int(m.group(1)), int(m.group(2)))
            name = None
    return out


def block_threads(name):
    """The block size the kernel's name gives, or None."""
    m = F16_TILE.search(name)
    return int(m.group(4)) * int(m.group(5)) * 32 if m else None


def reg_blocks(regs, threads):
    """Blocks of `threads` threads that `regs` registers per thread allow on one SM."""
    per_warp = -(-regs * 32 // 256) * 256
    warps = -(-threads // 32)
    return min(65536 // (per_warp * warps), 64 // warps)


def short(name):
    m = re.search(r"(conv2d_\w+?|dwconv_\w+?|\w+?_kernel\w*?)(I[LN].*?)?EEv", name)
    return (m.group(1) + (m.group(2) or "")) if m else name[:90]


def compare(old, new, kernel_re="", every=False):
    """Lines of the report and the number of kernels whose register-limited blocks per SM dropped."""
    lines, drops = [], 0
    both = set(old) & set(new)
    for name in sorted(both):
        if kernel_re and not re.search(kernel_re, name):
            continue
        (r0, s0), (r1, s1) = old[name], new[name]
        if (r0, s0) == (r1, s1) and not every:
            continue
        line = f"{short(name)[:90]:90s} REG {r0:3d} -> {r1:3d}  STACK {s0:4d} -> {s1:4d}"
        threads = block_threads(name)
        if threads:
            b0, b1 = reg_blocks(r0, threads), reg_blocks(r1, threads)
            line += f"  blocks/SM by registers {b0} -> {b1}"
            if b1 < b0:
                line += "  DROP"
                drops += 1
        lines.append(line)
    only = len(set(old) ^ set(new))
    lines.append(f"{len(both)} kernels in both, {only} in one only; {drops} with fewer blocks per SM")
    return lines, drops


def load(path):
    if path.endswith(".txt"):
        with open(path) as f:
            return parse(f.read())
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not cuobjdump:
        sys.exit("no cuobjdump: set CUOBJDUMP (the CUDA toolkit's, or the pip package nvidia-cuda-cuobjdump's)")
    return parse(subprocess.run([cuobjdump, "-res-usage", path], capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--kernel", default="", help="only kernels whose mangled name matches")
    ap.add_argument("--all", action="store_true", help="also the kernels that did not change")
    args = ap.parse_args()
    lines, drops = compare(load(args.old), load(args.new), args.kernel, args.all)
    print("\n".join(lines))
    return 1 if drops else 0


if __name__ == "__main__":
    sys.exit(main())
