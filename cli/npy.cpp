// cli/npy.cpp - .npy float32 reader and writer (format: numpy.lib.format, versions 1-3).
//
// File layout: the magic "\x93NUMPY", two version bytes, the header length (u16 for version 1,
// u32 for versions 2 and 3), an ASCII Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 640, 640), }
// padded with spaces and a newline, then the raw array bytes.
#include "npy.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "yolo12/errors.hpp"

namespace yolo12_cli {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw yolo12::InputError(path + ": " + what);
}

// The text after `'key':` in the header dict, with leading spaces removed.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "not a valid .npy file (header has no '" + key + "')");
  std::size_t colon = header.find(':', at);
  if (colon == std::string::npos) fail(path, "not a valid .npy file (malformed header)");
  std::size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) fail(path, "not a valid .npy file (malformed header)");
  return header.substr(start);
}

// Parses "(1, 3, 640, 640)" (also "(5,)" and "()") from the start of text.
std::vector<std::size_t> parse_shape(const std::string& text, const std::string& path) {
  if (text.empty() || text[0] != '(') fail(path, "not a valid .npy file (malformed shape)");
  const std::size_t close = text.find(')');
  if (close == std::string::npos) fail(path, "not a valid .npy file (malformed shape)");
  std::vector<std::size_t> shape;
  std::stringstream items(text.substr(1, close - 1));
  std::string item;
  while (std::getline(items, item, ',')) {
    const std::size_t first = item.find_first_not_of(' ');
    if (first == std::string::npos) continue;  // the empty item after a trailing comma
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(item.substr(first), &used);
    } catch (const std::exception&) {
      fail(path, "not a valid .npy file (shape entry '" + item + "')");
    }
    shape.push_back(static_cast<std::size_t>(value));
  }
  return shape;
}

}  // namespace

std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyArray read_npy_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");

  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  if (!in || header_len > (1u << 20)) fail(path, "not a valid .npy file (bad header length)");
  std::string header(header_len, '\0');
  in.read(&header[0], header_len);
  if (!in) fail(path, "truncated .npy file (header)");

  // dtype: only little-endian float32.
  const std::string descr = dict_value(header, "descr", path);
  if (descr.rfind("'<f4'", 0) != 0) {
    const std::size_t end = descr.find('\'', 1);
    fail(path, "dtype " + descr.substr(0, end == std::string::npos ? 8 : end + 1) +
                   " is not supported: save the array as float32 (np.float32, '<f4')");
  }
  if (dict_value(header, "fortran_order", path).rfind("False", 0) != 0)
    fail(path, "Fortran-ordered arrays are not supported: save np.ascontiguousarray(x)");

  NpyArray array;
  array.shape = parse_shape(dict_value(header, "shape", path), path);
  std::size_t count = 1;
  for (std::size_t d : array.shape) {
    if (d != 0 && count > (std::size_t(1) << 40) / d) fail(path, "array is too large");
    count *= d;
  }
  // The data must be in the file before anything is allocated: a header may claim any shape.
  const std::streamoff data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff file_end = in.tellg();
  in.seekg(data_start);
  const std::uint64_t available = file_end > data_start ? static_cast<std::uint64_t>(file_end - data_start) : 0;
  if (available < count * sizeof(float))
    fail(path, "truncated .npy file: shape " + shape_string(array.shape) + " needs " +
                   std::to_string(count * sizeof(float)) + " data bytes, the file has " + std::to_string(available));
  array.data.resize(count);
  in.read(reinterpret_cast<char*>(array.data.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (static_cast<std::size_t>(in.gcount()) != count * sizeof(float))
    fail(path, "truncated .npy file: shape " + shape_string(array.shape) + " needs " +
                   std::to_string(count * sizeof(float)) + " data bytes");
  return array;
}

void write_npy_f32(const std::string& path, const std::vector<std::size_t>& shape, const float* data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces so that magic (6) + version (2) + length (2) + header ends on a multiple of 64,
  // the last header byte being a newline.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, "cannot create file");
  const char preamble[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(preamble, 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(float)));
  out.close();
  if (!out) fail(path, "write failed (disk full?)");
}

}  // namespace yolo12_cli
