// src/backends/cuda/stem_patch.cuh - a tile's input patch for the direct kernels over RGB input: conv2d_stem_f16
// (conv_stem.cu) and conv2d_stem_pair_f16 (conv_stem_pair.cu). Both read a rectangle of the NHWC input, rows of kPW
// pixels x kCin channels, zero outside the image, into shared memory as rows of kRS values (fp32 for the stem, fp16
// for the pair), the values of a row contiguous, channel fastest.
//
// Where ldx == kCin a patch row is one contiguous run of halves in global memory at any alignment. The block then
// copies the 16-byte granules that hold it (cp.async, raw fp16, in global alignment) into a raw buffer, so that the
// copy of the next tile can be in flight while the current one computes; a convert pass turns the raw rows into the
// aligned patch (a funnel shift by the row's misalignment, zero outside the image). Only granules that hold an
// element of the patch are read, and a granule that reaches past either end of the x view is read half by half, so
// nothing outside the view is touched. With ldx > kCin the patch is gathered from global memory directly (scalar
// loads, no prefetch: not the network's case).
//
// G, the geometry, provides kCin, kPH (rows), kPW (pixels per row), kRS (values per patch row, a multiple of 8,
// >= kPW * kCin), kChunks = kRS / 8, kRawRS = kRS + 8 (halves per raw row: a row plus its misalignment) and
// kGranules = kRawRS / 8. Everything here is __host__ __device__, so that a host harness can replay it.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv_detail.cuh"
#include "mma.cuh"

