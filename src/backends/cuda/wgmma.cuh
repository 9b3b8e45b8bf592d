// src/backends/cuda/wgmma.cuh - the PTX wrappers of Hopper's warpgroup MMA (wgmma, sm_90a only), which the
// wgmma conv kernels (conv_wgmma.cu) and the tensor-core peak loop of the roofline (bench/roofline.cu) share,
// and of the shared-memory barriers (mbarrier) that the warp-specialised conv kernels' pipelines run on, with their
// stage ring (StageRing) and the tensor memory accelerator's 2-D copies (tma_load_2d; conv2d_gemm_tma); and
// wgmma_pipeline, the K loop that the two-warpgroup kernels (conv2d_implicit_gemm_wgmma, conv2d_halo_wgmma) share.
//
// wgmma.mma_async m64nNk16 f32.f16.f16: one warpgroup (4 consecutive warps, the first at a warp index
// divisible by 4) computes D (64 x N, fp32, in registers) += A (64 x 16) * B (16 x N), both read from
// shared memory through 64-bit matrix descriptors, asynchronously: the instruction only queues the work.
// commit_group closes a group of queued MMAs; wait_group<n> returns once at most n groups are pending.
// Between the issue and the wait no instruction may touch the accumulators.
//
// Accumulator layout (thread t of the warpgroup, w = t / 32, l = t % 32; register i of N / 2):
//   row = 16 w + l / 4 + 8 ((i / 2) % 2), column = 8 (i / 4) + 2 (l % 4) + i % 2
// i.e. the m16n8 layout of mma.sync (mma.cuh) for each warp's 16 rows, repeated over N / 8 column blocks.
//
// Shared-memory layout (K-major A and B, "128-byte swizzle"): a row of 64 halves (one 64-wide K tile) is
// 128 bytes, eight rows form a 1024-byte atom (1024-byte aligned), and the 16-byte chunk c of row r is
// stored at r * 128 + ((c ^ (r % 8)) * 16). The descriptor then gives the start address (>> 4), the
// distance between atoms along M / N (stride byte offset 1024) and the swizzle mode; a K step of 16
// halves inside the atom advances the start address by 32 bytes.
// Shared memory written by ordinary stores or cp.async must be published to the tensor cores (the async
// proxy) with fence_proxy_async() in each writing thread, before the barrier that precedes the MMAs.
#pragma once

#include <cstdint>

#include "mma.cuh"

