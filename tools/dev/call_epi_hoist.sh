#!/usr/bin/env bash
# tools/dev/call_epi_hoist.sh - the first GPU call after the seventeenth session (docs/kernels-conv.md, "The seventeenth
# session"), written out so that it runs as planned: one `tools/gpu_check.sh perf` call of about 9 minutes.
#   - yolo12-bench on yolo12n and yolo12x (the peer's random weights), batch 1 and 32: the defaults, variant
#     f16_epi_hoist, and f16_epi_hoist with f16_gemm_tma;
#   - the per-op profile of yolo12n under the defaults, f16_epi_hoist, and f16_epi_hoist + f16_gemm_tma with kernel
#     tuning and its log (profile_tmatune.log: tools/dev/tune_log_report.py --kernel gemm_tma --by-shape), and of
#     yolo12x under the defaults and f16_epi_hoist;
#   - compute-sanitizer memcheck and racecheck on test_conv [epi_hoist] and [gemm_tma] (which also check their
#     results: no ctest run), and on test_conv_chain's tuned whole-model case alone (:tune) and both whole-model cases
#     (:model), each summary line with the test's exit status and peak memory.
# Since the eighteenth session the epilogue is always hoisted (the variant's off position is deleted and its name is
# ignored), so `default` and `hoist` below now run the same kernels: the script is kept as the record of that call.
# Run it on the device machine from the repository root with OUT set (the device tool's $OUT), carrying .whl and
# .carry/catch2. Any gpu_check variable set in the environment wins over the values here.
set -u
cd "$(dirname "$0")/../.." || exit 1
# The fifteenth session's defaults written out (the variants before f16_epi_hoist), then the two under test.
d2=f16_bk64,dw_one_output,f16_split_k,f16_narrow,dw_tiled_f16,f16_fit_smem,f16_tiles2,dw_tiled_small,f16_stem
d2=$d2,f16_narrow8w,f16_tiles3,f16_wgmma,f16_wgmma_ws,f16_wgmma_short,f16_halo,f16_wgmma_ping,dw_rows_f16,pad_channels
d2=$d2,raster_n,f16_wgmma_waves,f16_tiles4,f16_halo_wgmma
tune="YOLO12_CONV_VARIANTS=$d2,f16_epi_hoist,f16_gemm_tma+YOLO12_CONV_TUNE=1+YOLO12_CONV_TUNE_LOG=1"
# In a variant list "name=value" sets YOLO12_CONV_VARIANTS (a "+name" value edits the defaults); in "name:VAR=..."
# entries '+' separates variables, so the variants are written out there.
export PERF_BUDGET=${PERF_BUDGET:-540}
export PERF_TESTS=${PERF_TESTS:-"test_conv test_conv_chain"}
export CTEST_REGEX=${CTEST_REGEX:-'^$'}
export PERF_SCALES=${PERF_SCALES:-n,x}
export PERF_VARIANTS=${PERF_VARIANTS:-"default hoist=+f16_epi_hoist tmatune:$tune"}
export PERF_PROFILE_SCALES=${PERF_PROFILE_SCALES:-x}
export PERF_PROFILE_SCALE_VARIANTS=${PERF_PROFILE_SCALE_VARIANTS:-"default hoist=+f16_epi_hoist"}
export PERF_BENCH_VARIANTS=${PERF_BENCH_VARIANTS:-"default hoist=+f16_epi_hoist tma=+f16_epi_hoist,+f16_gemm_tma"}
export PERF_SAN_TAGS=${PERF_SAN_TAGS:-"epi_hoist gemm_tma test_conv_chain:tune test_conv_chain:model"}
export PERF_MULTI_SCALES=${PERF_MULTI_SCALES:-none}
exec tools/gpu_check.sh perf
