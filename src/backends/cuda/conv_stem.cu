// src/backends/cuda/conv_stem.cu - conv2d_stem_f16: fp16 direct convolution for convs with 1..4 input
// channels (the stem: 3x3 stride 2 from RGB, c_out 16..96; up to 128), NHWC, fp32 accumulation, the fused epilogue.
//
//   y[n, oy, ox, c] = epilogue(sum_{ky, kx, ci} x[n, oy*s - p + ky, ox*s - p + kx, ci] * W[c, ky, kx, ci])
//                     (+ residual[n, oy, ox, c])
// summed in fmaf order tap (ky, kx) then ci, taps outside the image reading zero, rounded once to fp16.
// x (B, H, W, ldx), residual (B, Ho, Wo, ldr) and y (B, Ho, Wo, ldy) are fp16 NHWC views; w is the
// GEMM packing (c_out, k_pad), element [c][tap * cin_pad + ci] (gemm_layout, conv_detail.cuh).
//
// At batch 32 the stem is 1.4 G FMAs against 184 MB of traffic, so on an H200 it is about as much
// fp32-FMA work as memory time (~0.045 ms each), and the kernel is about issue slots: every instruction
// that is not an FMA (loads, index arithmetic, the SiLU epilogue) costs FMA time. Hence:
//
// - Tiles: one tile is 8 output rows x 64 output columns of one image; 128 threads, thread (gx, gy) =
//   (tid % 16, tid / 16) computes 4 horizontally adjacent output pixels of row gy for 16 output channels
//   at a time (64 fp32 accumulators; a last pass of 8 channels where c_out % 16 == 8), so every weight
//   float4 read from shared memory feeds 16 FMAs and every input value 16. For k 3, stride 2, c_in 3 one
//   row of taps is 576 FFMA, 43 LDS.128 and about 15 other instructions (SASS, CUDA 13.0).
// - The input patch of a tile ((8-1)*s + k rows x (64-1)*s + k columns x c_in) is converted once to fp32
//   and kept in shared memory as one contiguous run of c_in-interleaved floats per row, zero outside the
//   image. A thread's window in one patch row, ((4-1)*s + k) * c_in floats, starts 16-byte aligned, so
//   it is read with float4 loads into registers; the taps index it with compile-time offsets (k, s and
//   c_in are template parameters, so no integer division or address arithmetic in the inner loops).
// - The weights are kept as fp32 in shared memory for the whole kernel, in blocks of 16 output channels
//   (k*k*c_in, 16) (the last block 8 wide where c_out % 16 == 8): the loads of a pass are warp-wide
//   broadcast float4s at compile-time offsets.
// - The grid is persistent (as many blocks as fit, each walking tiles t, t + grid, ...). Where
//   ldx == c_in, a patch row is one contiguous run of halves in global memory at any alignment, so the
//   block copies the 16-byte granules that hold it (cp.async, raw fp16, in global alignment) into one
//   of two raw buffers: the next tile's copy is in flight while the current tile computes. A convert
//   pass then turns the raw rows into the aligned fp32 patch. With ldx > c_in the patch is gathered
//   from global memory directly. Both are stem_patch.cuh's, shared with conv2d_stem_pair_f16.
// - Epilogue: the operations of epilogue() (conv_detail.cuh) on the fp32 sums, bit for bit, with the
//   bias and gamma loads and the SiLU / gamma branches once per pass rather than per value (per value
//   they made the epilogue about 27 instructions against 27 FMAs; now ~15, most of it SiLU's IEEE
//   division); residual added, one rounding; a pixel's channels are written as 16-byte stores where y
//   (and residual) rows are 16-byte aligned, else as scalars.
//
// The block's pieces (tile, raw copy, convert, gather, weights, one pass) are __host__ __device__ so that
// a host harness can replay the kernel thread by thread on the CPU.
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_stem.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "stem_patch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

