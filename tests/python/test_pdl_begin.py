#!/usr/bin/env python3
"""The rule that keeps programmatic dependent launch correct (src/backends/cuda/launch.cuh), checked on the sources: a
kernel that may be launched with the PDL attribute (through launch_kernel or launch_with_smem, by name or through a
variable) calls pdl_begin() before it touches an activation. PDL is on by default since the thirty-seventh session, so
a kernel that broke the rule would read its input before the kernel that writes it had finished.

What is checked, per __global__ function of the CUDA backend:
- a kernel whose body calls pdl_begin() calls it before its first global load or store of a params field (the
  statements before it may only compute indices, declare shared memory and read the params struct);
- a kernel whose body does not call it is only ever launched with <<<...>>>: every use of its name outside its own
  definition is a triple-chevron launch (those never get the attribute).
The scan is textual: templates, lambdas and comments are handled as far as the backend's own style needs."""
import glob
import os
import re
import unittest

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CUDA_DIR = os.path.join(SOURCE_DIR, "src", "backends", "cuda")

KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s*)?(\w+)\s*\(")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def body_after(text, start):
    """The braces-balanced body of the function whose parameter list starts before `start`."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise ValueError("unbalanced braces")


def backend_sources():
    files = sorted(glob.glob(os.path.join(CUDA_DIR, "*.cu")) + glob.glob(os.path.join(CUDA_DIR, "*.cuh")))
    return {os.path.basename(f): strip_comments(open(f, encoding="utf-8").read()) for f in files}


def kernels(sources):
    found = {}
    for name, text in sources.items():
        for m in KERNEL.finditer(text):
            found[m.group(1)] = (name, m.start(1), body_after(text, m.end()))
    return found


def uses_outside_definition(sources, kernel):
    """(file, text after the name) of every use of the kernel's name that is not a __global__ definition or
    declaration of it."""
    uses = []
    pattern = re.compile(r"\b%s\b" % re.escape(kernel))
    for name, text in sources.items():
        declared = {m.start(1) for m in KERNEL.finditer(text)}
        for m in pattern.finditer(text):
            if m.start() not in declared:
                uses.append((name, text[m.end():m.end() + 200]))
    return uses


def touches_memory_before_wait(body):
    """Whether a kernel body indexes a params pointer field (p.x[...]) or calls a load (cp_async, load_nc, __ldg)
    before its pdl_begin(); a body without pdl_begin() is not judged here. Textual and loose: before the wait a kernel
    may declare shared memory, compute indices and read the params struct's scalars."""
    i = body.find("pdl_begin()")
    if i < 0:
        return False
    before = body[:i]
    return bool(re.search(r"\bp\.\w+\s*\[", before) or re.search(r"cp_async|load_nc|ldg|__ldg", before))


def triple_chevron(after):
    """Whether the text after a kernel's name is a <<<...>>> launch, with or without template arguments."""
    rest = after.lstrip()
    if rest.startswith("<") and not rest.startswith("<<<"):
        depth = 0
        for k, ch in enumerate(rest):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    rest = rest[k + 1:].lstrip()
                    break
    return rest.startswith("<<<")


class PdlBeginTest(unittest.TestCase):
    def setUp(self):
        self.sources = backend_sources()
        self.kernels = kernels(self.sources)

    def test_the_scan_finds_the_kernels(self):
        # Not vacuous: the backend's kernels are found, the fused ones among those that wait.
        self.assertGreater(len(self.kernels), 30)
        for name in ("conv2d_halo_pair_f16", "conv2d_dw_branch_f16", "conv2d_stem_pair_f16", "area_attention_flash_f16"):
            self.assertIn(name, self.kernels)
            self.assertIn("pdl_begin()", self.kernels[name][2], name)

    def test_kernels_without_pdl_begin_are_launched_with_triple_chevrons_only(self):
        without = [k for k, (_, _, body) in self.kernels.items() if "pdl_begin()" not in body]
        self.assertTrue(without, "the backend has kernels launched without the attribute (letterbox, NMS)")
        for kernel in without:
            uses = uses_outside_definition(self.sources, kernel)
            launched = [after for _, after in uses if triple_chevron(after)]
            other = [(f, after[:60]) for f, after in uses if not triple_chevron(after)]
            self.assertTrue(launched or not uses, kernel)
            self.assertEqual(other, [], "%s has no pdl_begin() but is used otherwise than by <<<>>>" % kernel)

    def test_pdl_begin_comes_before_any_params_access_to_memory(self):
        # Before pdl_begin() a kernel may only declare and compute; its first global memory access through the params
        # must come after it (touches_memory_before_wait).
        for kernel, (_, _, body) in self.kernels.items():
            self.assertFalse(touches_memory_before_wait(body), kernel)

    def test_a_kernel_that_skipped_the_rule_would_fail(self):
        # The check itself, on a made-up source: a kernel without pdl_begin() handed to launch_kernel is caught.
        sources = {"x.cu": strip_comments("""
            __global__ void good(P p) { pdl_begin(); p.y[0] = p.x[0]; }
            __global__ void __launch_bounds__(256, (kMin<8, 16>)) bad(P p) { p.y[0] = p.x[0]; }
            __global__ void plain(P p) { p.y[0] = 1; }
            void run(P p, cudaStream_t s) {
              launch_kernel(good, 1, 32, 0, s, p);
              constexpr auto kKernel = bad;
              launch_kernel(kKernel, 1, 32, 0, s, p);
              plain<<<1, 32, 0, s>>>(p);
            }""")}
        found = kernels(sources)
        self.assertEqual(sorted(found), ["bad", "good", "plain"])
        self.assertFalse(touches_memory_before_wait(found["good"][2]))
        # A kernel that reads its input, or starts a copy, before it waits is caught.
        self.assertTrue(touches_memory_before_wait(" float v = p.x[tid]; pdl_begin(); p.y[tid] = v; "))
        self.assertTrue(touches_memory_before_wait(" cp_async_16(s, p.x + i, 16); pdl_begin(); "))
        self.assertFalse(touches_memory_before_wait(" const int n = p.n * p.ldx; pdl_begin(); p.y[n] = 0; "))
        for kernel, ok in (("bad", False), ("plain", True)):
            uses = uses_outside_definition(sources, kernel)
            self.assertEqual(all(triple_chevron(after) for _, after in uses), ok, kernel)


if __name__ == "__main__":
    unittest.main()
