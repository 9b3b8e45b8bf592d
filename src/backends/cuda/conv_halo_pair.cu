// src/backends/cuda/conv_halo_pair.cu - conv2d_halo_pair_f16 (conv_halo_pair.cuh): a bottleneck's two 3x3 convs at
// stride 1 in one kernel, cv1's map on chip.
//
// Why: each of the two convs on its own (conv2d_halo_f16, conv_halo.cu) writes or reads the map through memory and
// pays a kernel's start and tail; at 8-32 channels the MMAs are a small part of either. Here a block loads the
// input tile with a halo of 2 once, computes cv1 over the tile plus a halo of 1 into shared memory (about 1.3-1.4x
// cv1's outputs, recomputed at the tile borders), and cv2 from there. DRAM sees the input, the residual and the output.
//
// The layout and addressing are halo_pair_layout.hpp's (the CPU replay, tests/unit/test_halo_pair_layout.cpp, takes
// the same functions). Both steps are conv2d_halo_f16's: ldmatrix A rows through a K table from a tile with its
// halo, all of B resident, mma.sync m16n8k16 with fp32 sums in K order, so each value is the one that kernel computes
// (cv1's map rounded to fp16 once, as it would be stored); the final epilogue (bias, SiLU, gamma, residual, 16-byte
// stores) is conv2d_narrow_f16's. A warp runs its m16 tiles two at a time where it has two (one K table entry and one
// set of B fragments per k16 step for both; thirty-seventh session: the kernel is bound by its instructions, not its
// bytes). The grid is persistent; the next tile's input is copied by cp.async (copy_image_tile) during this one (two
// stages).
#include "conv_halo_pair.cuh"

#include <cstdint>
#include <string>

#include "common.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "conv_narrow.cuh"
#include "halo_pair_layout.hpp"
#include "launch.cuh"
#include "mma.cuh"
#include "yolo12/errors.hpp"

