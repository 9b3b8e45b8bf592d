// src/backends/cuda/conv_stem_mma.cu - conv2d_stem_mma: the network's stem (3x3 stride 2 from RGB, c_out up to 128)
// on the tensor cores: mma.sync m16n8k16, K = the window's 27 values in two k16 steps, fp32 accumulate, the fused
// epilogue.
//
// Why: conv2d_stem_f16 (conv_stem.cu) computes the stem with fp32 FMAs, 27 per output value: yolo12x's 3->96 at
// batch 32 is 8.5 G FMAs, and took 0.82-0.84 ms (H200, twelfth and fifteenth sessions), 5x its memory floor of
// about 0.17 ms (79 MB read, 629 MB written). On the tensor cores the 27 products of a value are a fraction of one
// MMA; what is left is the input patch, the epilogue (its SiLU is two MUFU operations per value: about 0.15 ms of
// x's stem at the H200's 16 per SM and clock) and the stores.
//
// Second version (twenty-second session; the first, thirteenth session, took 1.28 ms for x's stem, slower than
// conv2d_stem_f16: it copied its patch element by element at the top of each tile, gathered its A fragments by
// 2-byte loads, tested its fusions per value and stored 4-byte channel pairs across 8 pixel rows per instruction):
// - A block of 256 threads walks output tiles of 8 x 32 pixels of one image (persistent grid). The tile's input
//   patch, 17 rows x 66 pixels x 3 channels, is stem_patch.cuh's: where ldx == 3 its rows are copied raw by
//   cp.async during the previous tile's MMAs and epilogue, then a convert pass aligns them (fp16, zero outside the
//   image); other views are gathered by element. The same code writes conv2d_stem_f16's and the stem pair's patch.
// - K is laid out as 3 tap rows x 10 window values (stem_mma_layout.hpp: window_k_offset; the stem pair's stem uses
//   it too), so every A register is one 4-byte load from the patch at an offset fixed per lane. The B fragments
//   (all c_out channels, both k16 steps) stay in registers for the whole kernel up to 64 channels; from 96 channels
//   (12 n8 blocks) they stay in shared memory, one 16-byte load per n8 block and m16 tile, so that two blocks fit
//   per SM (thirty-first session: in registers the 12-block instance took 158 registers, one block per SM).
// - Warp w takes m16 tiles w and w + 8 (16 neighbouring pixels of one output row), NT n8 blocks of channels.
//   Epilogue: bias, SiLU (a template flag: one branch per launch), gamma from shared memory. Where the output
//   allows 16-byte stores and there is no residual (the network's case), the warp stages its 16 pixels x c_out in
//   shared memory and writes them as 16-byte chunks, whole pixel rows at a time; otherwise the residual is added
//   and channel pairs (or single channels) are stored from the registers.
// Requirements (stem_mma_supports): fp16, groups 1, c_in 3, k 3, stride 2, dilation 1, any pad, c_out <= 128.
// Used under variant f16_stem_mma (on since the twenty-ninth session, for stems of <= 64 channels, and up to 128
// under f16_stem_mma_wide, on since the thirty-first: stem_mma_preferred): test_conv [stem_mma] checks it against the
// reference on a GPU, and
// tests/unit/test_stem_mma_layout.cpp replays the layout on the CPU.
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "stem_mma_layout.hpp"
#include "stem_patch.cuh"

