// model/model_file.cpp - reads a .y12 file into memory it owns and checks it, in the order
// docs/model-format.md gives ("What the loader checks").
//
// Every check that fails throws ModelError with one line: "<file>: <what> [tensor X]: expected ..,
// got ..; <what to do>". The whole file is untrusted: sizes and offsets are checked for overflow
// before use, nothing is allocated from a size the file claims (only from the size the file system
// reports, within limits::kFileBytes), every integer is read exactly (json_field.hpp), every limit
// is checked before the architecture is expanded (limits.hpp), and values are never dumped whole
// into a message (brief()).
#include "model/model_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/half.hpp"
#include "core/log.hpp"
#include "graph/graph.hpp"
#include "model/checksum.hpp"
#include "model/json_field.hpp"
#include "model/limits.hpp"

namespace yolo12::model {
namespace {

constexpr char kMagic[8] = {'Y', '1', '2', 'M', 'O', 'D', 'E', 'L'};
constexpr char kTrailerMagic[8] = {'Y', '1', '2', 'C', 'H', 'E', 'C', 'K'};
constexpr std::uint32_t kVersionNoChecksum = 1;
constexpr std::uint32_t kVersionChecksum = 2;
constexpr std::size_t kFixedHeader = 24;
constexpr std::size_t kTrailer = 16;
constexpr std::size_t kAlign = 256;
constexpr const char* kReexport = "re-export the model with exporter/export.py";
namespace L = limits;

std::string shape_str(const std::vector<long long>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string hex64(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Text from elsewhere (a parser's message) made one short line.
std::string one_line(std::string s, std::size_t max_chars = 160) {
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return s;
}

[[noreturn]] void fail(const std::string& path, const std::string& what, const std::string& todo) {
  throw ModelError(path + ": " + what + "; " + todo);
}

template <typename T>
T read_le(const unsigned char* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(p[i]) << (8 * i);
  return v;
}

bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  if (a > UINT64_MAX - b) return true;
  *out = a + b;
  return false;
}

std::uint64_t dtype_bytes(DType t) { return t == DType::F16 ? 2 : 4; }
const char* dtype_name(DType t) { return t == DType::F16 ? "f16" : "f32"; }

// A header integer read exactly, or a ModelError naming the key and the range.
long long header_int(const std::string& path, const nlohmann::json& v, const std::string& what, long long lo,
                     long long hi) {
  long long out = 0;
  if (!exact_int(v, lo, hi, &out))
    fail(path, what + ": expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + brief(v),
         kReexport);
  return out;
}

// Text the engine prints (class names, the scale) must not carry control characters (a newline or
// an escape sequence in a label line or a terminal).
bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Check 5: required keys with the right types, and the header's values within the limits.
void check_header(const std::string& path, const nlohmann::json& h) {
  struct Key {
    const char* name;
    bool (*ok)(const nlohmann::json&);
    const char* expected;
  };
  const auto is_str = [](const nlohmann::json& j) { return j.is_string(); };
  const auto is_int = [](const nlohmann::json& j) { return j.is_number_integer(); };
  const auto is_arr = [](const nlohmann::json& j) { return j.is_array(); };
  const Key keys[] = {
      {"format", is_str, "a string"},   {"family", is_str, "a string"},
      {"task", is_str, "a string"},     {"nc", is_int, "an integer"},
      {"names", is_arr, "an array"},    {"strides", is_arr, "an array"},
      {"imgsz", is_arr, "an array"},    {"reg_max", is_int, "an integer"},
      {"dtype", is_str, "a string"},    {"layers", is_arr, "an array"},
      {"tensors", is_arr, "an array"},  {"data_size", is_int, "an integer"},
  };
  for (const Key& k : keys) {
    if (!h.contains(k.name)) fail(path, std::string("header is missing the key \"") + k.name + "\"", kReexport);
    if (!k.ok(h[k.name]))
      fail(path, std::string("header key \"") + k.name + "\": expected " + k.expected + ", got " +
                     h[k.name].type_name(),
           kReexport);
  }
  if (h["format"] != "yolo12-model")
    fail(path, "header format: expected \"yolo12-model\", got " + brief(h["format"]), kReexport);
  if (h["task"] != "detect")
    fail(path, "task: expected \"detect\", got " + brief(h["task"]), "only detection models are supported");
  const long long nc = header_int(path, h["nc"], "nc", 1, L::kClasses);
  const auto& names = h["names"];
  if (names.size() != static_cast<std::size_t>(nc))
    fail(path, "names: expected " + std::to_string(nc) + " class names, got " + std::to_string(names.size()),
         kReexport);
  for (const auto& n : names) {
    if (!n.is_string()) fail(path, "names: expected strings, got " + brief(n), kReexport);
    const std::string& name = n.get_ref<const std::string&>();
    if (name.empty() || name.size() > L::kClassNameBytes || has_control(name))
      fail(path, "names: expected names of 1 to " + std::to_string(L::kClassNameBytes) +
                     " bytes without control characters, got " + brief(n),
           kReexport);
  }
  const auto& strides = h["strides"];
  if (strides.empty() || strides.size() > L::kStrides)
    fail(path, "strides: expected 1 to " + std::to_string(L::kStrides) + " strides, got " + brief(strides), kReexport);
  for (const auto& s : strides) header_int(path, s, "strides", 1, L::kStride);
  const auto& imgsz = h["imgsz"];
  if (imgsz.size() != 2)
    fail(path, "imgsz: expected [height, width], got " + brief(imgsz), kReexport);
  for (const auto& side : imgsz) header_int(path, side, "imgsz", 1, L::kImageSide);
  header_int(path, h["reg_max"], "reg_max", 1, L::kRegMax);
  if (h["dtype"] != "f32" && h["dtype"] != "f16")
    fail(path, "dtype: expected \"f32\" or \"f16\", got " + brief(h["dtype"]), kReexport);
  header_int(path, h["data_size"], "data_size", 0, static_cast<long long>(L::kFileBytes));
  if (h["tensors"].size() > L::kTensors)
    fail(path, "tensors: expected at most " + std::to_string(L::kTensors) + " entries, got " +
                   std::to_string(h["tensors"].size()),
         kReexport);
  if (h.contains("parameters")) header_int(path, h["parameters"], "parameters", 0, static_cast<long long>(L::kFileBytes));
  if (h.contains("scale") && (!h["scale"].is_string() || h["scale"].get_ref<const std::string&>().size() > L::kScaleBytes ||
                              has_control(h["scale"].get_ref<const std::string&>())))
    fail(path, "scale: expected a string of at most " + std::to_string(L::kScaleBytes) +
                   " bytes without control characters, got " + brief(h["scale"]),
         kReexport);
}

struct RawTensor {
  std::string name;
  DType dtype;
  std::vector<long long> shape;
  std::uint64_t offset, size;
};

// Check 9: one entry of the tensor table, its dtype (agreeing with the header's), shape and size.
RawTensor parse_tensor(const std::string& path, const nlohmann::json& t, std::size_t index, DType header_dtype) {
  const std::string where = "tensor table entry " + std::to_string(index);
  if (!t.is_object()) fail(path, where + ": expected an object, got " + brief(t), kReexport);
  for (const char* key : {"name", "dtype", "shape", "offset", "size"})
    if (!t.contains(key)) fail(path, where + ": missing key \"" + key + "\"", kReexport);
  if (!t["name"].is_string() || t["name"].get_ref<const std::string&>().empty() ||
      t["name"].get_ref<const std::string&>().size() > 256)
    fail(path, where + ": expected a non-empty string name (at most 256 bytes), got " + brief(t["name"]), kReexport);
  RawTensor r;
  r.name = t["name"].get<std::string>();
  const std::string tw = "tensor " + one_line(r.name, 96);
  if (t["dtype"] == "f32") r.dtype = DType::F32;
  else if (t["dtype"] == "f16") r.dtype = DType::F16;
  else fail(path, tw + ": dtype: expected \"f32\" or \"f16\", got " + brief(t["dtype"]), kReexport);
  // Layer-scale tensors are always f32; every conv tensor has the header's dtype.
  const bool is_gamma = r.name.size() > 6 && r.name.compare(r.name.size() - 6, 6, ".gamma") == 0;
  const DType want = is_gamma ? DType::F32 : header_dtype;
  if (r.dtype != want)
    fail(path,
         tw + ": dtype: expected \"" + dtype_name(want) + "\" (" +
             (is_gamma ? "layer-scale tensors are always f32" : "the header's dtype") + "), got \"" +
             dtype_name(r.dtype) + "\"",
         kReexport);
  if (!t["shape"].is_array() || t["shape"].empty() || t["shape"].size() > 4)
    fail(path, tw + ": shape: expected 1 to 4 dimensions, got " + brief(t["shape"]), kReexport);
  std::uint64_t numel = 1;
  for (const auto& d : t["shape"]) {
    long long dim = 0;
    if (!exact_int(d, 1, L::kChannels, &dim))
      fail(path, tw + ": shape: expected positive dimensions of at most " + std::to_string(L::kChannels) + ", got " +
                     brief(t["shape"]),
           kReexport);
    numel *= static_cast<std::uint64_t>(dim);  // at most 16384^4 = 2^56
    r.shape.push_back(dim);
  }
  r.offset = static_cast<std::uint64_t>(header_int(path, t["offset"], tw + ": offset", 0, static_cast<long long>(L::kFileBytes)));
  r.size = static_cast<std::uint64_t>(header_int(path, t["size"], tw + ": size", 0, static_cast<long long>(L::kFileBytes)));
  if (r.size != numel * dtype_bytes(r.dtype))
    fail(path,
         tw + ": size: expected " + std::to_string(numel * dtype_bytes(r.dtype)) + " bytes (" + shape_str(r.shape) +
             " x " + dtype_name(r.dtype) + "), got " + std::to_string(r.size),
         kReexport);
  return r;
}

// Index of the first NaN or infinity among n little-endian floats of type W (uint32_t for f32,
// uint16_t for f16) whose exponent bits are `exp_mask`; n when all are finite. Scans in blocks with
// no early exit inside a block, so the inner loop vectorizes.
template <typename W>
std::size_t first_non_finite(const unsigned char* p, std::size_t n, W exp_mask) {
  constexpr std::size_t kBlock = 4096;
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t e = std::min(n, b + kBlock);
    unsigned bad = 0;
    for (std::size_t i = b; i < e; ++i) {
      W w;
      std::memcpy(&w, p + i * sizeof(W), sizeof w);
      bad |= static_cast<unsigned>((w & exp_mask) == exp_mask);
    }
    if (!bad) continue;
    for (std::size_t i = b; i < e; ++i) {
      W w;
      std::memcpy(&w, p + i * sizeof(W), sizeof w);
      if ((w & exp_mask) == exp_mask) return i;
    }
  }
  return n;
}

// Check 12: every weight finite.
void check_finite(const std::string& path, const TensorInfo& t) {
  const auto* p = static_cast<const unsigned char*>(t.data);
  const std::size_t n = t.numel();
  std::size_t i;
  bool nan;
  if (t.dtype == DType::F32) {
    i = first_non_finite<std::uint32_t>(p, n, 0x7f800000u);
    nan = i < n && (read_le<std::uint32_t>(p + 4 * i) & 0x007fffffu) != 0;
  } else {
    i = first_non_finite<std::uint16_t>(p, n, 0x7c00u);
    nan = i < n && (read_le<std::uint16_t>(p + 2 * i) & 0x03ffu) != 0;
  }
  if (i < n)
    fail(path,
         "tensor " + one_line(t.name, 96) + ": element " + std::to_string(i) + " of " + std::to_string(n) + " is " +
             (nan ? "NaN" : "infinite") + ": expected finite weights",
         "the checkpoint itself holds non-finite values; export a healthy checkpoint");
}

// The version-1 warning, once per path per process (a program that opens a model many times
// says it once).
void warn_no_checksum(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (warned.size() < 4096 && !warned.insert(path).second) return;
  }
  log::warn(path + ": format version 1 has no checksum, so corruption cannot be detected; " + kReexport +
            " (format version 2)");
}

}  // namespace

std::size_t TensorInfo::numel() const {
  std::size_t n = 1;
  for (long long d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

ModelFile::~ModelFile() {
  if (bytes_) ::operator delete(bytes_, std::align_val_t(kAlign));
}

void ModelFile::allocate(std::size_t size) {
  try {
    bytes_ = static_cast<unsigned char*>(::operator new(std::max<std::size_t>(size, 1), std::align_val_t(kAlign)));
  } catch (const std::bad_alloc&) {
    fail(path_, "cannot allocate " + std::to_string(size) + " bytes to read the model file", "free some memory");
  }
  size_ = size;
}

std::shared_ptr<const ModelFile> ModelFile::from_bytes(const std::string& name, const void* bytes, std::size_t size) {
  std::shared_ptr<ModelFile> mf(new ModelFile());
  mf->path_ = name;
  if (size > L::kFileBytes)
    fail(name, "the file is " + std::to_string(size) + " bytes, above the limit of " + std::to_string(L::kFileBytes),
         "this is not a model this engine can hold");
  mf->allocate(size);
  if (size) std::memcpy(mf->bytes_, bytes, size);
  mf->check();
  return mf;
}

std::shared_ptr<const ModelFile> ModelFile::open(const std::string& path) {
  std::shared_ptr<ModelFile> mf(new ModelFile());
  mf->path_ = path;

  // 0. The file itself. O_NONBLOCK so that a FIFO (or a device) cannot block open(); the type is
  // checked on the open descriptor, then the flag is cleared for the reads.
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0)
    fail(path, std::string("cannot open the model file (") + std::strerror(errno) + ")",
         "check the path (export a model with exporter/export.py)");
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail(path, std::string("cannot stat the file (") + std::strerror(errno) + ")", kReexport);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail(path, std::string("not a regular file (") + kind + ")", "pass the path of a .y12 model file");
  }
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags < 0 || ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    fail(path, std::string("cannot read the file (") + std::strerror(errno) + ")", kReexport);
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size == 0) fail(path, "the file is empty (0 bytes)", kReexport);
  if (file_size > L::kFileBytes)
    fail(path, "the file is " + std::to_string(file_size) + " bytes, above the limit of " + std::to_string(L::kFileBytes),
         "this is not a model this engine can hold");
  mf->allocate(static_cast<std::size_t>(file_size));
  // Read it whole. A file that shrinks or grows meanwhile (being copied onto) is refused.
  std::size_t got = 0;
  while (got < mf->size_) {
    const ssize_t n = ::read(f.fd, mf->bytes_ + got, std::min<std::size_t>(mf->size_ - got, 64u << 20));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("cannot read the file (") + std::strerror(errno) + ")", kReexport);
    if (n == 0)
      fail(path, "the file shrank while it was read (" + std::to_string(file_size) + " bytes, then " +
                     std::to_string(got) + ")",
           "wait until the model file is completely written");
    got += static_cast<std::size_t>(n);
  }
  unsigned char extra;
  ssize_t more;
  do more = ::read(f.fd, &extra, 1);
  while (more < 0 && errno == EINTR);
  if (more > 0)
    fail(path, "the file grew while it was read (beyond " + std::to_string(file_size) + " bytes)",
         "wait until the model file is completely written");
  mf->check();
  return mf;
}

