// pre/letterbox.cpp - Ultralytics' LetterBox on the CPU: geometry, OpenCV-exact bilinear resize of
// 8-bit pixels (fixed point, see letterbox.hpp), padding with 114, RGB planar float in [0, 1].
#include "pre/letterbox.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

namespace yolo12::pre {

double round_half_even(double x) {
  const double lower = std::floor(x);
  const double diff = x - lower;
  if (diff > 0.5) return lower + 1.0;
  if (diff < 0.5) return lower;
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

namespace {

// Taps along one axis. clamp_to_edge (x axis): a sample left of the first or at/after the last
// pixel becomes that edge pixel with weights (2^11, 0). Otherwise (y axis) only indices are clamped.
std::vector<ResizeTap> make_taps(int src_len, int dst_len, bool clamp_to_edge) {
  std::vector<ResizeTap> taps(static_cast<std::size_t>(dst_len));
  // OpenCV's scale is 1 / (dst / src), in double; not src / dst (they can differ in the last bit).
  const double scale = 1.0 / (static_cast<double>(dst_len) / static_cast<double>(src_len));
  for (int d = 0; d < dst_len; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);  // sample position, rounded to float
    int i = static_cast<int>(std::floor(f));
    f -= static_cast<float>(i);  // fraction in [0, 1), float arithmetic
    if (clamp_to_edge) {
      if (i < 0) f = 0.f, i = 0;
      if (i >= src_len - 1) f = 0.f, i = src_len - 1;
    }
    ResizeTap& t = taps[static_cast<std::size_t>(d)];
    t.i0 = std::clamp(i, 0, src_len - 1);
    t.i1 = std::clamp(i + 1, 0, src_len - 1);
    // Both products are exact floats (scaling by a power of two); round each to nearest-even.
    t.w0 = static_cast<int>(round_half_even((1.f - f) * static_cast<float>(kResizeCoefScale)));
    t.w1 = static_cast<int>(round_half_even(f * static_cast<float>(kResizeCoefScale)));
  }
  return taps;
}

// Produces the resized image one output row at a time, for a chosen list of source channels.
// The horizontal pass of a source row is cached (two rows), so consecutive output rows that share
// source rows do not recompute it.
class BilinearRowResizer {
 public:
  // src: (src_h rows of `pitch` bytes, src_w * src_cn used); channels: source channel per output
  // channel (e.g. {2, 1, 0} turns BGR into RGB).
  BilinearRowResizer(const std::uint8_t* src, int src_w, int src_h, std::size_t pitch, int src_cn,
                     std::vector<int> channels, int dst_w, int dst_h)
      : src_(src), pitch_(pitch), src_cn_(src_cn),
        channels_(std::move(channels)), dst_w_(dst_w), identity_(src_w == dst_w && src_h == dst_h),
        taps_x_(make_taps(src_w, dst_w, true)), taps_y_(make_taps(src_h, dst_h, false)) {
    const std::size_t row_len = static_cast<std::size_t>(dst_w) * channels_.size();
    for (Slot& s : slots_) s.h.resize(row_len);
  }

  // out: (dst_w, channels) interleaved, output row dy.
  void row(int dy, std::uint8_t* out) {
    const int nch = static_cast<int>(channels_.size());
    if (identity_) {  // Ultralytics skips cv::resize when the size is unchanged
      const std::uint8_t* s = src_ + static_cast<std::size_t>(dy) * pitch_;
      for (int x = 0; x < dst_w_; ++x)
        for (int c = 0; c < nch; ++c) out[x * nch + c] = s[x * src_cn_ + channels_[c]];
      return;
    }
    const ResizeTap& ty = taps_y_[static_cast<std::size_t>(dy)];
    const int* h0 = horizontal(ty.i0);  // (dst_w, nch)
    const int* h1 = horizontal(ty.i1);  // (dst_w, nch)
    const int n = dst_w_ * nch;
    for (int i = 0; i < n; ++i) out[i] = resize_blend_y(h0[i], h1[i], ty.w0, ty.w1);
  }

 private:
  struct Slot {
    int sy = -1;
    long long last_use = -1;
    std::vector<int> h;  // (dst_w, nch) horizontal pass of source row sy
  };

  // The horizontal pass of source row sy (computed or cached). The returned buffer stays valid
  // until the second-next call: row() asks for at most two rows at once.
  const int* horizontal(int sy) {
    ++clock_;
    for (Slot& s : slots_)
      if (s.sy == sy) {
        s.last_use = clock_;
        return s.h.data();
      }
    Slot& s = slots_[0].last_use <= slots_[1].last_use ? slots_[0] : slots_[1];
    s.sy = sy;
    s.last_use = clock_;
    const std::uint8_t* row = src_ + static_cast<std::size_t>(sy) * pitch_;  // (src_w, src_cn)
    const int nch = static_cast<int>(channels_.size());
    for (int x = 0; x < dst_w_; ++x) {
      const ResizeTap& t = taps_x_[static_cast<std::size_t>(x)];
      const std::uint8_t* p0 = row + static_cast<std::size_t>(t.i0) * src_cn_;
      const std::uint8_t* p1 = row + static_cast<std::size_t>(t.i1) * src_cn_;
      for (int c = 0; c < nch; ++c)
        s.h[static_cast<std::size_t>(x * nch + c)] =
            resize_blend_x(p0[channels_[c]], p1[channels_[c]], t.w0, t.w1);
    }
    return s.h.data();
  }

  const std::uint8_t* src_;
  std::size_t pitch_;
  int src_cn_;
  std::vector<int> channels_;
  int dst_w_;
  bool identity_;
  std::vector<ResizeTap> taps_x_, taps_y_;
  std::array<Slot, 2> slots_;
  long long clock_ = 0;
};

}  // namespace

int bytes_per_pixel(PixelFormat format) {
  switch (format) {
    case PixelFormat::BGR8:
    case PixelFormat::RGB8:
      return 3;
    case PixelFormat::BGRA8:
    case PixelFormat::RGBA8:
      return 4;
    case PixelFormat::GRAY8:
      return 1;
  }
  throw InputError("image view: unknown pixel format " + std::to_string(static_cast<int>(format)));
}

void check_image_view(const ImageView& image) {
  const int bpp = bytes_per_pixel(image.format);
  if (image.data == nullptr) throw InputError("image view: data is a null pointer");
  if (image.width <= 0 || image.height <= 0 || image.width > kMaxImageSide || image.height > kMaxImageSide)
    throw InputError("image view: impossible size " + std::to_string(image.width) + "x" +
                     std::to_string(image.height) + " (width and height must be 1.." + std::to_string(kMaxImageSide) +
                     ")");
  const std::size_t min_pitch = static_cast<std::size_t>(image.width) * bpp;
  if (image.pitch < min_pitch)
    throw InputError("image view: pitch " + std::to_string(image.pitch) + " bytes is less than width * " +
                     std::to_string(bpp) + " = " + std::to_string(min_pitch));
}

std::vector<ResizeTap> resize_taps_x(int src_len, int dst_len) {
  if (src_len < 1 || dst_len < 1) throw InputError("resize_taps_x: lengths must be >= 1");
  return make_taps(src_len, dst_len, true);
}

std::vector<ResizeTap> resize_taps_y(int src_len, int dst_len) {
  if (src_len < 1 || dst_len < 1) throw InputError("resize_taps_y: lengths must be >= 1");
  return make_taps(src_len, dst_len, false);
}

void resize_bilinear_u8(const std::uint8_t* src, int src_w, int src_h, std::size_t src_pitch,
                        int channels, std::uint8_t* dst, int dst_w, int dst_h) {
  if (src == nullptr || dst == nullptr) throw InputError("resize_bilinear_u8: null pointer");
  if (src_w < 1 || src_h < 1 || dst_w < 1 || dst_h < 1 || channels < 1)
    throw InputError("resize_bilinear_u8: sizes and channels must be >= 1");
  if (src_pitch < static_cast<std::size_t>(src_w) * channels)
    throw InputError("resize_bilinear_u8: pitch smaller than width * channels");
  std::vector<int> all(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) all[static_cast<std::size_t>(c)] = c;
  BilinearRowResizer rows(src, src_w, src_h, src_pitch, channels, all, dst_w, dst_h);
  const std::size_t row_len = static_cast<std::size_t>(dst_w) * channels;
  for (int y = 0; y < dst_h; ++y) rows.row(y, dst + y * row_len);
}

LetterboxParams letterbox_params(int src_w, int src_h, int target_h, int target_w, bool rect,
                                 int stride) {
  if (src_w < 1 || src_h < 1)
    throw InputError("letterbox: impossible image size " + std::to_string(src_w) + "x" +
                     std::to_string(src_h));
  if (target_w < 1 || target_h < 1 || stride < 1)
    throw InputError("letterbox: impossible target " + std::to_string(target_w) + "x" +
                     std::to_string(target_h) + " stride " + std::to_string(stride));
  LetterboxParams p;
  p.src_w = src_w;
  p.src_h = src_h;
  // Scale ratio new / old in double, as Python; always scale up when the image is smaller.
  const double r = std::min(static_cast<double>(target_h) / src_h, static_cast<double>(target_w) / src_w);
  p.ratio = static_cast<float>(r);
  // Unpadded size: Python round() (ties to even), at least 1 pixel.
  p.new_w = std::max(static_cast<int>(round_half_even(src_w * r)), 1);
  p.new_h = std::max(static_cast<int>(round_half_even(src_h * r)), 1);
  int pad_w = target_w - p.new_w;
  int pad_h = target_h - p.new_h;
  if (rect) {  // minimum rectangle: pad only up to the next multiple of the stride
    pad_w = ((pad_w % stride) + stride) % stride;
    pad_h = ((pad_h % stride) + stride) % stride;
  }
  // Split: round(pad / 2 - 0.1) before, round(pad / 2 + 0.1) after, so an odd pad puts the extra
  // pixel after the image. Never a tie, so the rounding mode does not matter.
  const double half_w = pad_w / 2.0, half_h = pad_h / 2.0;
  p.left = static_cast<int>(round_half_even(half_w - 0.1));
  p.top = static_cast<int>(round_half_even(half_h - 0.1));
  const int right = static_cast<int>(round_half_even(half_w + 0.1));
  const int bottom = static_cast<int>(round_half_even(half_h + 0.1));
  p.dst_w = p.new_w + p.left + right;
  p.dst_h = p.new_h + p.top + bottom;
  return p;
}

void letterbox_to_nchw(const ImageView& image, const LetterboxParams& p, float* dst) {
  check_image_view(image);
  if (dst == nullptr) throw InputError("letterbox: destination is a null pointer");
  if (p.src_w != image.width || p.src_h != image.height)
    throw InputError("letterbox: parameters are for a " + std::to_string(p.src_w) + "x" +
                     std::to_string(p.src_h) + " image, got " + std::to_string(image.width) + "x" +
                     std::to_string(image.height));
  if (p.new_w < 1 || p.new_h < 1 || p.left < 0 || p.top < 0 || p.left + p.new_w > p.dst_w ||
      p.top + p.new_h > p.dst_h)
    throw InputError("letterbox: inconsistent parameters");

  // Source channel of R, G and B for each format (GRAY8: one channel, replicated).
  std::vector<int> channels;
  switch (image.format) {
    case PixelFormat::BGR8:
    case PixelFormat::BGRA8:
      channels = {2, 1, 0};
      break;
    case PixelFormat::RGB8:
    case PixelFormat::RGBA8:
      channels = {0, 1, 2};
      break;
    case PixelFormat::GRAY8:
      channels = {0};
      break;
  }
  const int nch = static_cast<int>(channels.size());

  // uint8 -> float exactly as torch's x.float() / 255 (a true division, not * (1 / 255)).
  std::array<float, 256> to_unit;
  for (int v = 0; v < 256; ++v) to_unit[static_cast<std::size_t>(v)] = static_cast<float>(v) / 255.f;

  const std::size_t plane = static_cast<std::size_t>(p.dst_w) * p.dst_h;
  std::fill(dst, dst + 3 * plane, to_unit[114]);  // padding

  BilinearRowResizer rows(image.data, image.width, image.height, image.pitch,
                          bytes_per_pixel(image.format), channels, p.new_w, p.new_h);
  std::vector<std::uint8_t> row(static_cast<std::size_t>(p.new_w) * nch);  // (new_w, nch)
  for (int y = 0; y < p.new_h; ++y) {
    rows.row(y, row.data());
    const std::size_t out0 = static_cast<std::size_t>(p.top + y) * p.dst_w + p.left;
    for (int c = 0; c < 3; ++c) {
      float* out = dst + c * plane + out0;  // (new_w) of plane c
      const int src_c = nch == 1 ? 0 : c;
      for (int x = 0; x < p.new_w; ++x) out[x] = to_unit[row[static_cast<std::size_t>(x * nch + src_c)]];
    }
  }
}

}  // namespace yolo12::pre
