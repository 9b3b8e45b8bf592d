// src/backends/cuda/halo_wgmma_layout.hpp - the layout arithmetic of conv2d_halo_wgmma (conv_halo_wgmma.cu), at stride
// 1 or 2: which block computes which output tile, what each 16-byte copy of a pipeline stage brings, where each wgmma
// operand starts in shared memory, and which output pixel and channel an accumulator holds. Plain C++, so
// that the kernel and its CPU replay (tests/unit/test_halo_wgmma_layout.cpp, which emulates wgmma's operand
// reads from the same offsets) share one copy of it.
//
// The GEMM (conv_gemm.cuh): output pixel (b, oy, ox) x output channel n, K = tap * cin_pad + ci with
// tap = ky * 3 + kx, input pixel (S oy - pad + ky, S ox - pad + kx); the packed weights are (n_g, k_pad) rows.
// A block: 256 threads = two warpgroups; output tile = 16 rows x 8P columns of one image x BN channels;
// warpgroup w computes output rows [8 w, 8 w + 8), as P patches of 8 x 8 pixels (one m64 wgmma each).
// K stage kt: input channels [16 kt, 16 kt + 16), two chunks of 8 (16 bytes each).
// A stage in shared memory (byte offsets from its start):
//   halo  [2 chunks][kPix halo pixels][16 B]: slot chunk * kPix + pixel at 16 x slot; at stride 1 pixel =
//         hy * kPW + hx, the input pixel (oy0 - pad + hy, ox0 - pad + hx), zero outside the image (stride 2:
//         two planes by column parity, Tile);
//   B     [9 taps][2 chunks][BN rows][16 B] from kHaloBytes: slot (tap * 2 + chunk) * BN + n at
//         kHaloBytes + 16 x slot, weight row n0 + n (zero past n_g) at K columns tap * cin_pad + 16 kt + 8 chunk.
// The wgmma operands (K-major, no swizzle: core matrices of 8 rows x 16 bytes, rows 16 bytes apart):
//   A of warpgroup w, patch q, tap (ky, kx): starts at halo pixel (8 w + ky, 8 q + kx) (stride 1); the 8
//     core-matrix rows along M are 8 output rows (sbo = S halo rows, S kPW x 16 bytes), the 2 along K the two
//     chunks (lbo = kPix x 16 bytes). Row e of the m64 is output pixel (8 w + e / 8, 8 q + e % 8) of the tile.
//   B of tap t: starts at kHaloBytes + t x 2 BN x 16; 8 rows of N per core matrix (sbo 128 bytes), the two
//     chunks lbo = BN x 16 bytes apart.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::halo_wgmma {

constexpr int kK = 3;  // the kernel size
constexpr int kTaps = kK * kK;
constexpr int kThreads = 256;  // two warpgroups
constexpr int kTH = 16;        // output rows per tile
constexpr int kCK = 16;        // input channels per K stage
constexpr int kAlign = 128;    // the stages' alignment in shared memory
constexpr int kMinStages = 3, kMaxStages = 4;

// The output tile of P 8 x 8 patches per warpgroup (16 x 8P pixels) at stride S (1 or 2) and its halo stage.
// At stride 1 the halo is one plane of 18 x (8P + 2) pixels. At stride 2 output pixel ox reads input columns
// 2 ox + kx, so the halo's 33 rows are split by column parity into two planes of 8P + 1 columns (even, odd):
// tap kx then reads 8 consecutive pixels of one plane (kx 0 and 2 the even plane from column ox and ox + 1,
// kx 1 the odd one from ox), as a core matrix needs; the odd plane's last column is loaded but never read.
template <int P, int S = 1>
struct Tile {
  static_assert(S == 1 || S == 2, "stride 1 or 2");
  static constexpr int kTW = 8 * P;                            // output columns
  static constexpr int kHH = (kTH - 1) * S + kK;               // halo rows
  static constexpr int kPlanes = S;                            // halo planes (column parities)
  static constexpr int kPW = S == 1 ? kTW + kK - 1 : kTW + 1;  // columns per plane
  static constexpr int kPix = kPlanes * kHH * kPW;             // halo pixels
  static constexpr int kCopies = 2 * kPix;                     // 16-byte halo copies per stage: [2 chunks][kPix]
  static constexpr int kHaloBytes = kCopies * 16;
  static constexpr int kALbo = kPix * 16;     // A: between the two 8-channel chunks
  static constexpr int kASbo = S * kPW * 16;  // A: between output rows
};

