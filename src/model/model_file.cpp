// model/model_file.cpp - maps a .y12 file and checks it, in the order docs/model-format.md gives.
//
// Every check that fails throws ModelError with one line: "<file>: <what> [tensor X]: expected ..,
// got ..; <what to do>". Sizes and offsets come from an untrusted file, so all arithmetic on them is
// checked for overflow before it is used, and nothing is allocated from a size the file claims.
#include "model/model_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/half.hpp"
#include "graph/graph.hpp"

namespace yolo12::model {
namespace {

constexpr char kMagic[8] = {'Y', '1', '2', 'M', 'O', 'D', 'E', 'L'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kFixedHeader = 24;
constexpr std::uint64_t kMaxHeaderBytes = 64ull << 20;
constexpr std::size_t kAlign = 256;
constexpr const char* kReexport = "re-export the model with exporter/export.py";

std::string shape_str(const std::vector<long long>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Collects the pieces of one error line.
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
  if (a > std::numeric_limits<std::uint64_t>::max() - b) return true;
  *out = a + b;
  return false;
}

std::uint64_t dtype_bytes(DType t) { return t == DType::F16 ? 2 : 4; }

// Required keys of the header and the JSON type each must have.
void check_header_keys(const std::string& path, const nlohmann::json& h) {
  using T = nlohmann::json::value_t;
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
  (void)T::null;
  for (const Key& k : keys) {
    if (!h.contains(k.name)) fail(path, std::string("header is missing the key \"") + k.name + "\"", kReexport);
    if (!k.ok(h[k.name]))
      fail(path, std::string("header key \"") + k.name + "\": expected " + k.expected + ", got " +
                     h[k.name].type_name(),
           kReexport);
  }
  if (h["format"] != "yolo12-model")
    fail(path, "header format: expected \"yolo12-model\", got " + h["format"].dump(), kReexport);
  if (h["task"] != "detect")
    fail(path, "task: expected \"detect\", got " + h["task"].dump(),
         "only detection models are supported");
  const long long nc = h["nc"].get<long long>();
  if (nc < 1 || nc > 100000) fail(path, "nc: expected 1..100000, got " + std::to_string(nc), kReexport);
  const auto& names = h["names"];
  if (names.size() != static_cast<std::size_t>(nc))
    fail(path, "names: expected " + std::to_string(nc) + " class names, got " + std::to_string(names.size()),
         kReexport);
  for (const auto& n : names)
    if (!n.is_string()) fail(path, "names: expected strings, got " + std::string(n.type_name()), kReexport);
  if (h["strides"].empty()) fail(path, "strides: expected at least one stride, got none", kReexport);
  for (const auto& s : h["strides"])
    if (!s.is_number_integer() || s.get<long long>() < 1 || s.get<long long>() > 1024)
      fail(path, "strides: expected positive integers, got " + h["strides"].dump(), kReexport);
  const auto& imgsz = h["imgsz"];
  if (imgsz.size() != 2 || !imgsz[0].is_number_integer() || !imgsz[1].is_number_integer() ||
      imgsz[0].get<long long>() < 1 || imgsz[1].get<long long>() < 1 || imgsz[0].get<long long>() > 16384 ||
      imgsz[1].get<long long>() > 16384)
    fail(path, "imgsz: expected [height, width] of positive integers, got " + imgsz.dump(), kReexport);
  const long long reg_max = h["reg_max"].get<long long>();
  if (reg_max < 1 || reg_max > 64) fail(path, "reg_max: expected 1..64, got " + std::to_string(reg_max), kReexport);
  if (h["dtype"] != "f32" && h["dtype"] != "f16")
    fail(path, "dtype: expected \"f32\" or \"f16\", got " + h["dtype"].dump(), kReexport);
  if (!h["data_size"].is_number_unsigned() && h["data_size"].get<long long>() < 0)
    fail(path, "data_size: expected a non-negative integer, got " + h["data_size"].dump(), kReexport);
}

struct RawTensor {
  std::string name;
  DType dtype;
  std::vector<long long> shape;
  std::uint64_t offset, size;
};

// Parses one entry of the tensor table (checks 7: dtype, shape and size consistency).
RawTensor parse_tensor(const std::string& path, const nlohmann::json& t, std::size_t index) {
  const std::string where = "tensor table entry " + std::to_string(index);
  if (!t.is_object()) fail(path, where + ": expected an object, got " + std::string(t.type_name()), kReexport);
  for (const char* key : {"name", "dtype", "shape", "offset", "size"})
    if (!t.contains(key)) fail(path, where + ": missing key \"" + key + "\"", kReexport);
  if (!t["name"].is_string() || t["name"].get<std::string>().empty())
    fail(path, where + ": expected a non-empty string name, got " + t["name"].dump(), kReexport);
  RawTensor r;
  r.name = t["name"].get<std::string>();
  const std::string tw = "tensor " + r.name;
  if (t["dtype"] == "f32") r.dtype = DType::F32;
  else if (t["dtype"] == "f16") r.dtype = DType::F16;
  else fail(path, tw + ": dtype: expected \"f32\" or \"f16\", got " + t["dtype"].dump(), kReexport);
  if (!t["shape"].is_array() || t["shape"].empty() || t["shape"].size() > 4)
    fail(path, tw + ": shape: expected 1 to 4 dimensions, got " + t["shape"].dump(), kReexport);
  std::uint64_t numel = 1;
  for (const auto& d : t["shape"]) {
    if (!d.is_number_integer() || d.get<long long>() < 1 || d.get<long long>() > (1ll << 32))
      fail(path, tw + ": shape: expected positive dimensions, got " + t["shape"].dump(), kReexport);
    const auto dim = static_cast<std::uint64_t>(d.get<long long>());
    if (numel > (std::numeric_limits<std::uint64_t>::max() / 8) / dim)
      fail(path, tw + ": shape " + t["shape"].dump() + " is too large", kReexport);
    numel *= dim;
    r.shape.push_back(d.get<long long>());
  }
  for (const char* key : {"offset", "size"})
    if (!t[key].is_number_unsigned() && !(t[key].is_number_integer() && t[key].get<long long>() >= 0))
      fail(path, tw + ": " + key + ": expected a non-negative integer, got " + t[key].dump(), kReexport);
  r.offset = t["offset"].get<std::uint64_t>();
  r.size = t["size"].get<std::uint64_t>();
  if (r.size != numel * dtype_bytes(r.dtype))
    fail(path,
         tw + ": size: expected " + std::to_string(numel * dtype_bytes(r.dtype)) + " bytes (" +
             shape_str(r.shape) + " x " + t["dtype"].get<std::string>() + "), got " + std::to_string(r.size),
         kReexport);
  return r;
}

}  // namespace

std::size_t TensorInfo::numel() const {
  std::size_t n = 1;
  for (long long d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

ModelFile::~ModelFile() {
  if (map_ && map_ != MAP_FAILED) ::munmap(map_, map_size_);
}

std::shared_ptr<const ModelFile> ModelFile::open(const std::string& path) {
  std::shared_ptr<ModelFile> mf(new ModelFile());
  mf->path_ = path;

  // 0. The file itself.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(path, std::string("cannot open the model file (") + std::strerror(errno) + ")",
         "check the path (export a model with exporter/export.py)");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file", "pass the path of a .y12 model file");
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size == 0) {
    ::close(fd);
    fail(path, "the file is empty (0 bytes)", kReexport);
  }
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(path, std::string("cannot map the file (") + std::strerror(errno) + ")", kReexport);
  mf->map_ = map;
  mf->map_size_ = file_size;
  const auto* bytes = static_cast<const unsigned char*>(map);

  // 1. Magic.
  if (file_size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    fail(path, "not a yolo12 model file: magic bytes: expected \"Y12MODEL\"",
         "convert the checkpoint with exporter/export.py (a .pt or .onnx file is not read directly)");
  // 2. Version.
  if (file_size < 12) fail(path, "truncated: the file ends inside the fixed header (" + std::to_string(file_size) + " bytes)", kReexport);
  const auto version = read_le<std::uint32_t>(bytes + 8);
  if (version != kVersion)
    fail(path, "format version: expected " + std::to_string(kVersion) + ", got " + std::to_string(version),
         "this build reads version 1 only; re-export the model with this release's exporter/export.py");
  // 3. Header length.
  if (file_size < kFixedHeader)
    fail(path, "truncated: the file ends inside the fixed header (" + std::to_string(file_size) + " bytes)", kReexport);
  if (read_le<std::uint32_t>(bytes + 12) != 0)
    fail(path, "reserved header field: expected 0, got " + std::to_string(read_le<std::uint32_t>(bytes + 12)), kReexport);
  const auto header_len = read_le<std::uint64_t>(bytes + 16);
  if (header_len == 0 || header_len > kMaxHeaderBytes)
    fail(path, "header length: expected 1 to " + std::to_string(kMaxHeaderBytes) + " bytes, got " + std::to_string(header_len),
         kReexport);
  if (kFixedHeader + header_len > file_size)
    fail(path, "truncated: header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)",
         kReexport);
  // 4. JSON.
  const char* json_begin = reinterpret_cast<const char*>(bytes + kFixedHeader);
  try {
    mf->header_ = nlohmann::json::parse(json_begin, json_begin + header_len);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    fail(path, "header JSON does not parse: " + msg, kReexport);
  }
  const nlohmann::json& h = mf->header_;
  if (!h.is_object()) fail(path, "header JSON: expected an object, got " + std::string(h.type_name()), kReexport);
  check_header_keys(path, h);

  // 5. Alignment.
  const std::uint64_t data_start = (kFixedHeader + header_len + kAlign - 1) / kAlign * kAlign;
  const auto data_size = h["data_size"].get<std::uint64_t>();
  std::vector<RawTensor> raw;
  const auto& table = h["tensors"];
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& t = table[i];
    if (t.is_object() && t.contains("offset") && t["offset"].is_number_unsigned() &&
        t["offset"].get<std::uint64_t>() % kAlign != 0)
      fail(path,
           "tensor " + (t.contains("name") ? t["name"].dump() : std::to_string(i)) + ": offset " +
               t["offset"].dump() + " is not a multiple of 256",
           kReexport);
  }
  // 6. Duplicate names.
  {
    std::set<std::string> seen;
    for (const auto& t : table) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      if (!seen.insert(t["name"].get<std::string>()).second)
        fail(path, "duplicate tensor name " + t["name"].dump(), kReexport);
    }
  }
  // 7. dtype / shape / size.
  for (std::size_t i = 0; i < table.size(); ++i) raw.push_back(parse_tensor(path, table[i], i));
  // 8. Bounds and overlap.
  std::uint64_t end_of_data = 0;
  if (add_overflows(data_start, data_size, &end_of_data) || end_of_data > file_size)
    fail(path, "truncated: expected " + std::to_string(data_start) + " + " + std::to_string(data_size) +
                   " bytes (header + data), got a file of " + std::to_string(file_size),
         kReexport);
  if (end_of_data < file_size)
    fail(path, "trailing bytes: expected the file to end at " + std::to_string(end_of_data) + ", got " +
                   std::to_string(file_size) + " bytes",
         kReexport);
  for (const RawTensor& r : raw) {
    std::uint64_t end = 0;
    if (add_overflows(r.offset, r.size, &end) || end > data_size)
      fail(path, "tensor " + r.name + ": offset " + std::to_string(r.offset) + " + size " + std::to_string(r.size) +
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
        fail(path, "tensors " + by_offset[i - 1]->name + " and " + by_offset[i]->name + " overlap (offsets " +
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
    mf->tensors_.push_back(std::move(ti));
  }
  // 9. The exact set and shapes the architecture requires.
  std::vector<graph::ParamSpec> required;
  try {
    required = graph::required_params(h);
  } catch (const ModelError& e) {
    fail(path, std::string("architecture: ") + e.what(), "this engine does not implement that architecture");
  }
  std::unordered_map<std::string, const TensorInfo*> have;
  for (const TensorInfo& t : mf->tensors_) have[t.name] = &t;
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
  for (const TensorInfo& t : mf->tensors_)
    if (!wanted.count(t.name))
      fail(path, "unexpected tensor " + t.name + " " + shape_str(t.shape) + " (the architecture does not use it)",
           kReexport);
  (void)mf->info();  // every optional field readable
  return mf;
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
    throw ModelError(path_ + ": header field of the wrong type (" + e.what() + "); " + kReexport);
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