namespace yolo12::cuda::conv_detail {

namespace {

namespace sm = stem_mma;  // stem_mma_layout.hpp

struct StemMmaParams {
  ImplicitGemmParams<__half> g;
  PatchSource src;         // g.x as stem_patch.cuh reads it
  bool staged = false;     // 16-byte stores through the warp's stage (g.vec_out, no residual)
  int tiles_x = 0, tiles_y = 0;
  long long tiles = 0;     // output tiles of all images
};

// NT n8 blocks of output channels (c_out <= 8 NT); kSilu: the conv ends in SiLU.
template <int NT, bool kSilu>
__global__ void __launch_bounds__(sm::kThreads, 2) conv2d_stem_mma(const StemMmaParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  using G = sm::Geom;
  using S = sm::Smem<NT>;
  constexpr bool kBSmem = sm::b_in_smem<NT>();  // B fragments in shared memory (12 and 16 blocks), else registers
  constexpr int kNH = NT >= 12 ? 2 : 1, NC = NT / kNH;
  const ImplicitGemmParams<__half>& a = p.g;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* patch = reinterpret_cast<__half*>(smem_raw + S::kPatchOff);  // (kPH, kRS): the tile's input patch
  __half* raw = reinterpret_cast<__half*>(smem_raw + S::kRawOff);      // (kPH, kRawRS): raw rows (ldx == 3 only)
  float* bias_s = reinterpret_cast<float*>(smem_raw + S::kBiasOff);    // (8 NT): 0 past c_out or without bias
  float* gamma_s = reinterpret_cast<float*>(smem_raw + S::kGammaOff);  // (8 NT): 1 past c_out or without gamma
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  __half* stage = reinterpret_cast<__half*>(smem_raw + S::kStageOff) + warp * S::kStageWarp;  // (16, kStageRS)
  std::uint32_t* b_s = reinterpret_cast<std::uint32_t*>(smem_raw + S::kBOff);  // (NT, 32, 4) where kBSmem

  // The B fragments of every n8 block and k step, for the whole kernel (zero past c_out and where K has no weight):
  // in this lane's registers, or (kBSmem) in shared memory for every lane, ordered by the first tile's barrier.
  const auto w_bits = [&](long long o) { return static_cast<std::uint32_t>(__half_as_ushort(load_nc(a.w + o))); };
  std::uint32_t bf[kBSmem ? 1 : NT][2][2];
  if constexpr (kBSmem) {
    for (int i = tid; i < NT * 32 * 4; i += sm::kThreads) {
      const int j = i / 128, l = i / 4 % 32, s = i / 2 % 2, r = i % 2;
      b_s[sm::b_smem_index(j, l, s, r)] = sm::b_register(l, s, j, r, a.n_g, a.k_pad, a.cin_pad, w_bits);
    }
  } else {
    sm::b_fragments<NT>(lane, a.n_g, a.k_pad, a.cin_pad, w_bits, bf);
  }
  for (int i = tid; i < 8 * NT; i += sm::kThreads) {
    bias_s[i] = a.bias && i < a.n_g ? load_nc(a.bias + i) : 0.f;
    gamma_s[i] = a.gamma && i < a.n_g ? load_nc(a.gamma + i) : 1.f;
  }
  int koff[2][2];  // this lane's A registers' K offsets in the patch (stem_mma_layout.hpp)
  sm::lane_k_offsets(lane, G::kRS, koff);

  const bool contig = p.src.ldx == G::kCin;  // the patch rows are copied raw by cp.async, one tile ahead
  const auto patch_of = [&](long long t) {
    int iy0, ix0;
    const sm::Tile tile = sm::tile_of(t, p.tiles_x, p.tiles_y);
    sm::patch_origin(tile, a.pad, iy0, ix0);
    return patch_tile<G>(p.src, tile.n, iy0, ix0);
  };
  patch_first_tile<G, sm::kThreads>(p.src, contig, blockIdx.x < p.tiles, patch_of(blockIdx.x), tid, raw);

  for (long long t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const sm::Tile tile = sm::tile_of(t, p.tiles_x, p.tiles_y);
    // The patch (stem_patch.cuh). Its first barrier also orders the bias, gamma and (kBSmem) B stores before their
    // reads.
    const long long next = t + gridDim.x;
    patch_tile_ready<G, sm::kThreads>(p.src, contig, patch_of(t), next < p.tiles, patch_of(next), tid, raw, patch);

#pragma unroll 1
    for (int i = 0; i < sm::kM16PerWarp; ++i) {
      int oy_l, ox_l;
      sm::m16_origin(warp + sm::kWarps * i, oy_l, ox_l);
      const int oy = tile.oy0 + oy_l, ox_first = tile.ox0 + ox_l;
      if (oy >= a.ho || ox_first >= a.wo) continue;  // uniform over the warp
      int base[2];  // rows lane / 4 and lane / 4 + 8 (within the patch even past the output's right edge)
#pragma unroll
      for (int h = 0; h < 2; ++h) base[h] = sm::pixel_offset(oy_l, ox_l + lane / 4 + 8 * h);
      const long long m0 = (static_cast<long long>(tile.n) * a.ho + oy) * a.wo + ox_first;  // the row's pixel 0
      // The n8 blocks in kNH groups of NC (two groups from 12 blocks: fewer accumulators live, the A registers
      // loaded again).
#pragma unroll
      for (int nh = 0; nh < kNH; ++nh) {
        float acc[NC][4];
#pragma unroll
        for (int j = 0; j < NC; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
        std::uint32_t af[2][4];  // both k steps' A
#pragma unroll
        for (int s = 0; s < 2; ++s)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            af[s][r] = *reinterpret_cast<const std::uint32_t*>(patch + base[r & 1] + koff[s][r >> 1]);
#pragma unroll
        for (int j = 0; j < NC; ++j) {
          std::uint32_t b[2][2];  // block nh NC + j's B at both k steps
          if constexpr (kBSmem) {
            const uint4 v = *reinterpret_cast<const uint4*>(b_s + sm::b_smem_index(nh * NC + j, lane, 0, 0));
            b[0][0] = v.x;
            b[0][1] = v.y;
            b[1][0] = v.z;
            b[1][1] = v.w;
          } else {
#pragma unroll
            for (int s = 0; s < 2; ++s) b[s][0] = bf[nh * NC + j][s][0], b[s][1] = bf[nh * NC + j][s][1];
          }
#pragma unroll
          for (int s = 0; s < 2; ++s) mma_16816(acc[j], af[s], b[s][0], b[s][1]);
        }
#pragma unroll
        for (int j = 0; j < NC; ++j)
#pragma unroll
          for (int e = 0; e < 4; e += 2) {
            int row, n;
            sm::d_element(lane, nh * NC + j, e, row, n);
            const float v0 = epilogue_with<kSilu>(acc[j][e], bias_s[n], gamma_s[n]);
            const float v1 = epilogue_with<kSilu>(acc[j][e + 1], bias_s[n + 1], gamma_s[n + 1]);
            if (p.staged) {  // D (row, n) to the stage; the 16-byte stores follow
              *reinterpret_cast<__half2*>(stage + sm::stage_offset<NT>(row, n)) = __floats2half2_rn(v0, v1);
              continue;
            }
            if (n >= a.n_g || ox_first + row >= a.wo) continue;
            __half* yp = a.y + (m0 + row) * a.ldy + n;
            const bool two = n + 1 < a.n_g;
            float w0 = v0, w1 = v1;
            if (a.residual) {
              const __half* rp = a.residual + (m0 + row) * a.ldr + n;
              w0 += __half2float(rp[0]);
              if (two) w1 += __half2float(rp[1]);
            }
            if (a.pair_out && two) {
              *reinterpret_cast<__half2*>(yp) = __floats2half2_rn(w0, w1);
            } else {
              yp[0] = __float2half_rn(w0);
              if (two) yp[1] = __float2half_rn(w1);
            }
          }
      }
      if (p.staged) {  // 16-byte chunks of whole pixel rows from the stage to y
        __syncwarp();
        const int chunks = a.n_g / 8;
        for (int c = lane; c < 16 * chunks; c += 32) {
          int row, c0;
          sm::stage_chunk(c, chunks, row, c0);
          if (ox_first + row < a.wo)
            *reinterpret_cast<uint4*>(a.y + (m0 + row) * a.ldy + c0) =
                *reinterpret_cast<const uint4*>(stage + sm::stage_offset<NT>(row, c0));
        }
        __syncwarp();  // the stage is read before the next m16 tile writes it
      }
    }
  }
  if (contig) cp_async_wait<0>();  // nothing in flight at exit
}

template <int NT, bool kSilu>
void launch_stem_mma(const StemMmaParams& p, int max_grid, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_stem_mma<NT, kSilu>;
  constexpr int kSmem = sm::Smem<NT>::kBytes;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), kSmem));
  const int grid = persistent_grid(kKernel, sm::kThreads, kSmem, p.tiles, max_grid);
  launch_kernel(kKernel, dim3(static_cast<unsigned>(grid)), dim3(sm::kThreads), static_cast<std::size_t>(kSmem),
                stream, p);
}