namespace yolo12::cuda::conv_detail {

namespace {

namespace hp = halo_pair;

struct HaloPairParams {
  ImplicitGemmParams<__half> g1;  // cv1: x, weights, bias, gamma, act (y unused: the map stays on chip)
  ImplicitGemmParams<__half> g2;  // cv2: weights, bias, gamma, act, residual, y (x unused)
  hp::Layout layout;
  int tiles;                      // batch * tiles_y * tiles_x
};

// Two m16 tiles' accumulators, and tile m (0 or 1, run time) of them by selects, so that a loop over the tiles keeps
// one copy of its epilogue and no accumulator leaves registers. Where a warp has one tile, both slots hold it
// (fill_both), so that pick_tile reads no indeterminate value (its selects then fold away).
template <int NI>
__device__ __forceinline__ void fill_both(float (&acc)[2][NI][4], const float (&one)[1][NI][4]) {
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[0][j][e] = acc[1][j][e] = one[0][j][e];
}
template <int NI>
struct TileAcc {
  float v[NI][4];
};
template <int NI>
__device__ __forceinline__ TileAcc<NI> pick_tile(const float (&acc)[2][NI][4], int m) {
  TileAcc<NI> t;
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) t.v[j][e] = m == 0 ? acc[0][j][e] : acc[1][j][e];
  return t;
}

// Blocks per SM the registers must allow: the narrowest pairs fit four by shared memory (yolo12n's 16->8->16 at
// 160x160, the largest grid), 16->16->16 three; the others two. Two m16 tiles per warp would otherwise take the
// narrowest to 72 registers, three blocks (thirty-seventh session, ptxas).
template <int BN1, int BN2>
constexpr int kPairMinBlocks = BN1 + BN2 <= 24 ? 4 : BN1 + BN2 <= 32 ? 3 : 2;

template <int BN1, int BN2>
__global__ void __launch_bounds__(hp::kThreads, (kPairMinBlocks<BN1, BN2>))
    conv2d_halo_pair_f16(const HaloPairParams p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  static_assert((BN1 == 8 || BN1 % 16 == 0) && (BN2 == 8 || BN2 % 16 == 0), "B fragments: one n8 block or pairs");
  constexpr int NI1 = BN1 / 8, NI2 = BN2 / 8;
  const ImplicitGemmParams<__half>& a1 = p.g1;
  const ImplicitGemmParams<__half>& a2 = p.g2;
  const hp::Layout& L = p.layout;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* B1 = reinterpret_cast<__half*>(smem_raw);                        // (BN1, b1_row)
  __half* B2 = reinterpret_cast<__half*>(smem_raw + L.b2_off);             // (BN2, b2_row)
  int* tab1 = reinterpret_cast<int*>(smem_raw + L.tab1_off);               // (k16_1 / 8)
  int* tab2 = reinterpret_cast<int*>(smem_raw + L.tab2_off);               // (k16_2 / 8)
  const __half* zero = reinterpret_cast<const __half*>(smem_raw + L.zero_off);  // (8) zeros
  __half* In = reinterpret_cast<__half*>(smem_raw + L.in_off);             // (kStages, in_h, kInW, in_row)
  __half* Map = reinterpret_cast<__half*>(smem_raw + L.map_off);           // (map_h, kMapW, map_row)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  float* Cs = reinterpret_cast<float*>(smem_raw + L.c_off) + warp * hp::kStageRows * L.c_row;  // (8, c_row)
  const CpAsyncZfill16<false> copy{a1.x};  // each input pixel is read by one or two tiles: no need for L1

  for (int j = tid; j < L.k16_1 / kChunk; j += hp::kThreads)
    tab1[j] = hp::k_group_offset(j, L.c_in, L.k1, hp::kInW, L.in_row);
  for (int j = tid; j < L.k16_2 / kChunk; j += hp::kThreads)
    tab2[j] = hp::k_group_offset(j, L.c_mid, L.k2, hp::kMapW, L.map_row);
  if (tid == 0) *reinterpret_cast<uint4*>(smem_raw + L.zero_off) = make_uint4(0, 0, 0, 0);

  auto load_input = [&](int t, int stage) {
    const hp::Tile at = hp::tile_at(L, a1.h, a1.w_in, t);
    const __half* ximg = a1.x + static_cast<long long>(at.n) * a1.h * a1.w_in * a1.ldx;  // (H, W, ldx)
    copy_image_tile(ximg, a1.h, a1.w_in, a1.ldx, at.oy0 - 2, at.ox0 - 2, L.in_h, hp::kInW, L.c_in / kChunk,
                    In + stage * L.in_stage_halves, L.in_row, tid, hp::kThreads, copy);
  };

  float2 bias1[NI1], gamma1[NI1], bias2[NI2], gamma2[NI2];
  narrow_lane_bias_gamma<NI1>(a1, lane, bias1, gamma1);
  narrow_lane_bias_gamma<NI2>(a2, lane, bias2, gamma2);

  // The weights travel in the first tile's cp.async group.
  narrow_load_weights(a1, BN1, L.k16_1, L.b1_row, B1, tid, hp::kThreads, copy);
  narrow_load_weights(a2, BN2, L.k16_2, L.b2_row, B2, tid, hp::kThreads, copy);
  if (static_cast<int>(blockIdx.x) < p.tiles) load_input(blockIdx.x, 0);
  cp_async_commit();

  for (int it = 0, t = blockIdx.x; t < p.tiles; ++it, t += gridDim.x) {
    const int next = t + gridDim.x;  // into the stage tile it - 1 used (freed at the loop's last barrier)
    if (next < p.tiles) load_input(next, (it + 1) % hp::kStages);
    cp_async_commit();
    cp_async_wait<1>();  // this tile's input (and the weights) have landed for this thread
    __syncthreads();     // ... for every thread; the tables and the zero row are written

    const hp::Tile at = hp::tile_at(L, a1.h, a1.w_in, t);
    const __half* in_stage = In + (it % hp::kStages) * L.in_stage_halves;

    // Step 1, cv1: the map tile, m16 tiles warp, warp + 8, ... two at a time (they share the K table's entries and the
    // B fragments), the odd one alone. Rows past the map repeat its last pixel (not stored).
    // Accumulator elements 0-1 hold map pixel mt * 16 + lane / 4, elements 2-3 the pixel 8 further; zero where the
    // pixel lies outside the image (cv2's padding), rounded to fp16 once as conv2d_halo_f16 stores it. Every value is
    // finished first, straight-line, and only the stores are conditional: a test around each value had the compiler
    // put every SiLU in its own branch region (thirty-sixth session, the SASS: 23 convergence regions per m16 tile).
    auto map_epilogue = [&](const TileAcc<NI1>& t, int mt) {
      const auto& acc = t.v;
      with_epilogue(a1.silu(), [&](auto fin) {
        __half2 v[2][NI1];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int q = mt * 16 + lane / 4 + h * 8;
          const int gy = at.oy0 - 1 + q / hp::kMapW, gx = at.ox0 - 1 + q % hp::kMapW;
          const bool inside = gy >= 0 && gy < a1.ho && gx >= 0 && gx < a1.wo;
#pragma unroll
          for (int j = 0; j < NI1; ++j) {
            const __half2 f = __floats2half2_rn(fin(acc[j][2 * h], bias1[j].x, gamma1[j].x),
                                                fin(acc[j][2 * h + 1], bias1[j].y, gamma1[j].y));
            v[h][j] = inside ? f : __floats2half2_rn(0.f, 0.f);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int q = mt * 16 + lane / 4 + h * 8;
          __half* mrow = Map + q * L.map_row;
#pragma unroll
          for (int j = 0; j < NI1; ++j) {
            const int n = j * 8 + (lane % 4) * 2;  // c_mid is a multiple of 8: n and n + 1 are both real or neither
            if (q < L.map_pixels && n < L.c_mid) *reinterpret_cast<__half2*>(mrow + n) = v[h][j];
          }
        }
      });
    };
    auto map_row_of = [&](int mt) { return in_stage + hp::map_pixel_input_row(L, hp::map_pixel(L, mt, lane % 16)); };
    const int my_tiles = hp::map_tiles_of_warp(L, warp);
    for (int i = 0; i < my_tiles; i += 2) {
      const int mt = warp + i * hp::kWarps, count = my_tiles - i < 2 ? 1 : 2;
      float acc[2][NI1][4];
      if (count == 2) {
        const __half* const arows[2] = {map_row_of(mt), map_row_of(mt + hp::kWarps)};
        mma_rows_by_table<NI1, 2>(acc, arows, tab1, zero, B1, L.b1_row, L.k16_1, lane);
      } else {
        float one[1][NI1][4];
        mma_rows_by_table<NI1>(one, map_row_of(mt), tab1, zero, B1, L.b1_row, L.k16_1, lane);
        fill_both(acc, one);
      }
#pragma unroll 1
      for (int m = 0; m < count; ++m) map_epilogue(pick_tile(acc, m), mt + m * hp::kWarps);  // one copy of the code
    }
    __syncthreads();  // the map tile is complete

    // Step 2, cv2: warp w takes output rows w * wr .. of the tile, 16 pixels each; two rows at a time where both lie
    // inside the image (wr 2), sharing the K table's entries and the B fragments.
    auto out_epilogue = [&](const TileAcc<NI2>& t, int oy) {
      const auto& acc = t.v;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int ox = at.ox0 + h * 8, count = a2.wo - ox < 8 ? a2.wo - ox : 8;
        if (count <= 0) continue;  // uniform over the warp
        float v[NI2][2];
        with_epilogue(a2.silu(), [&](auto fin) {
#pragma unroll
          for (int j = 0; j < NI2; ++j) {
            v[j][0] = fin(acc[j][2 * h], bias2[j].x, gamma2[j].x);
            v[j][1] = fin(acc[j][2 * h + 1], bias2[j].y, gamma2[j].y);
          }
        });
        narrow_stage<NI2>(Cs, L.c_row, lane, v);
        __syncwarp();
        const int m0 = (at.n * a2.ho + oy) * a2.wo + ox;
        narrow_store_staged<BN2>(a2, Cs, L.c_row, m0, lane, m0 + count);
        __syncwarp();  // the staging rows are rewritten by the next pass
      }
    };
    for (int r = 0; r < L.wr;) {
      const int y = warp * L.wr + r;
      const int oy = at.oy0 + y;
      if (oy >= a2.ho) break;  // uniform over the warp; later rows are further down
      const int count = r + 1 < L.wr && oy + 1 < a2.ho ? 2 : 1;
      float acc[2][NI2][4];
      if (count == 2) {
        const __half* const arows[2] = {Map + hp::output_map_row(L, y, lane % 16),
                                        Map + hp::output_map_row(L, y + 1, lane % 16)};
        mma_rows_by_table<NI2, 2>(acc, arows, tab2, zero, B2, L.b2_row, L.k16_2, lane);
      } else {
        float one[1][NI2][4];
        mma_rows_by_table<NI2>(one, Map + hp::output_map_row(L, y, lane % 16), tab2, zero, B2, L.b2_row, L.k16_2, lane);
        fill_both(acc, one);
      }
#pragma unroll 1
      for (int m = 0; m < count; ++m) out_epilogue(pick_tile(acc, m), oy + m);
      r += count;
    }
    __syncthreads();  // every warp is done with the map and with this input stage
  }
  cp_async_wait<0>();
}

