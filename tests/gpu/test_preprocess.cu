// tests/gpu/test_preprocess.cu - the GPU letterbox against the CPU letterbox (src/pre), bit for bit.
//
// Random 8-bit images of many sizes (up- and down-scaling, odd sizes, an image already at the input
// size, 1-pixel images), every pixel format, row pitches larger than the row, fixed and rect geometry,
// batched in one staging block. fp32: the GPU's NHWC input must equal the CPU's NCHW float bits
// exactly; fp16: it must equal the CPU value rounded to half. The output is poisoned with NaN first.
// The [host] cases (also run without a GPU, as test_preprocess_host) check the staging block on the host: the
// pooled packing against the serial one, the rows and columns it leaves out, the even-factor reductions it packs
// already resized (and, with StageOptions::halves off, as rows), and the kernel's arithmetic (letterbox_rgb)
// replayed from the block against the CPU letterbox.
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "backends/cuda/common.cuh"
#include "core/half.hpp"
#include "pre/letterbox.hpp"
#include "backends/cuda/preprocess.cuh"

using namespace yolo12;
using namespace yolo12::cuda;

namespace {

struct Image {
  std::vector<std::uint8_t> pixels;
  ImageView view;
};

Image random_image(std::mt19937& rng, int w, int h, PixelFormat f, int extra_pitch) {
  Image im;
  const int bpp = pre::bytes_per_pixel(f);
  const std::size_t pitch = static_cast<std::size_t>(w) * bpp + extra_pitch;
  im.pixels.resize(pitch * h);
  // Smooth structure plus noise, so the bilinear weights matter (not only flat areas).
  std::uniform_int_distribution<int> noise(-40, 40);
  for (int y = 0; y < h; ++y)
    for (std::size_t x = 0; x < pitch; ++x) {
      const int v = static_cast<int>((x * 7 + y * 3) % 256) + noise(rng);
      im.pixels[y * pitch + x] = static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
  im.view = ImageView{im.pixels.data(), w, h, pitch, f};
  return im;
}

template <typename T> std::uint32_t bits(T v);
template <> std::uint32_t bits<float>(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
template <> std::uint32_t bits<__half>(__half v) {
  std::uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}
template <typename T> std::uint32_t expected_bits(float cpu);
template <> std::uint32_t expected_bits<float>(float cpu) { return bits(cpu); }
template <> std::uint32_t expected_bits<__half>(float cpu) { return float_to_half(cpu); }

template <typename T>
void run_batch(const std::vector<Image>& images, int target_h, int target_w, bool rect) {
  std::vector<ImageView> views;
  std::vector<pre::LetterboxParams> geo;
  for (const Image& im : images) {
    views.push_back(im.view);
    geo.push_back(pre::letterbox_params(im.view.width, im.view.height, target_h, target_w, rect));
  }
  // One batch shares the network input size; rect batches here use images of one size.
  const int H = geo[0].dst_h, W = geo[0].dst_w;
  for (const auto& g : geo) REQUIRE((g.dst_h == H && g.dst_w == W));
  const int B = static_cast<int>(images.size());

  std::vector<unsigned char> block(preprocess_staging_bytes(views, geo));
  const std::size_t used = preprocess_stage(views, geo, block.data());
  REQUIRE(used <= block.size());
  DeviceBuffer dblock(block.size());
  YOLO12_CUDA_CHECK(cudaMemcpy(dblock.get(), block.data(), used, cudaMemcpyHostToDevice));
  const int ldy = 3;
  const std::size_t ny = static_cast<std::size_t>(B) * H * W * ldy;
  std::vector<T> poison(ny);
  const float nan = std::nanf("");
  for (auto& v : poison) {
    if constexpr (sizeof(T) == 4) v = nan;
    else {
      const std::uint16_t b = 0x7e00;
      std::memcpy(&v, &b, 2);
    }
  }
  DeviceBuffer dy(ny * sizeof(T));
  YOLO12_CUDA_CHECK(cudaMemcpy(dy.get(), poison.data(), ny * sizeof(T), cudaMemcpyHostToDevice));
  PreprocessParams<T> p;
  p.block = dblock.as<unsigned char>();
  p.batch = B;
  p.h = H;
  p.w = W;
  p.y = dy.as<T>();
  p.ldy = ldy;
  preprocess_letterbox<T>(p, nullptr);
  YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> got(ny);
  YOLO12_CUDA_CHECK(cudaMemcpy(got.data(), dy.get(), ny * sizeof(T), cudaMemcpyDeviceToHost));

  for (int n = 0; n < B; ++n) {
    const ImageView& v = views[static_cast<std::size_t>(n)];
    INFO("image " << n << ": " << v.width << "x" << v.height << " format " << static_cast<int>(v.format) << " pitch "
                  << v.pitch << " -> " << W << "x" << H << (rect ? " rect" : " fixed") << " new " << geo[n].new_w << "x"
                  << geo[n].new_h << (sizeof(T) == 2 ? " fp16" : " fp32"));
    std::vector<float> cpu(static_cast<std::size_t>(3) * H * W);
    pre::letterbox_to_nchw(v, geo[static_cast<std::size_t>(n)], cpu.data());
    std::size_t differ = 0, non_pad = 0;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const float want = cpu[(static_cast<std::size_t>(c) * H + y) * W + x];
          const T g = got[((static_cast<std::size_t>(n) * H + y) * W + x) * ldy + c];
          if (bits(g) != expected_bits<T>(want)) {
            if (differ < 3) UNSCOPED_INFO("c " << c << " y " << y << " x " << x << " cpu " << want);
            ++differ;
          }
          if (want != 114.f / 255.f) ++non_pad;
        }
    CHECK(differ == 0);
    CHECK(non_pad > 0);  // the image really went through (not only padding)
  }
}

}  // namespace

TEST_CASE("GPU letterbox equals the CPU letterbox bit for bit", "[gpu][preprocess]") {
  std::mt19937 rng(21);
  struct Case {
    int w, h;
    PixelFormat f;
    int extra_pitch;
  };
  const Case cases[] = {{810, 1080, PixelFormat::BGR8, 0},  {1280, 720, PixelFormat::RGB8, 5},
                        {640, 640, PixelFormat::BGR8, 0},   {333, 517, PixelFormat::BGRA8, 12},
                        {97, 61, PixelFormat::RGBA8, 0},    {1, 1, PixelFormat::BGR8, 0},
                        {640, 480, PixelFormat::GRAY8, 3},  {1920, 1080, PixelFormat::BGR8, 0},
                        {320, 320, PixelFormat::RGB8, 0},   {17, 1000, PixelFormat::BGR8, 1},
                        {3840, 2160, PixelFormat::BGR8, 0}, {4000, 3000, PixelFormat::GRAY8, 3},
                        {2560, 1440, PixelFormat::RGB8, 0}, {1080, 1920, PixelFormat::BGRA8, 4}};
  for (bool rect : {false, true}) {
    for (const Case& c : cases) {
      std::vector<Image> one;
      one.push_back(random_image(rng, c.w, c.h, c.f, c.extra_pitch));
      run_batch<float>(one, 640, 640, rect);
      run_batch<__half>(one, 640, 640, rect);
    }
  }
  SECTION("a fixed-size batch of different images in one staging block") {
    std::vector<Image> batch;
    batch.push_back(random_image(rng, 810, 1080, PixelFormat::BGR8, 0));
    batch.push_back(random_image(rng, 500, 375, PixelFormat::RGBA8, 8));
    batch.push_back(random_image(rng, 64, 48, PixelFormat::GRAY8, 0));
    run_batch<float>(batch, 640, 640, false);
    run_batch<__half>(batch, 384, 640, false);
  }
  SECTION("a rect batch of same-size images") {
    std::vector<Image> batch;
    for (int i = 0; i < 3; ++i) batch.push_back(random_image(rng, 1280, 720, PixelFormat::BGR8, 0));
    run_batch<float>(batch, 640, 640, true);
  }
}

TEST_CASE("preprocess_stage rejects geometry that does not match the view", "[gpu][preprocess]") {
  std::mt19937 rng(22);
  Image im = random_image(rng, 100, 50, PixelFormat::BGR8, 0);
  auto g = pre::letterbox_params(101, 50, 640, 640, false);
  std::vector<unsigned char> block(1 << 20);
  REQUIRE_THROWS_AS(preprocess_stage({im.view}, {g}, block.data()), InputError);
  ImageView bad = im.view;
  bad.data = nullptr;
  REQUIRE_THROWS_AS(preprocess_stage({bad}, {pre::letterbox_params(100, 50, 640, 640, false)}, block.data()), InputError);
}

// The views of a batch and their letterbox geometry to 640x640 (no rect), as the staging tests pack them.
void letterbox_inputs(const std::vector<Image>& batch, std::vector<ImageView>& views,
                      std::vector<pre::LetterboxParams>& geo) {
  for (const Image& im : batch) {
    views.push_back(im.view);
    geo.push_back(pre::letterbox_params(im.view.width, im.view.height, 640, 640, false));
  }
}

// The kernel's arithmetic (letterbox_rgb) replayed on the host over a staged block: the values of every output
// pixel of every image that differ from the CPU letterbox (pre::letterbox_to_nchw). Device images' headers carry
// their host address here, which the replay reads as the kernel reads device memory.
std::size_t replay_differences(const unsigned char* block, const std::vector<ImageView>& views,
                               const std::vector<pre::LetterboxParams>& geo) {
  const auto* headers = reinterpret_cast<const PreprocessImage*>(block);
  std::size_t differ = 0;
  for (std::size_t n = 0; n < views.size(); ++n) {
    const int H = geo[n].dst_h, W = geo[n].dst_w;
    std::vector<float> cpu(static_cast<std::size_t>(3) * H * W);
    pre::letterbox_to_nchw(views[n], geo[n], cpu.data());
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        int rgb[3];
        letterbox_rgb(block, headers[n], x, y, rgb);
        for (int c = 0; c < 3; ++c)
          if (static_cast<float>(rgb[c]) / 255.f != cpu[(static_cast<std::size_t>(c) * H + y) * W + x]) {
            if (differ < 3)
              UNSCOPED_INFO("image " << n << " (" << views[n].width << "x" << views[n].height << ") c " << c << " y "
                                     << y << " x " << x);
            ++differ;
          }
      }
  }
  return differ;
}