namespace yolo12::cuda::conv_detail {

// Absolute half index (address / 2) of a pointer, and back: the raw copies work in these units.
__host__ __device__ __forceinline__ long long half_index(const __half* p) {
  return static_cast<long long>(reinterpret_cast<std::uintptr_t>(p) >> 1);
}
__host__ __device__ __forceinline__ const __half* half_at(long long h) {
  return reinterpret_cast<const __half*>(static_cast<std::uintptr_t>(h) << 1);
}

// Halves [s/16, s/16 + 1] of the 64-bit (hi:lo), s = 0 or 16.
__host__ __device__ __forceinline__ std::uint32_t shr_pair(std::uint32_t lo, std::uint32_t hi, int s) {
#ifdef __CUDA_ARCH__
  return __funnelshift_r(lo, hi, s);
#else
  return static_cast<std::uint32_t>(((static_cast<std::uint64_t>(hi) << 32) | lo) >> s);
#endif
}
__host__ __device__ __forceinline__ float half_lo(std::uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
}
__host__ __device__ __forceinline__ float half_hi(std::uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

// The input a patch is read from: x (batch, h, w, ldx), channels [0, kCin).
struct PatchSource {
  const __half* x = nullptr;
  int ldx = 0, batch = 0, h = 0, w = 0;
};

// Where one tile's patch sits in x, and which values of its rows lie inside the image.
struct PatchTile {
  int n = 0;            // the image
  int iy0 = 0, ix0 = 0;  // input row and column of patch element (0, 0) (negative where the pad reaches)
  int f_lo = 0, f_hi = 0;  // values [f_lo, f_hi) of a patch row are image columns (the rest reads zero)
  long long a0 = 0;        // absolute half index of patch element (0, 0, channel 0) (ldx == kCin only)
};

template <class G>
__host__ __device__ __forceinline__ PatchTile patch_tile(const PatchSource& s, int n, int iy0, int ix0) {
  PatchTile t;
  t.n = n;
  t.iy0 = iy0;
  t.ix0 = ix0;
  const int c_lo = ix0 < 0 ? -ix0 : 0;
  int c_hi = s.w - ix0 < G::kPW ? s.w - ix0 : G::kPW;
  if (c_hi < c_lo) c_hi = c_lo;
  t.f_lo = c_lo * G::kCin;
  t.f_hi = c_hi * G::kCin;
  t.a0 = half_index(s.x) + ((static_cast<long long>(n) * s.h + iy0) * s.w + ix0) * G::kCin;
  return t;
}

// Thread tid's share (of kThreads) of tile t's raw rows (ldx == kCin): raw half j of patch row r holds absolute half
// (a0 + r * w * kCin) - m + j, m = that row's misalignment (a0 + r * w * kCin) % 8, so patch value f of the row is
// raw half f + m. Only the granules that hold a patch element inside the image are copied (by copy(dst, h0): 16
// bytes from absolute half h0, a multiple of 8); one that reaches past either end of the x view is copied half by
// half (zeros outside the view).
#pragma nv_exec_check_disable
template <class G, int kThreads, typename Copy16>
__host__ __device__ void patch_copy_raw(const PatchSource& s, const PatchTile& t, int tid, __half* raw,
                                        const Copy16& copy) {
  const long long row_halves = static_cast<long long>(s.w) * G::kCin;
  const long long x_first = half_index(s.x);
  const long long x_end = x_first + static_cast<long long>(s.batch) * s.h * row_halves;
  for (int i = tid; i < G::kPH * G::kGranules; i += kThreads) {
    const int row = i / G::kGranules;
    const int g = i - row * G::kGranules;
    const int iy = t.iy0 + row;
    if (iy < 0 || iy >= s.h) continue;
    const long long arow = t.a0 + row * row_halves;
    const int mis = static_cast<int>(arow & 7);
    if (8 * g >= t.f_hi + mis || 8 * g + 8 <= t.f_lo + mis) continue;  // no image element of this row
    const long long h0 = arow - mis + 8 * g;
    __half* dst = raw + row * G::kRawRS + 8 * g;  // (8) halves
    if (h0 >= x_first && h0 + 8 <= x_end) {
      copy(dst, h0);
    } else {
      for (int e = 0; e < 8; ++e)
        dst[e] = h0 + e >= x_first && h0 + e < x_end ? load_nc(half_at(h0 + e)) : __float2half_rn(0.f);
    }
  }
}

// The device's copy for patch_copy_raw: 16 bytes from global (absolute half index h, a multiple of 8) into shared,
// by cp.async through L2 only (neighbouring tiles share halo rows and columns). The caller commits and waits.
struct PatchCopy16 {
  __device__ void operator()(__half* dst, long long h) const { cp_async_16(dst, half_at(h), 16); }
};

// Eight patch values (as four words of two halves, low half first) into the patch, 16-byte aligned: as fp32 (two
// 16-byte stores) or as fp16 (one).
__host__ __device__ __forceinline__ void patch_store8(float* dst, const std::uint32_t (&p)[4]) {
  float4* d = reinterpret_cast<float4*>(dst);
  d[0] = make_float4(half_lo(p[0]), half_hi(p[0]), half_lo(p[1]), half_hi(p[1]));
  d[1] = make_float4(half_lo(p[2]), half_hi(p[2]), half_lo(p[3]), half_hi(p[3]));
}
__host__ __device__ __forceinline__ void patch_store8(__half* dst, const std::uint32_t (&p)[4]) {
  *reinterpret_cast<uint4*>(dst) = make_uint4(p[0], p[1], p[2], p[3]);
}

// Thread tid's share of turning tile t's raw rows (patch_copy_raw) into its patch (kPH, kRS) of Out (float or
// __half): 8 values per step; zero outside the image and in the row's padding.
template <class G, int kThreads, typename Out>
__host__ __device__ void patch_convert(const PatchSource& s, const PatchTile& t, int tid, const __half* raw,
                                       Out* patch) {
  const int mis0 = static_cast<int>(t.a0 & 7);
  const int mis_step = (s.w * G::kCin) & 7;  // misalignment change per row (mod 8)
  for (int i = tid; i < G::kPH * G::kChunks; i += kThreads) {
    const int row = i / G::kChunks;
    const int f = (i - row * G::kChunks) * 8;
    const int iy = t.iy0 + row;
    std::uint32_t p[4] = {0u, 0u, 0u, 0u};
    if (iy >= 0 && iy < s.h && f < t.f_hi && f + 8 > t.f_lo) {
      const int mis = (mis0 + row * mis_step) & 7;
      // Raw halves f + mis .. f + mis + 7 lie in the five 32-bit words from (f + mis) / 2.
      const std::uint32_t* src = reinterpret_cast<const std::uint32_t*>(raw + row * G::kRawRS) + f / 2 + (mis >> 1);
      std::uint32_t wd[5];
#pragma unroll
      for (int q = 0; q < 5; ++q) wd[q] = src[q];
      const int sh = (mis & 1) * 16;
#pragma unroll
      for (int q = 0; q < 4; ++q) p[q] = shr_pair(wd[q], wd[q + 1], sh);
      if (f < t.f_lo || f + 8 > t.f_hi) {  // a row end: the raw halves outside the image were not copied
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const bool lo = f + 2 * q >= t.f_lo && f + 2 * q < t.f_hi;
          const bool hi = f + 2 * q + 1 >= t.f_lo && f + 2 * q + 1 < t.f_hi;
          p[q] &= (lo ? 0x0000ffffu : 0u) | (hi ? 0xffff0000u : 0u);
        }
      }
    }
    patch_store8(patch + row * G::kRS + f, p);
  }
}

// The same patch gathered straight from x (views with ldx > kCin): scalar loads.
template <class G, int kThreads, typename Out>
__host__ __device__ void patch_gather(const PatchSource& s, const PatchTile& t, int tid, Out* patch) {
  for (int i = tid; i < G::kPH * G::kChunks; i += kThreads) {
    const int row = i / G::kChunks;
    const int f = (i - row * G::kChunks) * 8;
    const int iy = t.iy0 + row;
    const bool row_in = iy >= 0 && iy < s.h;
    const long long pix0 = (static_cast<long long>(t.n) * s.h + iy) * s.w + t.ix0;  // pixel of patch column 0
    std::uint32_t p[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      unsigned short b[2] = {0, 0};
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int ff = f + 2 * q + e;
        const int col = ff / G::kCin, ci = ff - col * G::kCin;
        if (row_in && ff >= t.f_lo && ff < t.f_hi) b[e] = __half_as_ushort(load_nc(s.x + (pix0 + col) * s.ldx + ci));
      }
      p[q] = static_cast<std::uint32_t>(b[0]) | (static_cast<std::uint32_t>(b[1]) << 16);
    }
    patch_store8(patch + row * G::kRS + f, p);
  }
}