template <int BN1, int BN2>
void launch_pair(const HaloPairParams& p, int max_grid, cudaStream_t stream) {
  constexpr auto kKernel = conv2d_halo_pair_f16<BN1, BN2>;
  const int smem = p.layout.bytes;
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), smem));
  const int grid = persistent_grid(kKernel, hp::kThreads, smem, p.tiles, max_grid);
  launch_kernel(kKernel, static_cast<unsigned>(grid), hp::kThreads, static_cast<std::size_t>(smem), stream, p);
}

template <int BN1>
void launch_pair_bn2(const HaloPairParams& p, int max_grid, cudaStream_t stream) {
  switch (p.layout.bn2) {
    case 8: launch_pair<BN1, 8>(p, max_grid, stream); break;
    case 16: launch_pair<BN1, 16>(p, max_grid, stream); break;
    default: launch_pair<BN1, 32>(p, max_grid, stream); break;
  }
}

bool k3_s1_p1(const ConvShape& s) {
  return s.k == 3 && s.stride == 1 && s.pad == 1 && s.dilation == 1 && s.groups == 1;
}

long long pair_tiles(const ConvShape& second, int wr) {
  const hp::Layout l = hp::layout(8, 8, 8, wr);  // only th matters
  return 1LL * second.batch * hp::tiles_y(l, second.ho) * hp::tiles_x(second.wo);
}

}  // namespace