template <int NT>
void launch_stem_mma_silu(const StemMmaParams& p, int max_grid, cudaStream_t stream) {
  if (p.g.silu()) launch_stem_mma<NT, true>(p, max_grid, stream);
  else launch_stem_mma<NT, false>(p, max_grid, stream);
}

}  // namespace

bool stem_mma_supports(const ConvShape& s) {
  return s.groups == 1 && s.c_in == sm::kCin && s.k == sm::kK && s.stride == sm::kStride && s.dilation == 1 &&
         s.pad >= 0 && s.c_out >= 1 && s.c_out <= 128;
}

bool stem_mma_preferred(const ConvShape& s) {
  return stem_mma_supports(s) && (s.c_out <= 64 || conv_variants().f16_stem_mma_wide);
}

void launch_conv2d_stem_mma(const ConvParams<__half>& cp, cudaStream_t stream, int max_grid) {
  StemMmaParams p;
  p.g = make_params(cp);
  p.src = PatchSource{cp.x, cp.ldx, cp.batch, cp.h, cp.w_in};
  p.staged = p.g.vec_out && !cp.residual;
  p.tiles_x = ceil_div(cp.wo, sm::kTW);
  p.tiles_y = ceil_div(cp.ho, sm::kTH);
  p.tiles = 1LL * cp.batch * p.tiles_x * p.tiles_y;
  if (p.tiles <= 0) return;
  const int blocks8 = ceil_div(cp.c_out, 8);
  if (blocks8 <= 2) launch_stem_mma_silu<2>(p, max_grid, stream);
  else if (blocks8 <= 4) launch_stem_mma_silu<4>(p, max_grid, stream);
  else if (blocks8 <= 6) launch_stem_mma_silu<6>(p, max_grid, stream);
  else if (blocks8 <= 8) launch_stem_mma_silu<8>(p, max_grid, stream);
  else if (blocks8 <= 12) launch_stem_mma_silu<12>(p, max_grid, stream);
  else launch_stem_mma_silu<16>(p, max_grid, stream);
}

}  // namespace yolo12::cuda::conv_detail
