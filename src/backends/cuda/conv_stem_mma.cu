// src/backends/cuda/conv_stem_mma.cu - conv2d_stem_mma: the network's stem (3x3 stride 2 from RGB, c_out 16..128)
// on the tensor cores: mma.sync m16n8k16 with K = 27 (two k16 steps), fp32 accumulate, the fused epilogue.
//
// Why: conv2d_stem_f16 (conv_stem.cu) computes the stem with fp32 FMAs, 27 per output value. At batch 32 on the
// H200 it took 0.19 ms for yolo12n's 3->16 (4.4x its memory floor of 0.044 ms) and 0.84 ms for yolo12x's 3->96
// (5x its 0.17 ms; twelfth session's per-op profiles). On the tensor cores the 27 products of a value are a
// fraction of one MMA, so what is left is moving the input patch into shared memory, gathering the A fragments
// from it, and the epilogue.
//
// The block (stem_mma_layout.hpp has every index): 128 threads, a persistent grid walking output tiles of 8 x 64
// pixels of one image. Per tile the block copies the input patch (17 x 129 pixels x 3 channels at stride 2) into
// shared memory as halves, element by element (any ldx and alignment; zero outside the image), then each warp
// walks 8 m16 tiles (16 neighbouring output pixels of one row): its A fragments are gathered from the patch
// with one 2-byte load per element at offsets fixed per lane (K column k of a pixel is at the pixel's offset
// plus k_offset(k)), the B fragments (all c_out channels x 32 K columns) stay in registers for the whole
// kernel, and NT n8 blocks x 2 k16 steps of MMAs give the pixels' c_out sums. Epilogue: bias, SiLU (silu_fast),
// gamma, residual, one rounding, channel pairs stored as half2 where the views allow (else one by one).
//
// Requirements (stem_mma_supports): fp16, groups 1, c_in 3, k 3, stride 2, dilation 1, any pad, c_out <= 128.
// Status (fifteenth session): passes test_conv [stem_mma] on the H200 (clean under memcheck and racecheck); the
// layout is also replayed on the CPU by tests/unit/test_stem_mma_layout.cpp. Variant f16_stem_mma is off: slower
// than conv2d_stem_f16 (yolo12x's stem at batch 32: 1.28 vs 0.82 ms).
#include <cstdint>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "launch.cuh"
#include "mma.cuh"
#include "stem_mma_layout.hpp"

namespace yolo12::cuda::conv_detail {

namespace {

namespace sm = stem_mma;  // stem_mma_layout.hpp

constexpr int kStemCin = 3, kStemStride = 2;

struct StemMmaParams {
  ImplicitGemmParams<__half> g;
  int tiles_x = 0, tiles_y = 0, tiles = 0;  // output tiles per row band, bands per image, all tiles
};

// NT n8 blocks of output channels (c_out <= 8 NT).
template <int NT>
__global__ void __launch_bounds__(sm::kThreads) conv2d_stem_mma(const StemMmaParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  using G = sm::Geom<kStemCin, kStemStride>;
  const ImplicitGemmParams<__half>& a = p.g;
  __shared__ __half patch[G::kPatch];  // (kPH, kRS) halves
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const __half zero = __float2half_rn(0.f);

  // The B fragments of every n8 block and k step, for the whole kernel (zero past c_out and past K).
  std::uint32_t bf[NT][2][2];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        __half h2[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          int n, k;
          sm::b_element(lane, s, j, r, h, n, k);
          h2[h] = n < a.n_g && k < G::kKK ? a.w[sm::w_offset<kStemCin>(n, k, a.k_pad, a.cin_pad)] : zero;
        }
        bf[j][s][r] = pack_halves(h2[0], h2[1]);
      }
  // This lane's A elements: register r, half h of k step s is K column k of row lane / 4 (r even) or lane / 4 + 8
  // (r odd) of the m16 tile, the same K column for r and r + 1: its patch offset from the row's pixel, or -1 past K.
  int koff[2][2][2];
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int row, k;
        sm::a_element(lane, s, 2 * r2, h, row, k);
        koff[s][r2][h] = k < G::kKK ? sm::k_offset<kStemCin, kStemStride>(k) : -1;
      }
  const bool pairs = a.pair_out;