void ModelFile::check() {
  const std::string& path = path_;
  const unsigned char* bytes = bytes_;
  const std::uint64_t file_size = size_;
  if (file_size == 0) fail(path, "the file is empty (0 bytes)", kReexport);

  // 1. Magic.
  if (file_size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    fail(path, "not a yolo12 model file: magic bytes: expected \"Y12MODEL\"",
         "convert the checkpoint with exporter/export.py (a .pt or .onnx file is not read directly)");
  // 2. Version.
  if (file_size < 12)
    fail(path, "truncated: the file ends inside the fixed header (" + std::to_string(file_size) + " bytes)", kReexport);
  version_ = read_le<std::uint32_t>(bytes + 8);
  if (version_ != kVersionNoChecksum && version_ != kVersionChecksum)
    fail(path, "format version: expected 1 or 2, got " + std::to_string(version_),
         "this build reads versions 1 and 2; re-export the model with this release's exporter/export.py");
  // 3. Integrity: a version-2 file ends with "Y12CHECK" and the checksum of every byte before it.
  std::uint64_t covered = file_size;
  if (version_ == kVersionChecksum) {
    if (file_size < kFixedHeader + kTrailer ||
        std::memcmp(bytes + file_size - kTrailer, kTrailerMagic, sizeof kTrailerMagic) != 0)
      fail(path, "truncated or corrupt: a version 2 file ends with the 16-byte \"Y12CHECK\" trailer, this one does not",
           kReexport);
    covered = file_size - kTrailer;
    const std::uint64_t stored = read_le<std::uint64_t>(bytes + covered + sizeof kTrailerMagic);
    const std::uint64_t actual = tree_checksum(bytes, covered);
    if (actual != stored)
      fail(path, "checksum mismatch (expected " + hex64(actual) + ", file says " + hex64(stored) + ")",
           "the file is corrupt or was changed after export; re-export it");
  } else {
    warn_no_checksum(path);
  }
  // 4. Header length.
  if (covered < kFixedHeader)
    fail(path, "truncated: the file ends inside the fixed header (" + std::to_string(file_size) + " bytes)", kReexport);
  if (read_le<std::uint32_t>(bytes + 12) != 0)
    fail(path, "reserved header field: expected 0, got " + std::to_string(read_le<std::uint32_t>(bytes + 12)), kReexport);
  const auto header_len = read_le<std::uint64_t>(bytes + 16);
  if (header_len == 0 || header_len > L::kHeaderBytes)
    fail(path, "header length: expected 1 to " + std::to_string(L::kHeaderBytes) + " bytes, got " + std::to_string(header_len),
         kReexport);
  if (kFixedHeader + header_len > covered)
    fail(path, "truncated: header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)",
         kReexport);
  // 5. JSON, within the depth and size limits; the header's keys, types and values.
  const char* json_begin = reinterpret_cast<const char*>(bytes + kFixedHeader);
  try {
    header_ = parse_bounded(json_begin, json_begin + header_len, L::kJsonDepth, L::kJsonValues);
  } catch (const JsonLimitError& e) {
    fail(path, std::string("header JSON: ") + e.what() + " (the limit for a model header)", kReexport);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "header JSON does not parse: " + one_line(e.what()), kReexport);
  }
  const nlohmann::json& h = header_;
  if (!h.is_object()) fail(path, "header JSON: expected an object, got " + std::string(h.type_name()), kReexport);
  check_header(path, h);
  const DType header_dtype = h["dtype"] == "f16" ? DType::F16 : DType::F32;
  // 6. Layer fields within the limits, before anything is expanded.
  check_layer_limits(path, h);

  // 7. Alignment.
  const std::uint64_t data_start = (kFixedHeader + header_len + kAlign - 1) / kAlign * kAlign;
  const auto data_size = h["data_size"].get<std::uint64_t>();
  const auto& table = h["tensors"];
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& t = table[i];
    long long offset = 0;
    if (t.is_object() && t.contains("offset") && exact_int(t["offset"], 0, static_cast<long long>(L::kFileBytes), &offset) &&
        offset % static_cast<long long>(kAlign) != 0)
      fail(path,
           "tensor " + (t.contains("name") ? brief(t["name"], 96) : std::to_string(i)) + ": offset " +
               std::to_string(offset) + " is not a multiple of 256",
           kReexport);
  }
  // 8. Duplicate names.
  {
    std::set<std::string> seen;
    for (const auto& t : table) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      if (!seen.insert(t["name"].get<std::string>()).second)
        fail(path, "duplicate tensor name " + brief(t["name"], 96), kReexport);
    }
  }
  // 9. dtype / shape / size.
  std::vector<RawTensor> raw;
  raw.reserve(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) raw.push_back(parse_tensor(path, table[i], i, header_dtype));
  // 10. Bounds and overlap.
  std::uint64_t end_of_data = 0;
  if (add_overflows(data_start, data_size, &end_of_data) || end_of_data > covered)
    fail(path, "truncated: expected " + std::to_string(data_start) + " + " + std::to_string(data_size) +
                   " bytes (header + data)" + (version_ == kVersionChecksum ? " + 16 (trailer)" : "") +
                   ", got a file of " + std::to_string(file_size),
         kReexport);
  if (end_of_data < covered)
    fail(path, "trailing bytes: expected the file to end at " +
                   std::to_string(end_of_data + (version_ == kVersionChecksum ? kTrailer : 0)) + ", got " +
                   std::to_string(file_size) + " bytes",
         kReexport);
  for (const RawTensor& r : raw) {
    std::uint64_t end = 0;
    if (add_overflows(r.offset, r.size, &end) || end > data_size)
      fail(path, "tensor " + one_line(r.name, 96) + ": offset " + std::to_string(r.offset) + " + size " + std::to_string(r.size) +
                     " is out of bounds: expected at most data_size " + std::to_string(data_size),
           kReexport);
  }
  {
    std::vector<const RawTensor*> by_offset;
    for (const RawTensor& r : raw) by_offset.push_back(&r);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const RawTensor* a, const RawTensor* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
      if (by_offset[i - 1]->offset + by_offset[i - 1]->size > by_offset[i]->offset)
        fail(path, "tensors " + one_line(by_offset[i - 1]->name, 96) + " and " + one_line(by_offset[i]->name, 96) + " overlap (offsets " +
                       std::to_string(by_offset[i - 1]->offset) + " and " + std::to_string(by_offset[i]->offset) + ")",
             kReexport);
  }
  for (const RawTensor& r : raw) {
    TensorInfo ti;
    ti.name = r.name;
    ti.dtype = r.dtype;
    ti.shape = r.shape;
    ti.offset = r.offset;
    ti.size = r.size;
    ti.data = bytes + data_start + r.offset;
    tensors_.push_back(std::move(ti));
  }
  // 11. The exact set and shapes the architecture requires.
  std::vector<graph::ParamSpec> required;
  try {
    required = graph::required_params(h);
  } catch (const ModelError& e) {
    fail(path, std::string("architecture: ") + one_line(e.what(), 400), "this engine does not implement that architecture");
  }
  std::unordered_map<std::string, const TensorInfo*> have;
  for (const TensorInfo& t : tensors_) have[t.name] = &t;
  std::set<std::string> wanted;
  for (const graph::ParamSpec& p : required) {
    wanted.insert(p.name);
    const auto it = have.find(p.name);
    if (it == have.end())
      fail(path, "missing tensor " + p.name + " (expected shape " + shape_str(p.shape) + ")", kReexport);
    if (it->second->shape != p.shape)
      fail(path, "wrong shape for tensor " + p.name + ": expected " + shape_str(p.shape) + ", got " +
                     shape_str(it->second->shape),
           kReexport);
  }
  for (const TensorInfo& t : tensors_)
    if (!wanted.count(t.name))
      fail(path, "unexpected tensor " + one_line(t.name, 96) + " " + shape_str(t.shape) + " (the architecture does not use it)",
           kReexport);
  // 12. Finite weights.
  for (const TensorInfo& t : tensors_) check_finite(path, t);
  (void)info();  // every optional field readable
}