// Bytes of the pixels the block holds for image i (its packed rows; the last image's run to `used`).
std::size_t packed_pixel_bytes(const unsigned char* block, std::size_t i, std::size_t count, std::size_t used) {
  const auto* headers = reinterpret_cast<const PreprocessImage*>(block);
  const std::size_t end = i + 1 < count ? headers[i + 1].pixels : used;
  return end - headers[i].pixels;
}

TEST_CASE("the staging block holds only the pixels the resize weighs, and gives the CPU letterbox",
          "[preprocess][host]") {
  std::mt19937 rng(26);
  struct Case {
    int w, h;
    PixelFormat f;
    int extra_pitch;
    int rows, cols;  // the rows and columns the block should hold at 640x640 (fixed) with StageOptions::halves off
    bool halves;     // a reduction by an even factor: with halves on, the block holds the resized image
  };
  // 1920 -> 640 weighs every third line, 3840 -> 640 two of six, 2560 -> 640 two of four (columns then kept whole:
  // above 40 %), 1280 -> 640 (exactly 2) every line; 4000x3000 -> 640x480 every 6.25th pair of lines. The
  // reductions by 2, 4 and 6 weigh each line pair 1024 / 1024 (halves).
  const Case cases[] = {{1920, 1080, PixelFormat::BGR8, 0, 360, 640, false},
                        {1080, 1920, PixelFormat::BGRA8, 4, 640, 360, false},
                        {3840, 2160, PixelFormat::BGR8, 0, 720, 1280, true},
                        {2560, 1440, PixelFormat::RGB8, 0, 720, 2560, true},
                        {1280, 720, PixelFormat::BGR8, 0, 720, 1280, true},
                        {1280, 720, PixelFormat::BGRA8, 12, 720, 1280, true},
                        {720, 1280, PixelFormat::GRAY8, 3, 1280, 720, true},
                        {4000, 3000, PixelFormat::GRAY8, 3, -1, -1, false},
                        {1281, 719, PixelFormat::BGR8, 7, -1, 1281, false},
                        {3000, 1, PixelFormat::RGB8, 0, 1, -1, false},
                        {1, 3000, PixelFormat::BGR8, 1, -1, 1, false},
                        {1001, 2999, PixelFormat::BGR8, 3, -1, -1, false},
                        {640, 640, PixelFormat::BGR8, 0, 640, 640, false},
                        {97, 61, PixelFormat::RGBA8, 0, 61, 97, false}};
  for (const Case& c : cases) {
    INFO(c.w << "x" << c.h << " format " << static_cast<int>(c.f));
    std::vector<Image> one;
    one.push_back(random_image(rng, c.w, c.h, c.f, c.extra_pitch));
    for (const bool halves : {true, false}) {
      INFO((halves ? "halves on" : "halves off"));
      for (bool rect : {false, true}) {
        INFO((rect ? "rect" : "fixed"));
        std::vector<ImageView> views{one[0].view};
        std::vector<pre::LetterboxParams> geo{pre::letterbox_params(c.w, c.h, 640, 640, rect)};
        std::vector<unsigned char> block(preprocess_staging_bytes(views, geo), 0xa5);
        StageOptions options;
        options.halves = halves;
        const std::size_t used =
            preprocess_stage(views, geo, {PixelSource::Pack}, block.data(), nullptr, options).packed_bytes;
        REQUIRE(used <= block.size());
        CHECK(replay_differences(block.data(), views, geo) == 0);
        const auto& h = reinterpret_cast<const PreprocessImage*>(block.data())[0];
        const int bpp = pre::bytes_per_pixel(c.f);
        const bool resized = halves && c.halves;
        CHECK(h.identity == (resized || (geo[0].new_w == c.w && geo[0].new_h == c.h) ? 1 : 0));
        const int rows = resized ? geo[0].new_h : c.rows, cols = resized ? geo[0].new_w : c.cols;
        if (cols > 0) CHECK(h.pitch == static_cast<unsigned long long>(cols) * bpp);
        if (rows > 0 && cols > 0)
          CHECK(packed_pixel_bytes(block.data(), 0, 1, used) ==
                align_up(static_cast<std::size_t>(rows) * cols * bpp, 256));
        // Never more than the image, and a reduction by 3 or more at most half of it (at most 2 of 3 rows).
        CHECK(packed_pixel_bytes(block.data(), 0, 1, used) <=
              align_up(static_cast<std::size_t>(c.w) * c.h * bpp, 256));
        if (geo[0].new_w * 3 <= c.w && geo[0].new_h * 3 <= c.h)
          CHECK(packed_pixel_bytes(block.data(), 0, 1, used) * 2 <= static_cast<std::size_t>(c.w) * c.h * bpp);
      }
    }
  }
  SECTION("packed, pinned and device images in one block: each read its own way") {
    std::vector<Image> batch;
    batch.push_back(random_image(rng, 1920, 1080, PixelFormat::BGR8, 0));
    batch.push_back(random_image(rng, 1920, 1080, PixelFormat::BGR8, 6));
    batch.push_back(random_image(rng, 3840, 2160, PixelFormat::RGB8, 0));
    batch.push_back(random_image(rng, 1280, 720, PixelFormat::BGR8, 0));
    std::vector<ImageView> views;
    std::vector<pre::LetterboxParams> geo;
    letterbox_inputs(batch, views, geo);
    const std::vector<PixelSource> sources{PixelSource::Pack, PixelSource::Pinned, PixelSource::Device,
                                           PixelSource::Pack};
    std::vector<unsigned char> block(preprocess_staging_bytes(views, geo), 0);
    const StagedBatch staged = preprocess_stage(views, geo, sources, block.data(), nullptr);
    REQUIRE(staged.pinned.size() == 1);
    const PinnedCopy& pc = staged.pinned[0];
    CHECK(pc.rows == 1080);  // a pinned image's rows go whole, by one 2D copy
    CHECK(pc.row_bytes == 1920u * 3);
    REQUIRE(pc.dst_offset + pc.row_bytes * pc.rows <= block.size());
    for (int y = 0; y < pc.rows; ++y)  // the executor's cudaMemcpy2DAsync, on the host
      std::memcpy(block.data() + pc.dst_offset + y * pc.row_bytes,
                  static_cast<const unsigned char*>(pc.src) + y * pc.src_pitch, pc.row_bytes);
    CHECK(replay_differences(block.data(), views, geo) == 0);
    const auto* h = reinterpret_cast<const PreprocessImage*>(block.data());
    CHECK(h[0].pitch == 640u * 3);   // packed: a ninth
    CHECK(h[1].pitch == 1920u * 3);  // pinned: whole rows
    CHECK(h[2].pitch == 3840u * 3);  // device: the caller's pitch
    CHECK(h[2].src == reinterpret_cast<unsigned long long>(batch[2].pixels.data()));
    CHECK(staged.packed_bytes <= pc.dst_offset);
  }
}