  for (int t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const int per_image = p.tiles_x * p.tiles_y;
    const int img = t / per_image, rest = t - img * per_image;
    const int oy0 = (rest / p.tiles_x) * sm::kTH, ox0 = (rest % p.tiles_x) * sm::kTW;
    const int iy0 = oy0 * kStemStride - a.pad, ix0 = ox0 * kStemStride - a.pad;
    const __half* ximg = a.x + static_cast<long long>(img) * a.h * a.w_in * a.ldx;  // (H, W, ldx)

    __syncthreads();  // every warp is done with the previous tile's patch
    for (int pr = 0; pr < G::kPH; ++pr) {
      const int iy = iy0 + pr;
      const bool row_inside = iy >= 0 && iy < a.h;
      for (int i = tid; i < G::kRun; i += sm::kThreads) {
        int px, c;
        sm::patch_element<kStemCin>(i, px, c);
        const int ix = ix0 + px;
        patch[pr * G::kRS + i] =
            row_inside && ix >= 0 && ix < a.w_in ? ximg[(static_cast<long long>(iy) * a.w_in + ix) * a.ldx + c] : zero;
      }
    }
    __syncthreads();

#pragma unroll 1
    for (int i = 0; i < sm::kM16PerWarp; ++i) {
      int oy_l, ox_l;
      sm::m16_origin(warp + sm::kWarps * i, oy_l, ox_l);
      const int oy = oy0 + oy_l;
      if (oy >= a.ho || ox0 + ox_l >= a.wo) continue;  // uniform over the warp
      std::uint32_t af[2][4];
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          int row, k;
          sm::a_element(lane, s, r, 0, row, k);
          const __half* px = patch + sm::pixel_offset<kStemCin, kStemStride>(oy_l, ox_l + row);
          const int* off = koff[s][r / 2];
          af[s][r] = pack_halves(off[0] >= 0 ? px[off[0]] : zero, off[1] >= 0 ? px[off[1]] : zero);
        }
      float acc[NT][4];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll
        for (int s = 0; s < 2; ++s) mma_16816(acc[j], af[s], bf[j][s][0], bf[j][s][1]);
      }
      // Epilogue: D registers 0-1 are row lane / 4, 2-3 row lane / 4 + 8, channels 8 j + 2 (lane % 4) + 0/1.
#pragma unroll
      for (int half_rows = 0; half_rows < 2; ++half_rows) {
        int row, n;
        sm::d_element(lane, 0, 2 * half_rows, row, n);
        const int ox = ox0 + ox_l + row;
        if (ox >= a.wo) continue;
        const long long m = (static_cast<long long>(img) * a.ho + oy) * a.wo + ox;
        __half* yp = a.y + m * a.ldy;
        const __half* rp = a.residual ? a.residual + m * a.ldr : nullptr;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          sm::d_element(lane, j, 2 * half_rows, row, n);
          if (n >= a.n_g) continue;
          float v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x = acc[j][2 * half_rows + e] + (a.bias && n + e < a.n_g ? __ldg(a.bias + n + e) : 0.f);
            if (a.silu()) x = silu_fast(x);
            if (a.gamma && n + e < a.n_g) x *= __ldg(a.gamma + n + e);
            if (rp && n + e < a.n_g) x += __half2float(rp[n + e]);
            v[e] = x;
          }
          if (pairs && n + 1 < a.n_g) {
            *reinterpret_cast<__half2*>(yp + n) = __floats2half2_rn(v[0], v[1]);
          } else {
            yp[n] = __float2half_rn(v[0]);
            if (n + 1 < a.n_g) yp[n + 1] = __float2half_rn(v[1]);
          }
        }
      }
    }
  }
}

template <int NT>
void launch_stem_mma(const StemMmaParams& p, int max_grid, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_stem_mma<NT>;
  launch_kernel(kKernel, static_cast<unsigned>(persistent_grid(kKernel, sm::kThreads, 0, p.tiles, max_grid)),
                sm::kThreads, 0, stream, p);
}

}  // namespace

bool stem_mma_supports(const ConvShape& s) {
  return s.groups == 1 && s.c_in == kStemCin && s.k == sm::kK && s.stride == kStemStride && s.dilation == 1 &&
         s.pad >= 0 && s.c_out >= 1 && s.c_out <= 128;
}

void launch_conv2d_stem_mma(const ConvParams<__half>& cp, cudaStream_t stream, int max_grid) {
  StemMmaParams p;
  p.g = make_params(cp);
  p.tiles_x = ceil_div(cp.wo, sm::kTW);
  p.tiles_y = ceil_div(cp.ho, sm::kTH);
  const long long tiles = 1LL * cp.batch * p.tiles_x * p.tiles_y;
  p.tiles = static_cast<int>(tiles);
  const int blocks8 = ceil_div(cp.c_out, 8);
  if (blocks8 <= 2) launch_stem_mma<2>(p, max_grid, stream);
  else if (blocks8 <= 4) launch_stem_mma<4>(p, max_grid, stream);
  else if (blocks8 <= 8) launch_stem_mma<8>(p, max_grid, stream);
  else if (blocks8 <= 12) launch_stem_mma<12>(p, max_grid, stream);
  else launch_stem_mma<16>(p, max_grid, stream);
}

}  // namespace yolo12::cuda::conv_detail