const TensorInfo& ModelFile::tensor(const std::string& name) const {
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return t;
  throw ModelError(path_ + ": missing tensor " + name + "; " + kReexport);
}

std::vector<float> ModelFile::tensor_f32(const std::string& name) const {
  const TensorInfo& t = tensor(name);
  std::vector<float> out(t.numel());
  if (t.dtype == DType::F32) {
    std::memcpy(out.data(), t.data, out.size() * sizeof(float));
  } else {
    const auto* src = static_cast<const unsigned char*>(t.data);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(read_le<std::uint16_t>(src + 2 * i));
  }
  return out;
}

ModelInfo ModelFile::info() const {
  try {
    return make_info();
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(path_ + ": header field of the wrong type (" + one_line(e.what()) + "); " + kReexport);
  }
}

ModelInfo ModelFile::make_info() const {
  const nlohmann::json& h = header_;
  ModelInfo info;
  info.path = path_;
  info.family = h["family"].get<std::string>();
  info.task = h["task"].get<std::string>();
  info.scale = h.value("scale", std::string());
  info.num_classes = h["nc"].get<int>();
  info.class_names = h["names"].get<std::vector<std::string>>();
  info.strides = h["strides"].get<std::vector<int>>();
  info.input_height = h["imgsz"][0].get<int>();
  info.input_width = h["imgsz"][1].get<int>();
  info.reg_max = h["reg_max"].get<int>();
  info.num_layers = static_cast<int>(h["layers"].size());
  std::size_t params = 0;
  for (const TensorInfo& t : tensors_) params += t.numel();
  info.num_parameters = params;
  info.dtype = h["dtype"].get<std::string>();
  if (h.contains("source") && h["source"].is_object()) {
    const auto& s = h["source"];
    std::ostringstream os;
    os << s.value("path", std::string("?"));
    if (s.contains("format")) os << " (" << s.value("format", std::string()) << ")";
    if (s.contains("producer")) os << ", " << s.value("producer", std::string());
    info.source = os.str();
  }
  return info;
}

}  // namespace yolo12::model