constexpr int kStemThreads = 128;
constexpr int kStemTW = 64;                 // output columns per tile
constexpr int kStemTH = 8;                  // output rows per tile
constexpr int kStemPP = 4;                  // adjacent output pixels per thread
constexpr int kStemGX = kStemTW / kStemPP;  // threads per tile row
static_assert(kStemGX * kStemTH == kStemThreads, "one thread per 4 pixels of the tile");
constexpr int kStemMinBlocks = 4;           // per SM: 4 x 128 threads at up to 128 registers

constexpr int cmax(int a, int b) { return a > b ? a : b; }

// The tile's shared-memory geometry for a k x k, stride s conv over c_in = CIN channels.
template <int K, int S, int CIN>
struct StemGeom {
  static constexpr int kCin = CIN;
  static constexpr int kPH = (kStemTH - 1) * S + K;                // patch rows
  static constexpr int kPW = (kStemTW - 1) * S + K;                // patch columns
  static constexpr int kWin = ((kStemPP - 1) * S + K) * CIN;       // floats of one thread's window in a row
  static constexpr int kWin4 = (kWin + 3) / 4;                     // ... read as this many float4s
  static constexpr int kWinStep = kStemPP * S * CIN;               // floats between neighbouring windows
  static_assert(kWinStep % 4 == 0, "windows start 16-byte aligned");
  static constexpr int kRS = (cmax(kPW * CIN, (kStemGX - 1) * kWinStep + 4 * kWin4) + 7) / 8 * 8;  // patch row (floats)
  static constexpr int kChunks = kRS / 8;                          // 8-float chunks of a patch row
  static constexpr int kRawRS = kRS + 8;                           // raw row (halves): a row plus its misalignment
  static constexpr int kGranules = kRawRS / 8;                     // 16-byte granules of a raw row
  static constexpr int kKKC = K * K * CIN;                         // weights per output channel
};

struct StemParams : ConvParams<__half> {  // the launch (w: (c_out, k_pad) packed, K = tap * cin_pad + ci), plus:
  int cin_pad, k_pad;
  int tiles_x, tiles_y, tiles;  // tiles of kStemTH x kStemTW outputs: per row of tiles, per image, in all
  bool contig;                  // ldx == c_in: a patch row is contiguous in x (raw granule copies)
  bool vec_out;                 // 16-byte stores of y (and loads of residual): ldy, ldr % 8 == 0, aligned rows
};

// Shared memory of one block: weights (c_out * kKKC floats), patch (kPH, kRS) floats, and where contig two
// raw buffers (kPH, kRawRS) halves.
template <int K, int S, int CIN>
int stem_smem_bytes(int c_out, bool contig) {
  using G = StemGeom<K, S, CIN>;
  return (c_out * G::kKKC + G::kPH * G::kRS) * 4 + (contig ? 2 * G::kPH * G::kRawRS * 2 : 0);
}

// The stem's SiLU: silu_fast (conv_detail.cuh), one hardware tanh per value.
__host__ __device__ __forceinline__ float stem_silu(float v) { return silu_fast(v); }

// One tile: its first output row and column, and where its patch sits (stem_patch.cuh).
struct StemTile {
  int oy0, ox0;  // first output row and column (of image in.n)
  PatchTile in;  // the patch: (kPH, kPW) input pixels from (oy0 * S - pad, ox0 * S - pad)
};

__host__ __device__ __forceinline__ PatchSource stem_source(const StemParams& a) {
  return PatchSource{a.x, a.ldx, a.batch, a.h, a.w_in};
}

template <int K, int S, int CIN>
__host__ __device__ __forceinline__ StemTile stem_tile(const StemParams& a, int t) {
  StemTile r;
  const int tx = t % a.tiles_x;
  const int rest = t / a.tiles_x;
  const int ty = rest % a.tiles_y;
  r.oy0 = ty * kStemTH;
  r.ox0 = tx * kStemTW;
  r.in = patch_tile<StemGeom<K, S, CIN>>(stem_source(a), rest / a.tiles_y, r.oy0 * S - a.pad, r.ox0 * S - a.pad);
  return r;
}