// A stage is [halo | B], kStage bytes (a multiple of kAlign); after the K loop the fp32 C tile (2P x 64 rows
// of kCRow floats) reuses the stages.
template <int BN, int P, int S = 1>
struct Geom {
  static constexpr int kBCopies = kTaps * 2 * BN;
  static constexpr int kBBytes = kBCopies * 16;
  static constexpr int kStage = (Tile<P, S>::kHaloBytes + kBBytes + kAlign - 1) / kAlign * kAlign;
  static constexpr int kBLbo = BN * 16;  // B: between the two 8-channel chunks
  static constexpr int kBSbo = 128;      // B: between groups of 8 output channels
  static constexpr int kCRow = BN + 8;   // floats per staged output row
  static constexpr int kCRows = 2 * P * 64;
  static constexpr int kCTile = kCRows * kCRow * 4;
  static constexpr int bytes(int stages) { return (stages * kStage > kCTile ? stages * kStage : kCTile) + kAlign; }
};

// The tile of block `block`: pixel tiles in (image, row band, column) order, the column tile of BN channels
// fastest (so the blocks of one pixel tile run together and read its halo from L2).
struct BlockTile {
  int img, oy0, ox0, n0;
};
YOLO12_HOST_DEVICE inline BlockTile block_tile(int block, int tiles_x, int tiles_y, int col_tiles, int tw, int bn) {
  const int t = block / col_tiles;
  const int per_image = tiles_x * tiles_y;
  const int img = t / per_image, rest = t - img * per_image;
  return {img, (rest / tiles_x) * kTH, (rest % tiles_x) * tw, (block - t * col_tiles) * bn};
}

// The copies are numbered with the 8-channel chunk fastest, so that two neighbouring threads read the two
// halves of one 32-byte sector (a pixel's 16 channels, a weight row's 16 K columns of one tap); each copy's
// 16-byte destination slot in the stage is given with it.
// Halo copy i (< kCopies) of the tile whose first output pixel is (oy0, ox0): its slot (chunk * kPix + pixel,
// pixel = (plane * kHH + hy) * kPW + column), and its element offset from the image's first element at the
// stage's first channel, or -1 where the pixel lies outside the h x w image (the copy writes zeros).
template <int P, int S = 1>
YOLO12_HOST_DEVICE inline int halo_src(int i, int oy0, int ox0, int pad, int h, int w, int ldx, int& slot) {
  using T = Tile<P, S>;
  const int chunk = i & 1, pix = i >> 1;
  slot = chunk * T::kPix + pix;
  const int plane = pix / (T::kHH * T::kPW), rest = pix - plane * (T::kHH * T::kPW);
  const int hy = rest / T::kPW, pc = rest - hy * T::kPW;
  const int iy = oy0 * S - pad + hy, ix = ox0 * S - pad + (S == 1 ? pc : 2 * pc + plane);
  const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
  return inside ? (iy * w + ix) * ldx + chunk * 8 : -1;
}

// Weight copy i (< kBCopies): its slot (in B's slots, (tap * 2 + chunk) * BN + n), its row within the column
// tile (n), and its K column less the stage's first channel (tap * cin_pad + 8 chunk).
template <int BN>
YOLO12_HOST_DEVICE inline void b_copy(int i, int cin_pad, int& n, int& kcol, int& slot) {
  const int chunk = i & 1, rest = i >> 1;
  const int tap = rest / BN;
  n = rest - tap * BN;
  kcol = tap * cin_pad + chunk * 8;
  slot = (tap * 2 + chunk) * BN + n;
}

// Byte offsets from the stage's start of the wgmma operands: A of warpgroup wgi, patch q, tap (its first
// output pixel (8 wgi, 8 q) reads halo row S 8 wgi + ky, column S 8 q + kx); B of tap.
template <int P, int S = 1>
YOLO12_HOST_DEVICE inline int a_start(int wgi, int q, int tap) {
  using T = Tile<P, S>;
  const int ky = tap / kK, kx = tap - ky * kK;
  const int plane = S == 1 ? 0 : kx % 2, pc = S == 1 ? 8 * q + kx : 8 * q + kx / 2;
  return ((plane * T::kHH + S * 8 * wgi + ky) * T::kPW + pc) * 16;
}
template <int BN, int P, int S = 1>
YOLO12_HOST_DEVICE inline int b_start(int tap) {
  return Tile<P, S>::kHaloBytes + tap * 2 * BN * 16;
}

// The m64 accumulator register i of thread `lane` of warp `warp` (0-3) of a warpgroup (wgmma.cuh): its row e
// (0-63) and column (0 to BN - 1).
YOLO12_HOST_DEVICE inline void acc_position(int warp, int lane, int i, int& e, int& col) {
  e = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
  col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
}

// Staged C row r = (wgi P + q) 64 + e: output pixel (dy, dx) of the tile.
template <int P>
YOLO12_HOST_DEVICE inline void staged_pixel(int r, int& dy, int& dx) {
  const int patch = r / 64, e = r % 64;  // patch = wgi * P + q
  dy = 8 * (patch / P) + e / 8;
  dx = 8 * (patch % P) + e % 8;
}

}  // namespace yolo12::cuda::halo_wgmma