namespace yolo12::cuda {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define YOLO12_HAS_WGMMA 1

// The descriptor of a K-major tile in the 128-byte swizzle layout starting at shared address `addr`
// (1024-byte aligned, plus 32 bytes per K step of 16).
__device__ __forceinline__ std::uint64_t wgmma_desc_sw128(std::uint32_t addr) {
  return static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

// The descriptor of a K-major tile without swizzle ("interleaved" core matrices) starting at shared address
// `addr` (16-byte aligned): a core matrix is 8 rows of 16 bytes (8 halves of K) stored 16 bytes apart;
// lbo = bytes between core matrices adjacent along K, sbo = bytes between core matrices adjacent along M / N
// (both multiples of 16). conv2d_halo_wgmma (conv_halo_wgmma.cu) points A at 8 neighbouring pixels of a halo
// tile this way.
__device__ __forceinline__ std::uint64_t wgmma_desc_plain(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Tells the compiler that each accumulator may change here, so that no access to d moves across the
// wgmma instructions' issue or wait.
template <int R>
__device__ __forceinline__ void wgmma_fence_accumulators(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (this warpgroup's 64 x N fp32 tile, N / 2 registers per thread) += A * B, A and B K-major (no
// transpose), scale 1. N = 48, 64, 96, 128, 192 or 256: one specialisation each, written out, since an asm
// statement's register list cannot be generated (they differ only in N and the operand count).
template <int N>
__device__ void wgmma_m64k16(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b);

template <>
__device__ __forceinline__ void wgmma_m64k16<48>(float (&d)[24], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23"
      "}, %24, %25, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<64>(float (&d)[32], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<96>(float (&d)[48], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
      "}, %48, %49, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<128>(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<192>(float (&d)[96], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<256>(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// mbarrier: a 64-bit shared-memory barrier with an expected arrival count and a phase bit. A phase completes
// once `count` arrivals have come; waiting on parity p returns once the phase of parity p has completed (on a
// fresh barrier, waiting on parity 1 returns at once: the phase "before" the first counts as complete).
// mbar_cp_async_arrive: one arrival, made once every cp.async this thread issued before it has landed
// (.noinc: the arrival is one of the `count` at init). mbar_wait spins on try_wait; a wait that lasts about
// 35 seconds (2^36 clocks) traps, so a pipeline bug becomes a launch error instead of a hang.
__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_cp_async_arrive(std::uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const long long start = clock64();
  while (!mbar_try_wait(bar, parity))
    if (clock64() - start > (1LL << 36)) __trap();
}

// The stage ring of a persistent pipeline: K tile number q of the block is stage q % STAGES, filled for the
// (q / STAGES)-th time; waiting on its full barrier takes that count's parity, on its empty barrier the one
// before. (conv2d_implicit_gemm_wgmma_ws, conv2d_gemm_tma.)
template <int STAGES>
struct StageRing {
  int stage = 0;
  std::uint32_t phase = 0;
  __device__ __forceinline__ void seek(long long q) {
    stage = static_cast<int>(q % STAGES);
    phase = static_cast<std::uint32_t>((q / STAGES) & 1);
  }
  __device__ __forceinline__ void next() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// The tensor memory accelerator (TMA; conv2d_gemm_tma): one thread copies a whole 2-D box of a global tensor,
// described by a CUtensorMap made on the host (cuTensorMapEncodeTiled), into shared memory, in the tensor
// map's swizzle, and signals an mbarrier with the bytes it wrote (complete_tx). The waiter's barrier expects
// those bytes: mbar_arrive_expect_tx makes the one arrival and adds the bytes the phase must also see.
// Elements of the box outside the tensor are written as zeros and count as written. tmap: the generic address
// of a __grid_constant__ kernel parameter.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(tmap)) : "memory");
}
// Box at (c0 along the inner dimension, c1 along the outer) into shared memory at dst, completing on bar.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const void* tmap, int c0, int c1, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The K loop of a kernel whose threads all both load and compute (two warpgroups), over `steps` pipeline steps
// in `stages` shared-memory stages (3 or 4; a compile-time constant where the caller's is): load(step, stage)
// issues this thread's cp.async copies of a step into a stage, mma(step, stage) this warpgroup's wgmmas of a
// step as one commit group. Step kt: wait for this thread's copies of kt; publish them to the tensor cores
// (fence.proxy.async); wait until this warpgroup's MMAs of kt - 2 are done; synchronise the block (kt complete,
// kt - 2's stage free in both warpgroups); issue the copies of kt + stages - 2 into that stage; issue kt's MMAs.
// So the tensor cores always have the previous step queued behind the current one, and stages - 2 steps are
// in flight from memory. Returns once every MMA is done and every copy has landed, after a block barrier (the
// stages may then be reused); the caller fences its accumulators (wgmma_fence_accumulators) before reading them.
template <typename Load, typename Mma>
__device__ __forceinline__ void wgmma_pipeline(int steps, int stages, Load&& load, Mma&& mma) {
#pragma unroll
  for (int s = 0; s < stages - 2; ++s) {
    if (s < steps) load(s, s);
    conv_detail::cp_async_commit();
  }
  for (int kt = 0; kt < steps; ++kt) {
    conv_detail::cp_async_wait_dyn(stages - 3);  // this thread's copies of step kt have landed
    fence_proxy_async();            // ... and are visible to the tensor cores
    wgmma_wait<1>();                // this warpgroup's MMAs of step kt - 2 are done
    __syncthreads();                // step kt complete; step kt - 2's stage free in both warpgroups
    const int next = kt + stages - 2;
    if (next < steps) load(next, next % stages);
    conv_detail::cp_async_commit();
    mma(kt, kt % stages);
  }
  wgmma_wait<0>();
  conv_detail::cp_async_wait<0>();
  __syncthreads();
}
#endif  // sm_90a

}  // namespace yolo12::cuda