// Thread tid's share of the weights, as fp32 in blocks of 16 output channels: channel c's weight of
// (tap, ci) at ws[(c / 16) * 16 * kKKC + (tap * CIN + ci) * width + c % 16], width 16, or 8 for a last
// block of 8 channels.
template <int K, int CIN>
__host__ __device__ void stem_load_weights(const StemParams& a, int tid, float* ws) {
  constexpr int kKKC = K * K * CIN;
  for (int i = tid; i < a.c_out * kKKC; i += kStemThreads) {
    const int c = i / kKKC;
    const int tc = i - c * kKKC;  // tap * CIN + ci
    const int tap = tc / CIN, ci = tc - tap * CIN;
    const int blk = c / 16;
    const int width = blk * 16 + 16 <= a.c_out ? 16 : 8;
    ws[blk * 16 * kKKC + tc * width + c % 16] =
        __half2float(load_nc(a.w + static_cast<long long>(c) * a.k_pad + tap * a.cin_pad + ci));
  }
}

// One pass of thread tid over tile t: output channels [c0, c0 + CC) of its kStemPP pixels, from the fp32
// patch and the block of weights wb = (kKKC, CC) of those channels; epilogue and stores.
template <int K, int S, int CIN, int CC>
__host__ __device__ __forceinline__ void stem_pass(const StemParams& a, const StemTile& t, int tid,
                                                   const float* patch, const float* wb, int c0) {
  using G = StemGeom<K, S, CIN>;
  static_assert(CC % 8 == 0, "whole 16-byte output chunks");
  const int gx = tid % kStemGX, gy = tid / kStemGX;
  float acc[kStemPP][CC];
#pragma unroll
  for (int q = 0; q < kStemPP; ++q)
#pragma unroll
    for (int j = 0; j < CC; ++j) acc[q][j] = 0.f;

  const float* xw = patch + gy * S * G::kRS + gx * G::kWinStep;  // (kPH - gy*S, kWin) this thread's window
#pragma unroll 1  // one row of taps at a time: unrolled, the windows of all rows would not fit in registers
  for (int ky = 0; ky < K; ++ky) {
    float xv[4 * G::kWin4];  // window row ky: ((kStemPP-1)*S + K) columns x CIN, then padding
    const float4* xr = reinterpret_cast<const float4*>(xw + ky * G::kRS);
#pragma unroll
    for (int q = 0; q < G::kWin4; ++q) {
      const float4 f4 = xr[q];
      xv[4 * q] = f4.x;
      xv[4 * q + 1] = f4.y;
      xv[4 * q + 2] = f4.z;
      xv[4 * q + 3] = f4.w;
    }
    const float* wr = wb + ky * K * CIN * CC;  // (K * CIN, CC): taps (ky, 0..K-1)
#pragma unroll
    for (int kx = 0; kx < K; ++kx)
#pragma unroll
      for (int ci = 0; ci < CIN; ++ci) {
        const float4* wp = reinterpret_cast<const float4*>(wr + (kx * CIN + ci) * CC);
#pragma unroll
        for (int j4 = 0; j4 < CC / 4; ++j4) {
          const float4 w4 = wp[j4];
#pragma unroll
          for (int q = 0; q < kStemPP; ++q) {
            const float xval = xv[(q * S + kx) * CIN + ci];
            acc[q][4 * j4] = fmaf(xval, w4.x, acc[q][4 * j4]);
            acc[q][4 * j4 + 1] = fmaf(xval, w4.y, acc[q][4 * j4 + 1]);
            acc[q][4 * j4 + 2] = fmaf(xval, w4.z, acc[q][4 * j4 + 2]);
            acc[q][4 * j4 + 3] = fmaf(xval, w4.w, acc[q][4 * j4 + 3]);
          }
        }
      }
  }

  const int oy = t.oy0 + gy;
  if (oy >= a.ho) return;
  const int ox0 = t.ox0 + gx * kStemPP;
  const long long pix0 = (static_cast<long long>(t.in.n) * a.ho + oy) * a.wo + ox0;  // y row of pixel (oy, ox0)
  // epilogue() (conv_detail.cuh): the same operations in the same order, with its bias and gamma loads
  // taken out of the pixels and its branches out of the values.
#pragma unroll
  for (int j = 0; j < CC; ++j) {
    const float b = a.bias ? load_nc(a.bias + c0 + j) : 0.f;
#pragma unroll
    for (int q = 0; q < kStemPP; ++q) acc[q][j] += b;
  }
  if (a.silu()) {
#pragma unroll
    for (int j = 0; j < CC; ++j)
#pragma unroll
      for (int q = 0; q < kStemPP; ++q) acc[q][j] = stem_silu(acc[q][j]);
  }
  if (a.gamma) {
#pragma unroll
    for (int j = 0; j < CC; ++j) {
      const float g = load_nc(a.gamma + c0 + j);
#pragma unroll
      for (int q = 0; q < kStemPP; ++q) acc[q][j] *= g;
    }
  }
#pragma unroll
  for (int q = 0; q < kStemPP; ++q) {
    if (ox0 + q >= a.wo) break;
    const long long pix = pix0 + q;
    __half* yp = a.y + pix * a.ldy + c0;                                          // (CC)
    const __half* rp = a.residual ? a.residual + pix * a.ldr + c0 : nullptr;      // (CC) or nullptr
    if (a.vec_out) {
#pragma unroll
      for (int h = 0; h < CC / 8; ++h) {
        float o[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = acc[q][8 * h + e];
        if (rp) {
          float r8[8];
          unpack8(load_nc(reinterpret_cast<const uint4*>(rp) + h), r8);
#pragma unroll
          for (int e = 0; e < 8; ++e) o[e] += r8[e];
        }
        reinterpret_cast<uint4*>(yp)[h] = pack8(o);
      }
    } else {
#pragma unroll
      for (int j = 0; j < CC; ++j) {
        float o = acc[q][j];
        if (rp) o += __half2float(load_nc(rp + j));
        yp[j] = __float2half_rn(o);
      }
    }
  }
}

// All output channels of thread tid's pixels of tile t: passes of 16 channels, then one of 8 where
// c_out % 16 == 8.
template <int K, int S, int CIN>
__host__ __device__ __forceinline__ void stem_tile_outputs(const StemParams& a, const StemTile& t, int tid,
                                                           const float* patch, const float* ws) {
  constexpr int kKKC = K * K * CIN;
  int c0 = 0;
  for (; c0 + 16 <= a.c_out; c0 += 16) stem_pass<K, S, CIN, 16>(a, t, tid, patch, ws + c0 * kKKC, c0);
  if (c0 < a.c_out) stem_pass<K, S, CIN, 8>(a, t, tid, patch, ws + c0 * kKKC, c0);
}

template <int K, int S, int CIN>
__global__ void __launch_bounds__(kStemThreads, kStemMinBlocks) conv2d_stem_f16(const StemParams a) {
  pdl_begin();  // launch.cuh: before any activation is touched
  using G = StemGeom<K, S, CIN>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* ws = reinterpret_cast<float*>(smem_raw);   // (c_out * kKKC) weights, blocks of 16 channels
  float* patch = ws + a.c_out * G::kKKC;            // (kPH, kRS) fp32 input patch of the current tile
  __half* raw = reinterpret_cast<__half*>(patch + G::kPH * G::kRS);  // (2, kPH, kRawRS) fp16 (contig only)
  constexpr int kRawElems = G::kPH * G::kRawRS;
  const int tid = threadIdx.x;
  const PatchCopy16 copy;
  const PatchSource src = stem_source(a);

  stem_load_weights<K, CIN>(a, tid, ws);
  if (a.contig) {  // the first tile's raw rows
    if (static_cast<int>(blockIdx.x) < a.tiles)
      patch_copy_raw<G, kStemThreads>(src, stem_tile<K, S, CIN>(a, blockIdx.x).in, tid, raw, copy);
    cp_async_commit();
  }
  int it = 0;
  for (int t = blockIdx.x; t < a.tiles; t += gridDim.x, ++it) {
    const StemTile tile = stem_tile<K, S, CIN>(a, t);
    if (a.contig) {
      // The next tile's raw rows go into the buffer the previous tile's convert pass read (every thread
      // left it at that pass's barrier); then this tile's rows, landed, become the fp32 patch.
      const int next = t + static_cast<int>(gridDim.x);
      if (next < a.tiles)
        patch_copy_raw<G, kStemThreads>(src, stem_tile<K, S, CIN>(a, next).in, tid, raw + ((it + 1) & 1) * kRawElems,
                                        copy);
      cp_async_commit();
      cp_async_wait<1>();  // this tile's group has landed for this thread ...
      __syncthreads();     // ... and for every thread; every thread is done with the previous patch
      patch_convert<G, kStemThreads>(src, tile.in, tid, raw + (it & 1) * kRawElems, patch);
    } else {
      __syncthreads();  // every thread is done with the previous patch
      patch_gather<G, kStemThreads>(src, tile.in, tid, patch);
    }
    __syncthreads();  // the patch (and, at the first tile, the weights) are complete
    stem_tile_outputs<K, S, CIN>(a, tile, tid, patch, ws);
  }
  if (a.contig) cp_async_wait<0>();
}

template <int K, int S, int CIN>
void launch_stem(const StemParams& a, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_stem_f16<K, S, CIN>;
  const int smem = stem_smem_bytes<K, S, CIN>(a.c_out, a.contig);
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), smem));
  const int grid = persistent_grid(kKernel, kStemThreads, smem, a.tiles);
  launch_kernel(kKernel, dim3(static_cast<unsigned>(grid)), dim3(kStemThreads), static_cast<std::size_t>(smem), stream, a);
}