TEST_CASE("preprocess_stage packs a batch with several threads into the block the serial packing writes",
          "[preprocess][host]") {
  std::mt19937 rng(23);
  // Above the parallel threshold (1 MiB of pixels), rows split over many tasks: a 1280x720 batch, padded
  // pitches, every format, an image of one row and one of one column, and tasks that end mid-image.
  std::vector<Image> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(random_image(rng, 1280, 720, PixelFormat::BGR8, 0));
  batch.push_back(random_image(rng, 1281, 719, PixelFormat::BGR8, 7));
  batch.push_back(random_image(rng, 333, 517, PixelFormat::BGRA8, 12));
  batch.push_back(random_image(rng, 640, 480, PixelFormat::GRAY8, 3));
  batch.push_back(random_image(rng, 97, 61, PixelFormat::RGBA8, 0));
  batch.push_back(random_image(rng, 3000, 1, PixelFormat::RGB8, 0));
  batch.push_back(random_image(rng, 1, 3000, PixelFormat::BGR8, 1));
  batch.push_back(random_image(rng, 1920, 1080, PixelFormat::BGR8, 0));  // rows and columns left out
  batch.push_back(random_image(rng, 3840, 2160, PixelFormat::BGRA8, 8));
  std::vector<ImageView> views;
  std::vector<pre::LetterboxParams> geo;
  letterbox_inputs(batch, views, geo);
  const std::size_t bytes = preprocess_staging_bytes(views, geo);
  // Both blocks start as the same pattern, so the bytes no packing writes (alignment gaps) compare too.
  std::vector<unsigned char> serial(bytes, 0xa5), pooled(bytes, 0xa5), shared(bytes, 0xa5);
  const std::size_t used = preprocess_stage(views, geo, serial.data(), nullptr);
  REQUIRE(used <= bytes);
  REQUIRE(used > 6u * 640 * 360 * 3);  // the 1280x720 frames packed resized (halves)
  for (const int threads : {2, 3, 8}) {
    INFO("threads " << threads);
    cpu::ThreadPool pool(threads);
    std::fill(pooled.begin(), pooled.end(), 0xa5);
    REQUIRE(preprocess_stage(views, geo, pooled.data(), &pool) == used);
    CHECK(std::memcmp(serial.data(), pooled.data(), bytes) == 0);
  }
  // The entry point the executor calls (the process's staging pool).
  REQUIRE(preprocess_stage(views, geo, shared.data()) == used);
  CHECK(std::memcmp(serial.data(), shared.data(), bytes) == 0);
  // And the pixels really are there: image 0 (1280 -> 640, a reduction by exactly 2) as the OpenCV-exact resize
  // gives it, and every image's letterbox replayed from the block.
  const auto* headers = reinterpret_cast<const PreprocessImage*>(serial.data());
  std::vector<std::uint8_t> resized(640u * 360 * 3);
  pre::resize_bilinear_u8(batch[0].pixels.data(), 1280, 720, 1280 * 3, 3, resized.data(), 640, 360);
  CHECK(headers[0].identity == 1);
  CHECK(headers[0].pitch == 640u * 3);
  CHECK(std::memcmp(serial.data() + headers[0].pixels, resized.data(), resized.size()) == 0);
  CHECK(replay_differences(serial.data(), views, geo) == 0);
  SECTION("the same with the even-factor reductions packed as rows (StageOptions::halves off)") {
    StageOptions rows;
    rows.halves = false;
    const std::vector<PixelSource> pack(views.size(), PixelSource::Pack);
    std::vector<unsigned char> plain(bytes, 0xa5), pooled_rows(bytes, 0xa5);
    const std::size_t used_rows = preprocess_stage(views, geo, pack, plain.data(), nullptr, rows).packed_bytes;
    REQUIRE(used_rows > 6u * 1280 * 720 * 3);
    cpu::ThreadPool pool(3);
    REQUIRE(preprocess_stage(views, geo, pack, pooled_rows.data(), &pool, rows).packed_bytes == used_rows);
    CHECK(std::memcmp(plain.data(), pooled_rows.data(), bytes) == 0);
    const auto* h = reinterpret_cast<const PreprocessImage*>(plain.data());
    CHECK(h[0].identity == 0);
    CHECK(std::memcmp(plain.data() + h[0].pixels, batch[0].pixels.data(), 1280 * 3) == 0);
    CHECK(std::memcmp(plain.data() + h[0].pixels + 719ull * 1280 * 3, batch[0].pixels.data() + 719ull * 1280 * 3,
                      1280 * 3) == 0);
    CHECK(replay_differences(plain.data(), views, geo) == 0);
  }
}

