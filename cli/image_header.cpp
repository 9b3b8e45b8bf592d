// cli/image_header.cpp - see image_header.hpp. Byte layouts from the format specifications:
// JPEG (ITU T.81 B.1), PNG (ISO 15948 11.2.2), BMP (BITMAPINFOHEADER), WebP (RFC 9649), TIFF 6.0 (2).
#include "image_header.hpp"

#include <algorithm>
#include <cstdlib>

namespace yolo12_cli {
namespace {

std::uint32_t be16(const unsigned char* p) { return (std::uint32_t(p[0]) << 8) | p[1]; }
std::uint32_t be32(const unsigned char* p) { return (be16(p) << 16) | be16(p + 2); }
std::uint32_t le16(const unsigned char* p) { return (std::uint32_t(p[1]) << 8) | p[0]; }
std::uint32_t le32(const unsigned char* p) { return (le16(p + 2) << 16) | le16(p); }
std::uint32_t le24(const unsigned char* p) { return (std::uint32_t(p[2]) << 16) | le16(p); }

constexpr int kMaxJpegSegments = 100000;  // a real file has a few dozen before its frame header

// Walks the marker segments up to the first start-of-frame (SOF0..SOF15 except DHT C4, JPG C8, DAC CC).
ImageHeader jpeg(const ReadAt& read) {
  ImageHeader h{"jpeg", 0, 0};
  std::uint64_t at = 2;
  for (int segment = 0; segment < kMaxJpegSegments; ++segment) {
    std::vector<unsigned char> m = read(at, 2);
    if (m.size() < 2 || m[0] != 0xFF) return h;
    if (m[1] == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    const unsigned char marker = m[1];
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // no length
      at += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return h;  // end of image or start of scan: no frame header
    std::vector<unsigned char> seg = read(at + 2, 7);
    if (seg.size() < 2) return h;
    const std::uint32_t length = be16(seg.data());
    if (length < 2) return h;
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) {
      if (seg.size() < 7) return h;
      h.height = be16(seg.data() + 3);
      h.width = be16(seg.data() + 5);
      return h;
    }
    at += 2 + length;
  }
  return h;
}

ImageHeader png(const ReadAt& read) {
  ImageHeader h{"png", 0, 0};
  const std::vector<unsigned char> b = read(8, 16);  // length, "IHDR", width, height
  if (b.size() == 16 && b[4] == 'I' && b[5] == 'H' && b[6] == 'D' && b[7] == 'R') {
    h.width = be32(b.data() + 8);
    h.height = be32(b.data() + 12);
  }
  return h;
}

ImageHeader bmp(const ReadAt& read) {
  ImageHeader h{"bmp", 0, 0};
  const std::vector<unsigned char> b = read(14, 12);  // DIB header size, then the size
  if (b.size() < 8) return h;
  if (le32(b.data()) == 12) {  // BITMAPCOREHEADER: 16-bit sizes
    h.width = le16(b.data() + 4);
    h.height = le16(b.data() + 6);
  } else if (b.size() == 12) {
    const auto w = static_cast<std::int32_t>(le32(b.data() + 4));
    const auto hh = static_cast<std::int32_t>(le32(b.data() + 8));  // negative: rows stored top-down
    h.width = static_cast<std::uint64_t>(std::llabs(w));
    h.height = static_cast<std::uint64_t>(std::llabs(hh));
  }
  return h;
}

ImageHeader webp(const ReadAt& read) {
  ImageHeader h{"webp", 0, 0};
  const std::vector<unsigned char> b = read(12, 18);  // chunk fourcc, size, then its first bytes
  if (b.size() < 18) return h;
  const std::string chunk(b.begin(), b.begin() + 4);
  const unsigned char* d = b.data() + 8;
  if (chunk == "VP8X") {  // flags (4), canvas width - 1 (24 bits), canvas height - 1 (24 bits)
    h.width = le24(d + 4) + 1;
    h.height = le24(d + 7) + 1;
  } else if (chunk == "VP8L" && d[0] == 0x2F) {  // 14-bit width - 1 and height - 1
    const std::uint32_t bits = le32(d + 1);
    h.width = (bits & 0x3FFF) + 1;
    h.height = ((bits >> 14) & 0x3FFF) + 1;
  } else if (chunk == "VP8 " && d[3] == 0x9D && d[4] == 0x01 && d[5] == 0x2A) {  // key frame
    h.width = le16(d + 6) & 0x3FFF;
    h.height = le16(d + 8) & 0x3FFF;
  }
  return h;
}

ImageHeader tiff(const ReadAt& read, bool little) {
  ImageHeader h{"tiff", 0, 0};
  const auto u16 = [&](const unsigned char* p) { return little ? le16(p) : be16(p); };
  const auto u32 = [&](const unsigned char* p) { return little ? le32(p) : be32(p); };
  const std::vector<unsigned char> first = read(4, 4);
  if (first.size() < 4) return h;
  const std::uint64_t ifd = u32(first.data());
  const std::vector<unsigned char> count_bytes = read(ifd, 2);
  if (count_bytes.size() < 2) return h;
  const std::uint32_t count = u16(count_bytes.data());
  const std::vector<unsigned char> entries = read(ifd + 2, static_cast<std::size_t>(count) * 12);
  for (std::size_t i = 0; i + 12 <= entries.size(); i += 12) {
    const unsigned char* e = entries.data() + i;
    const std::uint32_t tag = u16(e), type = u16(e + 2);
    if (tag != 256 && tag != 257) continue;  // ImageWidth, ImageLength
    const std::uint64_t value = type == 3 ? u16(e + 8) : u32(e + 8);  // SHORT or LONG
    (tag == 256 ? h.width : h.height) = value;
  }
  return h;
}

}  // namespace

ImageHeader read_image_header(const ReadAt& read) {
  const std::vector<unsigned char> m = read(0, 12);
  const auto starts = [&](const char* magic, std::size_t n, std::size_t at = 0) {
    if (m.size() < at + n) return false;
    for (std::size_t i = 0; i < n; ++i)
      if (m[at + i] != static_cast<unsigned char>(magic[i])) return false;
    return true;
  };
  if (starts("\xFF\xD8\xFF", 3)) return jpeg(read);
  if (starts("\x89PNG\r\n\x1A\n", 8)) return png(read);
  if (starts("BM", 2)) return bmp(read);
  if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return webp(read);
  if (starts("II*\0", 4)) return tiff(read, true);
  if (starts("MM\0*", 4)) return tiff(read, false);
  return {};
}

ImageHeader read_image_header(const std::vector<unsigned char>& bytes) {
  return read_image_header([&](std::uint64_t offset, std::size_t n) {
    if (offset >= bytes.size()) return std::vector<unsigned char>();
    const std::size_t end = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), offset + n));
    return std::vector<unsigned char>(bytes.begin() + static_cast<long>(offset), bytes.begin() + static_cast<long>(end));
  });
}

}  // namespace yolo12_cli