template <int K, int S>
void launch_stem_cin(const StemParams& a, cudaStream_t stream) {
  switch (a.c_in) {
    case 1: launch_stem<K, S, 1>(a, stream); break;
    case 2: launch_stem<K, S, 2>(a, stream); break;
    case 3: launch_stem<K, S, 3>(a, stream); break;
    default: launch_stem<K, S, 4>(a, stream); break;
  }
}

template <int K>
void launch_stem_stride(const StemParams& a, cudaStream_t stream) {
  if (a.stride == 1) launch_stem_cin<K, 1>(a, stream);
  else launch_stem_cin<K, 2>(a, stream);
}

}  // namespace

bool conv2d_stem_f16_supports(const ConvShape& s) {
  return s.groups == 1 && s.c_in >= 1 && s.c_in <= 4 && s.c_out >= 8 && s.c_out <= 128 && s.c_out % 8 == 0 &&
         (s.k == 1 || s.k == 3 || s.k == 5 || s.k == 7) && (s.stride == 1 || s.stride == 2) && s.dilation == 1 &&
         s.pad >= 0;
}

void launch_conv2d_stem_f16(const ConvParams<__half>& p, cudaStream_t stream) {
  StemParams a;
  static_cast<ConvParams<__half>&>(a) = p;
  const GemmLayout l = gemm_layout(p);
  a.cin_pad = l.cin_pad;
  a.k_pad = l.k_pad;
  a.tiles_x = ceil_div(p.wo, kStemTW);
  a.tiles_y = ceil_div(p.ho, kStemTH);
  const long long tiles = 1LL * a.tiles_x * a.tiles_y * p.batch;  // 102400 at batch 32, 1280x1280, stride 1
  if (tiles <= 0) return;
  a.tiles = static_cast<int>(tiles);
  a.contig = p.ldx == p.c_in;
  const auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  a.vec_out = p.c_out % 8 == 0 && p.ldy % 8 == 0 && aligned(p.y) &&
              (!p.residual || (p.ldr % 8 == 0 && aligned(p.residual)));
  switch (p.k) {
    case 1: launch_stem_stride<1>(a, stream); break;
    case 3: launch_stem_stride<3>(a, stream); break;
    case 5: launch_stem_stride<5>(a, stream); break;
    default: launch_stem_stride<7>(a, stream); break;
  }
}

}  // namespace yolo12::cuda::conv_detail