// The packed part handed over in ranges (StageOptions::ready; the executor copies each to the device while the rest packs,
// under YOLO12_STAGING_OVERLAP): the ranges run from 0 to packed_bytes in order without a gap, the last one marked,
// each holding at least the asked pixel bytes; every byte of a range is final when the range is handed over (a copy
// taken then equals the finished block); and the block is the one packed without ranges, byte for byte.
TEST_CASE("preprocess_stage hands the packed part over in ranges, each final when handed over", "[preprocess][host]") {
  std::mt19937 rng(31);
  std::vector<Image> batch;
  batch.push_back(random_image(rng, 1280, 720, PixelFormat::BGR8, 0));
  batch.push_back(random_image(rng, 1920, 1080, PixelFormat::BGR8, 0));  // a ninth packed, columns gathered
  batch.push_back(random_image(rng, 1281, 719, PixelFormat::BGR8, 7));
  batch.push_back(random_image(rng, 1280, 720, PixelFormat::RGB8, 0));   // pinned below: not in the ranges
  batch.push_back(random_image(rng, 97, 61, PixelFormat::RGBA8, 0));
  batch.push_back(random_image(rng, 3000, 1, PixelFormat::RGB8, 0));
  batch.push_back(random_image(rng, 1, 3000, PixelFormat::BGR8, 1));
  std::vector<ImageView> views;
  std::vector<pre::LetterboxParams> geo;
  letterbox_inputs(batch, views, geo);
  std::vector<PixelSource> sources(batch.size(), PixelSource::Pack);
  sources[3] = PixelSource::Pinned;
  const std::size_t bytes = preprocess_staging_bytes(views, geo);
  cpu::ThreadPool pool(3);
  struct Bands {
    std::size_t bytes;  // band_bytes
    int count;          // bands
  };
  for (const bool halves : {true, false}) {
    INFO((halves ? "halves on" : "halves off"));
    StageOptions plain_options;
    plain_options.halves = halves;
    std::vector<unsigned char> plain(bytes, 0xa5);
    const StagedBatch ref = preprocess_stage(views, geo, sources, plain.data(), nullptr, plain_options);
    REQUIRE(ref.packed_bytes > (halves ? 2u * 640 * 360 * 3 : 2u * 1280 * 720 * 3));
    CHECK(replay_differences(plain.data(), {views[0], views[1], views[2]}, {geo[0], geo[1], geo[2]}) == 0);
    // The pixels run from image 0's to packed_bytes, less at most 255 bytes of alignment after each image.
    const std::size_t first = reinterpret_cast<const PreprocessImage*>(plain.data())[0].pixels;
    const std::size_t pixels_at_least = ref.packed_bytes - first - 255 * views.size();

    for (cpu::ThreadPool* p : {static_cast<cpu::ThreadPool*>(nullptr), &pool}) {
      for (const Bands band : {Bands{0, 0}, Bands{std::size_t(64) << 10, 0}, Bands{std::size_t(1) << 20, 0},
                               Bands{std::size_t(1) << 30, 0}, Bands{0, 4}}) {
        INFO((p ? "pool of 3" : "this thread") << ", band_bytes " << band.bytes << ", bands " << band.count);
        std::vector<unsigned char> block(bytes, 0xa5), handed(bytes, 0x5a);
        std::size_t expect_begin = 0, smallest = ~std::size_t(0);
        int ranges = 0;
        bool last_seen = false, ordered = true;
        StageOptions options;
        options.halves = halves;
        options.band_bytes = band.bytes;
        options.bands = band.count;
        options.ready = [&](std::size_t begin, std::size_t end, bool last) {
          ordered = ordered && !last_seen && begin == expect_begin && end > begin && end <= bytes;
          if (!last) smallest = std::min(smallest, end - begin);
          std::memcpy(handed.data() + begin, block.data() + begin, end - begin);  // the device copy, taken now
          expect_begin = end;
          last_seen = last_seen || last;
          ++ranges;
        };
        const StagedBatch staged = preprocess_stage(views, geo, sources, block.data(), p, options);
        CHECK(ordered);
        CHECK(last_seen);
        CHECK(expect_begin == staged.packed_bytes);
        REQUIRE(staged.packed_bytes == ref.packed_bytes);
        CHECK(std::memcmp(handed.data(), block.data(), staged.packed_bytes) == 0);
        CHECK(std::memcmp(plain.data(), block.data(), bytes) == 0);
        REQUIRE(staged.pinned.size() == 1);
        CHECK(staged.pinned[0].dst_offset == ref.pinned[0].dst_offset);
        if (ranges > 1) CHECK(smallest >= band.bytes);  // every range but the last holds the bytes asked
        if (band.bytes == (std::size_t(1) << 30)) CHECK(ranges == 1);
        // smaller than a task (about 256 KB of source pixels): a range per task, 1281x719 alone 11
        if (band.bytes == (std::size_t(64) << 10)) CHECK(ranges >= 18);
        // 7.1 MB of packed pixels with halves off, 4.3 MB on (1280x720 and 1920x1080 both 640x360)
        if (band.bytes == (std::size_t(1) << 20))
          CHECK((halves ? ranges >= 3 && ranges <= 5 : ranges >= 5 && ranges <= 8));
        if (band.count == 4) {  // at least a quarter of the pixels each: at most 4 ranges and the remainder
          CHECK((ranges >= 2 && ranges <= 5));
          CHECK(smallest >= pixels_at_least / 4);
        }
      }
    }
  }
  SECTION("no packed image: one range, the headers and taps") {
    const std::vector<PixelSource> device(batch.size(), PixelSource::Device);
    std::vector<unsigned char> block(bytes, 0xa5);
    int ranges = 0;
    std::size_t end_seen = 0;
    bool last_seen = false;
    StageOptions bands;
    bands.band_bytes = 1;
    bands.ready = [&](std::size_t begin, std::size_t end, bool last) {
      CHECK(begin == 0);
      end_seen = end;
      last_seen = last;
      ++ranges;
    };
    const StagedBatch staged = preprocess_stage(views, geo, device, block.data(), nullptr, bands);
    CHECK(ranges == 1);
    CHECK(last_seen);
    CHECK(end_seen == staged.packed_bytes);
  }
}