// A persistent kernel's patches with one raw buffer (conv2d_stem_pair_f16, conv2d_stem_mma): where `contig`
// (ldx == kCin) the first tile's raw rows are issued before the tile loop (patch_first_tile), and each tile's patch
// (patch_tile_ready) is converted from its raw rows, after which the buffer is refilled with the next tile's rows
// (`has_next`), in flight while the block computes. Otherwise the patch is gathered by element. Both calls are
// made by every thread of the block: patch_tile_ready begins with a barrier (every thread is done with the previous
// patch, and the raw rows have landed) and ends with one (the patch is complete). A kernel that issued a copy waits
// for it before exiting (cp_async_wait<0>).
template <class G, int kThreads>
__device__ __forceinline__ void patch_first_tile(const PatchSource& s, bool contig, bool has_tile,
                                                 const PatchTile& first, int tid, __half* raw) {
  if (!contig) return;
  if (has_tile) patch_copy_raw<G, kThreads>(s, first, tid, raw, PatchCopy16{});
  cp_async_commit();
}
template <class G, int kThreads, typename Out>
__device__ __forceinline__ void patch_tile_ready(const PatchSource& s, bool contig, const PatchTile& cur,
                                                 bool has_next, const PatchTile& next, int tid, __half* raw,
                                                 Out* patch) {
  if (contig) {
    cp_async_wait<0>();
    __syncthreads();
    patch_convert<G, kThreads>(s, cur, tid, raw, patch);
    __syncthreads();  // the patch is complete and the raw rows are read: the next tile's copy may begin
    if (has_next) patch_copy_raw<G, kThreads>(s, next, tid, raw, PatchCopy16{});
    cp_async_commit();
  } else {
    __syncthreads();
    patch_gather<G, kThreads>(s, cur, tid, patch);
    __syncthreads();
  }
}

}  // namespace yolo12::cuda::conv_detail