bool halo_pair_channels(int c_in, int c_mid, int c_out) {
  const auto ok = [](int c) { return c > 0 && c % kChunk == 0 && c <= hp::kMaxChannels; };
  return ok(c_in) && ok(c_mid) && ok(c_out);
}

bool halo_pair_supports(const ConvShape& first, const ConvShape& second) {
  if (!k3_s1_p1(first) || !k3_s1_p1(second) || second.c_in != first.c_out) return false;
  if (!halo_pair_channels(first.c_in, first.c_out, second.c_out)) return false;
  if (second.batch != first.batch || second.h != first.ho || second.w_in != first.wo) return false;
  return conv_can_implement(first) && conv_can_implement(second);
}

bool halo_pair_views_ok(const ConvParams<__half>& first, const ConvParams<__half>& second) {
  const auto aligned16 = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  return first.x && first.w && second.w && second.y && !first.residual && first.ldx >= first.c_in &&
         first.ldx % kChunk == 0 && aligned16(first.x) && aligned16(first.w) && aligned16(second.w) &&
         second.ldy >= second.c_out && (!second.residual || second.ldr >= second.c_out);
}

// The taller tile (two rows per warp) where its grid fills every block slot at least twice: at batch 32 it won where
// two or more of its blocks share an SM, lost where one does (thirty-seventh session, H100, test_halo_pair "[.bench]"
// with two m16 tiles per warp, the rule's choice against the other: 16->8->16 at 160x160, four blocks, 0.097 against
// 0.114 ms; 16->16->16 at 80x80, three blocks, 0.036-0.037 against 0.039-0.041; 32->16->32 at 80x80, two blocks,
// 0.053 against 0.058; 32->32->32 at 40x40, one block, 0.037 against 0.029-0.030). Before two tiles per warp
// (twenty-fourth session) two blocks lost (32->16->32: 0.069 against 0.062), so the rule asked for three. At batch 1
// (grids under two waves) the shorter tile won on every pair.
int halo_pair_rows_per_warp(const ConvShape& first, const ConvShape& second, const DeviceInfo& dev) {
  const hp::Layout two = hp::layout(first.c_in, first.c_out, second.c_out, 2);
  const long long blocks = static_cast<long long>(dev.smem_per_sm) /
                           (static_cast<long long>(two.bytes) + static_cast<long long>(dev.smem_reserved_per_block));
  return blocks >= 2 && pair_tiles(second, 2) >= 2LL * blocks * dev.sm_count ? 2 : 1;
}

void launch_conv2d_halo_pair_f16(const ConvParams<__half>& first, const ConvParams<__half>& second, cudaStream_t stream,
                                 int rows_per_warp, int max_grid) {
  if (!halo_pair_supports(first, second) || !halo_pair_views_ok(first, second))
    throw Error("conv2d_halo_pair_f16: the pair " + std::to_string(first.c_in) + "->" + std::to_string(first.c_out) +
                "->" + std::to_string(second.c_out) + " (or its views) is not one the kernel takes");
  const int wr = rows_per_warp > 0 ? rows_per_warp : halo_pair_rows_per_warp(first, second, device_info());
  if (wr != 1 && wr != 2) throw Error("conv2d_halo_pair_f16: rows per warp must be 1 or 2, got " + std::to_string(wr));
  HaloPairParams p;
  p.g1 = make_params(first);
  p.g2 = make_params(second);
  p.layout = hp::layout(first.c_in, first.c_out, second.c_out, wr);
  const long long tiles = pair_tiles(second, wr);
  if (tiles <= 0) return;
  if (tiles > 0x7fffffffLL) throw Error("conv2d_halo_pair_f16: too many tiles");
  p.tiles = static_cast<int>(tiles);
  switch (p.layout.bn1) {
    case 8: launch_pair_bn2<8>(p, max_grid, stream); break;
    case 16: launch_pair_bn2<16>(p, max_grid, stream); break;
    default: launch_pair_bn2<32>(p, max_grid, stream); break;
  }
}

}  // namespace yolo12::cuda::conv_detail