// Several Detectors packing at once (a DetectorPool's workers): each caller takes the first free staging pool,
// and one that finds all 4 in use packs alone. Six threads, each packing the batch five times into its own
// block: every block must be the serial packing's, byte for byte.
TEST_CASE("preprocess_stage from several threads at once: each block is the serial packing", "[preprocess][host]") {
  std::mt19937 rng(25);
  std::vector<Image> batch;
  for (int i = 0; i < 4; ++i) batch.push_back(random_image(rng, 1280, 720, PixelFormat::BGR8, 0));
  batch.push_back(random_image(rng, 1281, 719, PixelFormat::BGR8, 5));
  std::vector<ImageView> views;
  std::vector<pre::LetterboxParams> geo;
  letterbox_inputs(batch, views, geo);
  const std::size_t bytes = preprocess_staging_bytes(views, geo);
  std::vector<unsigned char> serial(bytes, 0x5a);
  const std::size_t used = preprocess_stage(views, geo, serial.data(), nullptr);
  constexpr int kCallers = 6, kRounds = 5;
  std::vector<std::vector<unsigned char>> blocks(kCallers, std::vector<unsigned char>(bytes));
  std::vector<int> wrong(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::fill(blocks[t].begin(), blocks[t].end(), static_cast<unsigned char>(0x5a));
        if (preprocess_stage(views, geo, blocks[t].data()) != used ||
            std::memcmp(blocks[t].data(), serial.data(), bytes) != 0)
          ++wrong[t];
      }
    });
  for (std::thread& c : callers) c.join();
  for (int t = 0; t < kCallers; ++t) {
    INFO("caller " << t);
    CHECK(wrong[t] == 0);
  }
}

