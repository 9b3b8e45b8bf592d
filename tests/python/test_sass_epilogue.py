#!/usr/bin/env python3
"""tools/dev/sass_epilogue.py on a made-up cuobjdump listing: basic blocks split at branch targets and after branches,
and the MUFU instructions counted per block; the loops (backward branches) and their opcodes; the blocks of many MUFU
with their arithmetic (--values)."""
import os
import sys
import unittest

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dev"))
import sass_epilogue  # noqa: E402

# Two kernels in cuobjdump's layout (each instruction line followed by its encoding's second half). `branchy`: each
# value's EX2 and RCP behind a branch of its own (two blocks of 2, the branch target starting the second); `straight`:
# four values' MUFUs in one block.
LISTING = """
	code for sm_90a
		Function : _Z7branchyPf
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                       /* 0x00000a0000017a02 */
                                                                                /* 0x000fe40000000f00 */
        /*0010*/                   ISETP.NE.AND P0, PT, R2, RZ, PT ;            /* 0x000000ff0200720c */
                                                                                /* 0x000fda0003f05270 */
        /*0020*/               @P0 BRA 0x50 ;                                   /* 0x0000000000000947 */
                                                                                /* 0x000fea0003800000 */
        /*0030*/                   MUFU.EX2 R3, R3 ;                            /* 0x0000000300037308 */
                                                                                /* 0x000e240000000800 */
        /*0040*/                   MUFU.RCP R3, R3 ;                            /* 0x0000000300037308 */
                                                                                /* 0x001e240000001000 */
        /*0050*/                   MUFU.EX2 R4, R4 ;                            /* 0x0000000400047308 */
                                                                                /* 0x000e240000000800 */
        /*0060*/                   MUFU.RCP R4, R4 ;                            /* 0x0000000400047308 */
                                                                                /* 0x001e240000001000 */
        /*0070*/                   EXIT ;                                       /* 0x000000000000794d */
                                                                                /* 0x000fea0003800000 */
		..........
		Function : _Z8straightPf
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   MUFU.EX2 R3, R3 ;                            /* 0x0000000300037308 */
                                                                                /* 0x000e240000000800 */
        /*0010*/                   MUFU.EX2 R4, R4 ;                            /* 0x0000000400047308 */
                                                                                /* 0x000e240000000800 */
        /*0020*/                   MUFU.RCP R3, R3 ;                            /* 0x0000000300037308 */
                                                                                /* 0x001e240000001000 */
        /*0030*/                   MUFU.RCP R4, R4 ;                            /* 0x0000000400047308 */
                                                                                /* 0x001e240000001000 */
        /*0040*/                   EXIT ;                                       /* 0x000000000000794d */
                                                                                /* 0x000fea0003800000 */
"""


class SassEpilogue(unittest.TestCase):
    def test_blocks_and_mufu_per_block(self):
        got = {name: (count, mufu, dict(hist)) for name, count, mufu, hist in sass_epilogue.mufu_blocks(LISTING)}
        self.assertEqual(set(got), {"_Z7branchyPf", "_Z8straightPf"})
        self.assertEqual(got["_Z7branchyPf"], (8, 4, {2: 2}))  # the encodings' second lines are not instructions
        self.assertEqual(got["_Z8straightPf"], (5, 4, {4: 1}))

    def test_loops(self):
        # A loop from 0x10 to the backward branch at 0x40 (a forward branch inside it is not a loop), none in straight.
        listing = LISTING.replace("EXIT ;                                       /* 0x000000000000794d */", "BRA 0x10 ;", 1)
        got = dict(sass_epilogue.loops(listing))
        self.assertEqual(got["_Z8straightPf"], [])
        (first, last, ops), = got["_Z7branchyPf"]
        self.assertEqual((first, last), (1, 7))
        self.assertEqual(ops["MUFU"], 4)
        self.assertEqual(ops["BRA"], 2)  # '@P0 BRA' counts as BRA
        self.assertEqual(ops["ISETP"], 1)

    def test_value_blocks(self):
        # The blocks of at least `least` MUFU with their size and arithmetic: straight's one block of 4 (and its EXIT);
        # branchy's blocks of 2 only where least is 2; an FFMA counted in its block, an FADD only in its own.
        got = dict(sass_epilogue.value_blocks(LISTING, least=4))
        self.assertEqual(got, {"_Z7branchyPf": [], "_Z8straightPf": [(5, 4, 0, 0, 0)]})
        listing = LISTING.replace("MUFU.RCP R4, R4 ;", "FFMA R4, R4, R5, R4 ;").replace("MOV R1, c[0x0][0x28] ;",
                                                                                        "FADD R1, R2, R3 ;")
        got = dict(sass_epilogue.value_blocks(listing, least=2))
        # branchy: its first block (FADD, ISETP, @P0 BRA) has no MUFU, its last (EX2, FFMA, EXIT) one; EX2, RCP counts.
        self.assertEqual(got["_Z7branchyPf"], [(2, 2, 0, 0, 0)])
        self.assertEqual(got["_Z8straightPf"], [(5, 3, 0, 0, 1)])

    def test_kernel_filter(self):
        names = [name for name, _, _, _ in sass_epilogue.mufu_blocks(LISTING, "straight")]
        self.assertEqual(names, ["_Z8straightPf"])


if __name__ == "__main__":
    unittest.main()