TEST_CASE("preprocess_stage with a pool still rejects a bad view", "[preprocess][host]") {
  std::mt19937 rng(24);
  Image im = random_image(rng, 1280, 720, PixelFormat::BGR8, 0);
  std::vector<unsigned char> block(4 << 20);
  cpu::ThreadPool pool(3);
  REQUIRE_THROWS_AS(preprocess_stage({im.view}, {pre::letterbox_params(1279, 720, 640, 640, false)}, block.data(), &pool),
                    InputError);
  ImageView bad = im.view;
  bad.pitch = 10;  // shorter than a row
  REQUIRE_THROWS_AS(preprocess_stage({bad, im.view}, {pre::letterbox_params(1280, 720, 640, 640, false),
                                                      pre::letterbox_params(1280, 720, 640, 640, false)},
                                     block.data()),
                    InputError);
}

// Host time to pack a batch into the staging block (what detect() does before its one H2D copy), and the bytes
// that copy then moves: medians of 15 runs, on the calling thread and with the process's staging pool. Run by
// hand: test_preprocess --host-only "[.bench]" (docs/benchmarks-gpu.md, "The staging block").
TEST_CASE("staging block: packing time and bytes", "[preprocess][host][.bench]") {
  std::mt19937 rng(27);
  struct Size {
    int w, h;
  };
  for (const Size sz : {Size{1280, 720}, Size{1920, 1080}, Size{3840, 2160}}) {
    std::vector<Image> frames;
    for (int i = 0; i < 4; ++i) frames.push_back(random_image(rng, sz.w, sz.h, PixelFormat::BGR8, 0));
    for (const int batch : {1, 32}) {
      std::vector<ImageView> views;
      std::vector<pre::LetterboxParams> geo;
      for (int i = 0; i < batch; ++i) {  // 4 distinct frames, as a video's
        views.push_back(frames[static_cast<std::size_t>(i % 4)].view);
        geo.push_back(pre::letterbox_params(sz.w, sz.h, 640, 640, false));
      }
      const std::size_t bytes = preprocess_staging_bytes(views, geo);
      std::vector<unsigned char> block(bytes);
      const std::vector<PixelSource> pack(views.size(), PixelSource::Pack);
      // The ranges the executor asks for under YOLO12_STAGING_OVERLAP (about eight of at least 1 MiB), handed to a
      // callback that does nothing: what the grouping of the tasks costs the packing itself. And the packing with
      // the even-factor reductions as rows (StageOptions::halves off, YOLO12_STAGING_HALVES=0).
      StageOptions bands;
      bands.band_bytes = std::size_t(1) << 20;
      bands.bands = 8;
      bands.ready = [](std::size_t, std::size_t, bool) {};
      StageOptions rows;
      rows.halves = false;
      std::size_t used = 0, used_rows = 0;
      double ms[4];
      for (int mode = 0; mode < 4; ++mode) {
        std::vector<double> t;
        for (int r = 0; r < 15; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          if (mode == 3) used_rows = preprocess_stage(views, geo, pack, block.data(), rows).packed_bytes;
          else
            used = mode == 0   ? preprocess_stage(views, geo, block.data(), nullptr)
                   : mode == 1 ? preprocess_stage(views, geo, block.data())
                               : preprocess_stage(views, geo, pack, block.data(), bands).packed_bytes;
          t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(t.begin(), t.end());
        ms[mode] = t[t.size() / 2];
      }
      const double src_mb = static_cast<double>(sz.w) * sz.h * 3 * batch / 1e6;
      std::printf("staging %4dx%-4d batch %2d: source %7.1f MB, block %6.1f MB | pack %7.3f ms one thread, %7.3f ms pool, "
                  "%7.3f ms pool in ranges | halves off: block %6.1f MB, pack %7.3f ms pool\n",
                  sz.w, sz.h, batch, src_mb, static_cast<double>(used) / 1e6, ms[0], ms[1], ms[2],
                  static_cast<double>(used_rows) / 1e6, ms[3]);
    }
  }
}
