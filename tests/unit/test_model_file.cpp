// Loader tests: a valid tiny model loads; every kind of corrupt file is refused with its specific,
// single-line ModelError (naming the file, and the tensor where there is one); nothing crashes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>

#include "catch.hpp"
#include "core/log.hpp"
#include "graph/graph.hpp"
#include "model/checksum.hpp"
#include "model/json_field.hpp"
#include "model/memory_budget.hpp"
#include "model/model_file.hpp"
#include "model_writer.hpp"
#include "support.hpp"

using yolo12::ModelError;
using yolo12::model::ModelFile;
using namespace yolo12::test;

namespace {

// Opens `bytes` as a model file and returns the error message ("" if it loaded).
std::string load_error(const std::string& bytes, const std::string& name = "case.y12") {
  const std::string path = scratch_path(name);
  write_file(path, bytes);
  try {
    ModelFile::open(path);
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    // Single line, names the file.
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find(path) != std::string::npos);
    return msg;
  }
  return "";
}

// The same through ModelFile::from_bytes (no file written; for loops over many variants).
std::string bytes_error(const std::string& bytes) {
  try {
    ModelFile::from_bytes("mem.y12", bytes.data(), bytes.size());
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.rfind("mem.y12: ", 0) == 0);
    return msg;
  }
  return "";
}

// Splits a serialized file into its header JSON and data blob.
struct Parts {
  nlohmann::json header;
  std::string data;
};
Parts split(const std::string& bytes) {
  std::uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[16 + i])) << (8 * i);
  Parts p;
  p.header = nlohmann::json::parse(bytes.substr(24, len));
  const std::size_t data_start = (24 + len + 255) / 256 * 256;
  p.data = bytes.substr(data_start);
  return p;
}
std::string join(const Parts& p) { return serialize_raw(p.header.dump(), p.data); }

bool contains(const std::string& msg, const std::string& what) {
  if (msg.find(what) != std::string::npos) return true;
  UNSCOPED_INFO("message: " << msg);
  UNSCOPED_INFO("expected to contain: " << what);
  return false;
}

}  // namespace

TEST_CASE("a valid model file loads and reads back its tensors", "[model]") {
  TestModel m = tiny_model(3, 7);
  m.header["dtype"] = "f16";
  for (auto& t : m.tensors) t.dtype = "f16";
  const std::string path = scratch_path("valid.y12");
  write_file(path, serialize(m));
  auto mf = ModelFile::open(path);
  REQUIRE(mf->tensors().size() == m.tensors.size());
  const auto info = mf->info();
  CHECK(info.family == "yolo12");
  CHECK(info.num_classes == 3);
  CHECK(info.class_names.size() == 3);
  CHECK(info.input_height == 64);
  CHECK(info.num_layers == 6);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto got = mf->tensor_f32(m.tensors[i].name);
    REQUIRE(got.size() == m.tensors[i].values.size());
    const float tol = m.tensors[i].dtype == "f16" ? 2e-3f : 0.f;
    for (std::size_t j = 0; j < got.size(); ++j)
      REQUIRE(std::abs(got[j] - m.tensors[i].values[j]) <= tol * std::abs(m.tensors[i].values[j]) + tol);
  }
  for (const auto& t : mf->tensors()) CHECK(reinterpret_cast<std::uintptr_t>(t.data) % 256 == 0);
  REQUIRE_THROWS_AS(mf->tensor("no.such.tensor"), ModelError);
}

TEST_CASE("missing, empty and non-regular files", "[model]") {
  CHECK(contains(load_error("", "empty.y12"), "empty"));
  try {
    ModelFile::open(scratch_path("does-not-exist.y12"));
    FAIL("no error");
  } catch (const ModelError& e) {
    CHECK(contains(e.what(), "cannot open"));
    CHECK(contains(e.what(), "does-not-exist.y12"));
  }
  try {
    ModelFile::open(binary_dir());
    FAIL("no error");
  } catch (const ModelError& e) {
    CHECK(contains(e.what(), "not a regular file"));
  }
}

TEST_CASE("truncated files are refused at every offset", "[model]") {
  const std::string good = serialize(tiny_model());
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<std::uint64_t>(static_cast<unsigned char>(good[16 + i])) << (8 * i);
  const std::size_t data_start = (24 + hlen + 255) / 256 * 256;
  std::vector<std::size_t> cuts;
  for (std::size_t c = 1; c < 24; ++c) cuts.push_back(c);
  for (std::size_t c = 24; c < 24 + hlen; c += std::max<std::size_t>(1, hlen / 97)) cuts.push_back(c);
  for (std::size_t c = 24 + hlen; c < good.size(); c += std::max<std::size_t>(1, (good.size() - 24 - hlen) / 211))
    cuts.push_back(c);
  cuts.push_back(good.size() - 1);
  for (std::size_t cut : cuts) {
    INFO("truncated to " << cut << " of " << good.size() << " bytes");
    const std::string msg = load_error(good.substr(0, cut));
    REQUIRE(!msg.empty());
    if (cut < 8) CHECK(contains(msg, "magic"));
    else if (cut < 24 + hlen) CHECK(contains(msg, "truncated"));
    else CHECK(contains(msg, "truncated: expected " + std::to_string(data_start)));
  }
}

TEST_CASE("fixed header fields", "[model]") {
  const std::string good = serialize(tiny_model());
  std::string b = good;
  b[3] ^= 0x20;
  CHECK(contains(load_error(b), "magic bytes"));
  b = good;
  b[8] = 3;
  CHECK(contains(load_error(b), "format version: expected 1 or 2, got 3"));
  b = good;
  b[8] = 2;  // a version-1 body claiming version 2: no trailer
  CHECK(contains(load_error(b), "\"Y12CHECK\" trailer"));
  b = good;
  b[12] = 1;
  CHECK(contains(load_error(b), "reserved header field"));
  for (std::uint64_t len : {std::uint64_t{0}, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    b = good;
    for (int i = 0; i < 8; ++i) b[16 + i] = static_cast<char>((len >> (8 * i)) & 0xff);
    CHECK(contains(load_error(b), "header length: expected 1 to"));
  }
  b = good.substr(0, 24 + 100);
  for (int i = 0; i < 8; ++i) b[16 + i] = static_cast<char>(((1000ull) >> (8 * i)) & 0xff);
  CHECK(contains(load_error(b), "runs past the end of the file"));
}

TEST_CASE("header JSON", "[model]") {
  const Parts good = split(serialize(tiny_model()));
  CHECK(contains(load_error(serialize_raw("{\"format\": \"yolo12-model\", ", good.data)), "header JSON does not parse"));
  CHECK(contains(load_error(serialize_raw("[1, 2, 3]", good.data)), "expected an object, got array"));
  // Flip a byte inside the JSON text.
  std::string b = join(good);
  b[24 + 1] = '#';
  CHECK(contains(load_error(b), "does not parse"));
  for (const char* key : {"format", "family", "task", "nc", "names", "strides", "imgsz", "reg_max", "dtype", "layers",
                          "tensors", "data_size"}) {
    Parts p = good;
    p.header.erase(key);
    INFO("key " << key);
    CHECK(contains(load_error(join(p)), std::string("missing the key \"") + key + "\""));
  }
  Parts p = good;
  p.header["nc"] = "three";
  CHECK(contains(load_error(join(p)), "header key \"nc\": expected an integer, got string"));
  p = good;
  p.header["names"].push_back("extra");
  CHECK(contains(load_error(join(p)), "names: expected 3 class names, got 4"));
  p = good;
  p.header["task"] = "segment";
  CHECK(contains(load_error(join(p)), "task: expected \"detect\""));
  p = good;
  p.header["imgsz"] = {640};
  CHECK(contains(load_error(join(p)), "imgsz: expected [height, width]"));
  p = good;
  p.header["format"] = "gguf";
  CHECK(contains(load_error(join(p)), "header format: expected \"yolo12-model\""));
}

TEST_CASE("tensor table", "[model]") {
  const Parts good = split(serialize(tiny_model()));
  const std::string t0 = good.header["tensors"][0]["name"];
  const std::string t1 = good.header["tensors"][1]["name"];
  auto with = [&](auto&& edit) {
    Parts p = good;
    edit(p.header["tensors"]);
    return load_error(join(p));
  };
  std::string msg = with([](auto& t) { t[1]["offset"] = t[1]["offset"].template get<std::uint64_t>() + 4; });
  CHECK(contains(msg, "is not a multiple of 256"));
  CHECK(contains(msg, t1));
  msg = with([&](auto& t) { t[1]["name"] = t0; });
  CHECK(contains(msg, "duplicate tensor name \"" + t0 + "\""));
  msg = with([](auto& t) { t[0]["dtype"] = "bf16"; });
  CHECK(contains(msg, "tensor " + t0 + ": dtype: expected"));
  msg = with([](auto& t) { t[0]["shape"][1] = 0; });
  CHECK(contains(msg, "expected positive dimensions"));
  msg = with([](auto& t) { t[0]["shape"][0] = -4; });
  CHECK(contains(msg, "expected positive dimensions"));
  msg = with([](auto& t) { t[0]["shape"] = nlohmann::json::array({1, 1, 1, 1, 1}); });
  CHECK(contains(msg, "expected 1 to 4 dimensions"));
  msg = with([](auto& t) { t[0]["size"] = t[0]["size"].template get<std::uint64_t>() - 4; });
  CHECK(contains(msg, "tensor " + t0 + ": size: expected"));
  msg = with([](auto& t) { t[0]["shape"] = {4294967296ll, 4294967296ll, 4294967296ll}; });
  CHECK(contains(msg, "expected positive dimensions of at most 16384"));
  msg = with([](auto& t) { t.back()["offset"] = t.back()["offset"].template get<std::uint64_t>() + 1024 * 256; });
  CHECK(contains(msg, "out of bounds"));
  msg = with([](auto& t) { t[0]["offset"] = 18446744073709551360ull; });  // 2^64 - 256
  CHECK(contains(msg, "offset: expected an integer in 0..4294967296, got 18446744073709551360"));
  msg = with([](auto& t) { t[1]["offset"] = t[0]["offset"]; });
  CHECK(contains(msg, "overlap"));
  msg = with([](auto& t) { t[0]["name"] = 17; });
  CHECK(contains(msg, "expected a non-empty string name"));
  msg = with([](auto& t) { t[0].erase("size"); });
  CHECK(contains(msg, "missing key \"size\""));
}

TEST_CASE("data section bounds", "[model]") {
  const Parts good = split(serialize(tiny_model()));
  Parts p = good;
  p.data += std::string(300, 'x');
  CHECK(contains(load_error(join(p)), "trailing bytes"));
  p = good;
  p.header["data_size"] = good.data.size() + 256;
  CHECK(contains(load_error(join(p)), "truncated: expected"));
  p = good;
  p.header["data_size"] = 18446744073709551615ull;
  CHECK(contains(load_error(join(p)), "data_size: expected an integer in 0..4294967296"));
}

TEST_CASE("the tensors must be exactly those the architecture requires", "[model]") {
  TestModel base = tiny_model();
  {
    TestModel m = base;
    const std::string name = m.tensors[2].name;
    m.tensors.erase(m.tensors.begin() + 2);
    const std::string msg = load_error(serialize(m));
    CHECK(contains(msg, "missing tensor " + name + " (expected shape ["));
  }
  {
    TestModel m = base;
    m.tensors.push_back({"model.99.conv.weight", {4, 4}, "f32", std::vector<float>(16, 0.5f)});
    CHECK(contains(load_error(serialize(m)), "unexpected tensor model.99.conv.weight [4, 4]"));
  }
  {
    TestModel m = base;
    auto& t = m.tensors[0];
    auto str = [](const std::vector<long long>& s) {
      std::string r = "[";
      for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
      return r + "]";
    };
    const std::string expected = str(t.shape);
    t.shape[0] += 1;
    t.values.resize(t.values.size() / (t.shape[0] - 1) * t.shape[0], 0.25f);
    const std::string msg = load_error(serialize(m));
    CHECK(contains(msg, "wrong shape for tensor " + t.name + ": expected " + expected + ", got " + str(t.shape)));
  }
  {
    TestModel m = base;
    m.header["layers"][2]["type"] = "FancyBlock";
    CHECK(contains(load_error(serialize(m)), "architecture:"));
  }
}

TEST_CASE("random byte flips anywhere in the header never crash the loader", "[model]") {
  const std::string good = serialize(tiny_model());
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<std::uint64_t>(static_cast<unsigned char>(good[16 + i])) << (8 * i);
  std::mt19937 rng(99);
  int refused = 0, loaded = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      const std::size_t at = rng() % (24 + hlen);  // fixed header and JSON, where the structure lives
      b[at] = static_cast<char>(static_cast<unsigned char>(b[at]) ^ (1u << (rng() % 8)));
    }
    // Either a clean load or a ModelError: anything else (another exception, a crash) fails the test.
    const std::string path = scratch_path("fuzz.y12");
    write_file(path, b);
    try {
      ModelFile::open(path)->info();
      ++loaded;
    } catch (const ModelError&) {
      ++refused;
    }
  }
  INFO("refused " << refused << ", loaded " << loaded);
  CHECK(refused > 300);  // most flips break something the loader checks
}

// ---- issue 13: hardening --------------------------------------------------------------------------

namespace {

using yolo12::model::tree_checksum;
using yolo12::model::xxh64;

// `bytes` (a version-1 file) as version 2: the version field set to 2 and the trailer appended.
std::string to_v2(std::string bytes) {
  bytes[8] = 2;
  const std::uint64_t sum = tree_checksum(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  bytes += "Y12CHECK";
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  return bytes;
}

// A JSON text: `depth` nested arrays around a 1.
std::string nested(int depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

// Replaces the JSON text of `key` in the header of `bytes` (a v1 file) by `text`, and returns the file.
std::string with_raw_value(const std::string& bytes, const std::function<void(nlohmann::json&)>& mark,
                           const std::string& text) {
  Parts p = split(bytes);
  mark(p.header);  // sets the field to the string "@@"
  std::string json = p.header.dump();
  const std::size_t at = json.find("\"@@\"");
  REQUIRE(at != std::string::npos);
  json.replace(at, 4, text);
  return serialize_raw(json, p.data);
}

// Captures what the library writes to stderr (the log) while f runs.
std::string capture_stderr(const std::function<void()>& f) {
  std::fflush(stderr);
  const std::string path = scratch_path("stderr.txt");
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 2);
  ::close(fd);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("xxh64 matches the published vectors and the tree checksum its definition", "[model][checksum]") {
  CHECK(xxh64("", 0, 0) == 0xEF46DB3751D8E999ull);
  CHECK(xxh64("a", 1, 0) == 0xD24EC4F1A98C6E5Bull);
  CHECK(xxh64("abc", 3, 0) == 0x44BC2CF5AD770999ull);
  CHECK(xxh64("", 0, 1) == 0xD5AFBA1336A3BE4Bull);
  std::string r256;
  for (int i = 0; i < 768; ++i) r256.push_back(static_cast<char>(i & 255));
  CHECK(xxh64(r256.data(), r256.size(), 0) == 0x8E03C838C596036Full);
  CHECK(xxh64(r256.data(), r256.size(), 2654435761ull) == 0x8E06C6A027F6B435ull);
  std::string m;
  for (int i = 0; i < 5; ++i) m += "Y12MODEL";
  CHECK(xxh64(m.data(), m.size(), 7) == 0x17FECE22093B3754ull);
  // Every tail length path (stripes, 8-, 4- and 1-byte tails); values from the xxhash package.
  auto pattern = [](std::size_t n) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + 7) & 255);
    return v;
  };
  const std::pair<std::size_t, std::uint64_t> tails[] = {{31, 0x6711D55E306B5D8Full}, {32, 0x07F7B8E3BC5D6E25ull},
                                                         {33, 0x09F85EEB4E1CBE9Full}, {63, 0xB7C9968C066CB6A5ull},
                                                         {64, 0x50D4159A0411632Eull}, {100, 0x9DDADA11D3DC2D8Full}};
  for (const auto& [n, want] : tails) {
    INFO("length " << n);
    const auto v = pattern(n);
    CHECK(xxh64(v.data(), n, 0) == want);
  }
  // The tree: a short last chunk (200000 = 3 x 65536 + 3392) and an exact multiple (no empty chunk),
  // on one thread and on several (the same value).
  const auto big = pattern(200000), even = pattern(131072);
  for (unsigned threads : {1u, 3u, 0u}) {
    CHECK(tree_checksum(big.data(), big.size(), threads) == 0x9189E20DE848BD9Bull);
    CHECK(tree_checksum(even.data(), even.size(), threads) == 0xDC571C564A3BCAE2ull);
  }
}

TEST_CASE("version 2: the checksum is verified, version 1 loads with a warning", "[model][checksum]") {
  const std::string v1 = serialize(tiny_model());
  const std::string v2 = to_v2(v1);
  const std::string path = scratch_path("v2.y12");
  write_file(path, v2);
  CHECK(ModelFile::open(path)->format_version() == 2);

  const std::string v1_path = scratch_path("v1-warning.y12");
  write_file(v1_path, v1);
  const auto saved_level = yolo12::log::level();
  yolo12::log::set_level(yolo12::log::Level::Warn);
  const std::string log = capture_stderr([&] { CHECK(ModelFile::open(v1_path)->format_version() == 1); });
  CHECK(contains(log, v1_path + ": format version 1 has no checksum"));
  CHECK(contains(log, "re-export"));
  // Said once per file, not at every open.
  CHECK(capture_stderr([&] { ModelFile::open(v1_path); }).find("no checksum") == std::string::npos);
  yolo12::log::set_level(saved_level);

  // Any changed byte of a v2 file is refused: every byte of the fixed header, JSON, padding, tensor data
  // and trailer is flipped in turn (in steps, to keep the test short).
  const std::size_t data_start = v1.size() - split(v1).data.size();
  int mismatches = 0;
  for (std::size_t at = 0; at < v2.size(); at += (at < 24 || at + 64 > v2.size() ? 1 : at < data_start ? 7 : 61)) {
    std::string b = v2;
    b[at] = static_cast<char>(b[at] ^ 0x10);
    const std::string msg = bytes_error(b);
    INFO("byte " << at << " of " << v2.size());
    REQUIRE(!msg.empty());
    if (at >= 24 && at < v2.size() - 16) {
      CHECK(contains(msg, "checksum mismatch (expected 0x"));
      CHECK(contains(msg, ", file says 0x"));
      CHECK(contains(msg, "the file is corrupt or was changed after export; re-export it"));
      ++mismatches;
    }
  }
  CHECK(mismatches > 500);
  CHECK(contains(load_error(v2.substr(0, v2.size() - 1)), "\"Y12CHECK\" trailer"));
  CHECK(contains(load_error(v2.substr(0, v2.size() - 16)), "\"Y12CHECK\" trailer"));
  CHECK(contains(load_error(v2 + "x"), "\"Y12CHECK\" trailer"));
  // A correct checksum over a wrong layout still meets the layout checks.
  CHECK(contains(load_error(to_v2(v1 + std::string(256, '\0'))), "trailing bytes: expected the file to end at"));
}

TEST_CASE("deeply nested JSON is refused at parse time, in every field", "[model][limits]") {
  // 10^5 levels used to overflow the stack while the error message dumped the value.
  const std::string good = serialize(tiny_model());
  using J = nlohmann::json;
  const std::vector<std::pair<std::string, std::function<void(J&)>>> fields = {
      {"tensors[0].shape", [](J& h) { h["tensors"][0]["shape"] = "@@"; }},
      {"strides", [](J& h) { h["strides"] = "@@"; }},
      {"imgsz", [](J& h) { h["imgsz"] = "@@"; }},
      {"layers[1].from", [](J& h) { h["layers"][1]["from"] = "@@"; }},
      {"layers[5].ch", [](J& h) { h["layers"][5]["ch"] = "@@"; }},
      {"names[0]", [](J& h) { h["names"][0] = "@@"; }},
  };
  for (const auto& [name, mark] : fields) {
    INFO(name);
    for (int depth : {9, 1000, 100000}) {
      const std::string msg = load_error(with_raw_value(good, mark, nested(depth)));
      CHECK(contains(msg, "header JSON: nested deeper than 8 levels"));
      CHECK(msg.size() < 300);
      CHECK(contains(load_error(to_v2(with_raw_value(good, mark, nested(depth)))), "nested deeper than 8 levels"));
    }
  }
  // The real nesting (4 levels) is well inside: a 6-deep value passes the parse and meets the field check.
  const std::string msg = load_error(with_raw_value(good, fields[1].second, nested(5)));
  CHECK(contains(msg, "strides: expected an integer in 1..256, got an array of 1 element;"));
  // Many values: a million-element array is refused while parsing.
  std::string many = "[";
  for (int i = 0; i < (1 << 20); ++i) many += "0,";
  many += "0]";
  CHECK(contains(load_error(with_raw_value(good, fields[1].second, many)), "more than 1048576 values"));
}

TEST_CASE("untrusted values are described briefly in messages", "[model][limits]") {
  const std::string good = serialize(tiny_model());
  Parts p = split(good);
  p.header["strides"] = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) p.header["strides"].push_back(8);
  std::string msg = load_error(join(p));
  CHECK(contains(msg, "strides: expected 1 to 8 strides, got an array of 100000 elements"));
  CHECK(msg.size() < 300);
  p = split(good);
  p.header["format"] = std::string(100000, 'x') + "\n";
  msg = load_error(join(p));
  CHECK(contains(msg, "header format: expected \"yolo12-model\", got \"xxxxxxxx"));
  CHECK(msg.size() < 300);
  p = split(good);
  p.header["tensors"][0]["name"] = "evil\nname";
  p.header["tensors"][0]["dtype"] = "bf16";
  msg = load_error(join(p));  // load_error checks the message is one line
  CHECK(contains(msg, "tensor evil name: dtype"));
}

TEST_CASE("a FIFO, a directory or a device is refused without blocking", "[model]") {
  const std::string fifo = scratch_path("model.fifo");
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::atomic<int> state{0};  // 0 running, 1 refused cleanly, 2 something else
  std::string message;
  std::thread t([&] {
    try {
      ModelFile::open(fifo);
      state = 2;
    } catch (const ModelError& e) {
      message = e.what();
      state = 1;
    }
  });
  for (int i = 0; i < 500 && state == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (state == 0) {  // blocked in open(): release it by opening the write end, then fail
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    t.join();
    if (w >= 0) ::close(w);
    FAIL("ModelFile::open blocked on a FIFO");
  }
  t.join();
  CHECK(state == 1);
  CHECK(contains(message, "not a regular file (a FIFO)"));
  ::unlink(fifo.c_str());
  try {
    ModelFile::open("/dev/zero");
    FAIL("no error");
  } catch (const ModelError& e) {
    CHECK(contains(e.what(), "not a regular file (a character device)"));
  }
}

TEST_CASE("class names and the scale are short printable text", "[model][limits]") {
  // Found by the hostile corpus: these loaded, and a name's newline went into label lines as is.
  const Parts good = split(serialize(tiny_model()));
  const std::string expect_names = "names: expected names of 1 to 256 bytes without control characters";
  for (const std::string& bad : {std::string(""), std::string("a\nb"), std::string("x\x1b[2J"), std::string(300, 'x')}) {
    Parts p = good;
    p.header["names"][0] = bad;
    CHECK(contains(load_error(join(p)), expect_names));
  }
  for (const std::string& bad : {std::string("n\n"), std::string(17, 'x'), std::string("\x7f")}) {
    Parts p = good;
    p.header["scale"] = bad;
    CHECK(contains(load_error(join(p)), "scale: expected a string of at most 16 bytes without control characters"));
  }
  Parts p = good;
  p.header["scale"] = "";  // a model without a scale letter
  p.header["names"][0] = "traffic light \xc3\xa9";  // UTF-8 is fine
  CHECK_NOTHROW(ModelFile::from_bytes("ok.y12", join(p).data(), join(p).size()));
}

TEST_CASE("the model family's limits are checked before anything is built", "[model][limits]") {
  // Each case took seconds to minutes and gigabytes before (issue 13); now each is refused at once.
  TestModel base = tiny_model();
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* message;
  };
  const Case cases[] = {
      {"n = 2^31-1", [](auto& h) { h["layers"][2] = {{"index", 2}, {"type", "C2f"}, {"from", {1}}, {"c1", 16}, {"c2", 16}, {"n", 2147483647}, {"shortcut", true}, {"e", 0.5}}; },
       "layer 2 (\"C2f\") field 'n': expected an integer in 0..32, got 2147483647"},
      {"n = 10^6", [](auto& h) { h["layers"][2] = {{"index", 2}, {"type", "C2f"}, {"from", {1}}, {"c1", 16}, {"c2", 16}, {"n", 1000000}, {"shortcut", true}, {"e", 0.5}}; },
       "field 'n': expected an integer in 0..32, got 1000000"},
      {"100,000 layers", [](auto& h) {
         auto layers = nlohmann::json::array();
         for (int i = 0; i < 100000; ++i) layers.push_back({{"type", "Conv"}});
         h["layers"] = layers;
       }, "layers: expected 1 to 256 layers, got 100000"},
      {"imgsz 8192", [](auto& h) { h["imgsz"] = {8192, 8192}; }, "imgsz: expected an integer in 1..4096, got 8192"},
      {"channels", [](auto& h) { h["layers"][0]["c2"] = 1 << 20; }, "field 'c2': expected an integer in 1..16384, got 1048576"},
      {"kernel", [](auto& h) { h["layers"][0]["k"] = 99; }, "field 'k': expected an integer in 1..15"},
      {"e = 1e300", [](auto& h) { h["layers"][0]["e"] = 1e300; }, "field 'e': expected a number in (0, 4.0], got 1e+300"},
      {"nc", [](auto& h) { h["nc"] = 100000; }, "nc: expected an integer in 1..16384, got 100000"},
      {"a long class name", [](auto& h) { h["names"][0] = std::string(300, 'n'); }, "names: expected names of 1 to 256 bytes"},
      {"strides", [](auto& h) { h["strides"] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048}; }, "strides: expected 1 to 8 strides"},
      {"from far ahead", [](auto& h) { h["layers"][1]["from"] = {7}; }, "field 'from': expected -1 (the input image) or an earlier layer (below 1), got [7]"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    TestModel m = base;
    c.edit(m.header);
    const std::string bytes = serialize(m);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string msg = bytes_error(bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(contains(msg, c.message));
    CHECK(s < 2.0);
  }
  // The sum of the repeats: 9 layers of n = 30 each are within the per-layer limit, not the total.
  TestModel m = base;
  auto layers = nlohmann::json::array();
  layers.push_back(m.header["layers"][0]);
  for (int i = 1; i < 10; ++i)
    layers.push_back({{"index", i}, {"type", "C2f"}, {"from", {i - 1}}, {"c1", 8}, {"c2", 8}, {"n", 30}, {"shortcut", true}, {"e", 0.5}});
  m.header["layers"] = layers;
  CHECK(contains(load_error(serialize(m)), "layers: the repeats n add up to 270, expected at most 256"));
}

TEST_CASE("integers are read exactly", "[model][limits]") {
  using yolo12::model::exact_int;
  long long v = 0;
  CHECK((exact_int(nlohmann::json(3), 0, 10, &v) && v == 3));
  CHECK((exact_int(nlohmann::json(-1), -1, 10, &v) && v == -1));
  CHECK(!exact_int(nlohmann::json(3.0), 0, 10, &v));
  CHECK(!exact_int(nlohmann::json("3"), 0, 10, &v));
  CHECK(!exact_int(nlohmann::json(true), 0, 10, &v));
  CHECK(!exact_int(nlohmann::json(-1), 0, 10, &v));
  CHECK(!exact_int(nlohmann::json(4294967299ull), 0, 2147483647, &v));  // 2^32 + 3 is not 3
  CHECK(!exact_int(nlohmann::json(18446744073709551615ull), -1, 10, &v));
  CHECK(!exact_int(nlohmann::json::parse("1e300"), 0, 10, &v));

  // In a file: before, the builder read c2 = 2^32 + 8 as 8 and k = 3.0 as 3, and the model loaded.
  const Parts good = split(serialize(tiny_model()));
  Parts p = good;
  p.header["layers"][0]["c2"] = 4294967304ull;
  CHECK(contains(load_error(join(p)), "layer 0 (\"Conv\") field 'c2': expected an integer in 1..16384, got 4294967304"));
  p = good;
  p.header["layers"][0]["k"] = 3.0;
  CHECK(contains(load_error(join(p)), "field 'k': expected an integer in 1..15, got 3.0"));
  p = good;
  p.header["layers"][0]["p"] = -1;
  CHECK(contains(load_error(join(p)), "field 'p': expected an integer in 0..64, got -1"));
  p = good;
  p.header["layers"][5]["ch"][0] = 4294967312ull;  // 2^32 + 16
  CHECK(contains(load_error(join(p)), "field 'ch': expected channel counts in 1..16384"));
  p = good;
  p.header["imgsz"] = {4294967360ull, 64};
  CHECK(contains(load_error(join(p)), "imgsz: expected an integer in 1..4096, got 4294967360"));
  p = good;
  p.header["tensors"][0]["size"] = 1728.0;
  CHECK(contains(load_error(join(p)), ": size: expected an integer in 0..4294967296, got 1728.0"));
  p = good;
  p.header["layers"][3]["index"] = 4294967299ull;
  CHECK(contains(load_error(join(p)), "layer 3 (\"Conv\") field 'index': expected 3, got 4294967299"));
}

TEST_CASE("tensor dtypes agree with the header's dtype; gamma is always f32", "[model]") {
  // f16 tensors in an f32 file, and the reverse, loaded before and gave garbage boxes.
  for (const char* header_dtype : {"f32", "f16"}) {
    const char* other = std::string(header_dtype) == "f32" ? "f16" : "f32";
    TestModel m = tiny_model();
    m.header["dtype"] = header_dtype;
    for (auto& t : m.tensors) t.dtype = header_dtype;
    write_file(scratch_path("dtype.y12"), serialize(m));
    CHECK_NOTHROW(ModelFile::open(scratch_path("dtype.y12")));
    for (std::size_t i : {std::size_t{0}, std::size_t{3}, m.tensors.size() - 1}) {
      TestModel bad = m;
      bad.tensors[i].dtype = other;
      INFO("header " << header_dtype << ", tensor " << bad.tensors[i].name);
      CHECK(contains(load_error(serialize(bad)), "tensor " + bad.tensors[i].name + ": dtype: expected \"" +
                                                     header_dtype + "\" (the header's dtype), got \"" + other + "\""));
    }
  }
  // A residual A2C2f stores a gamma: f32 even in an f16 file.
  TestModel m = tiny_model();
  auto& layers = m.header["layers"];
  layers[4]["c2"] = 64;
  layers.insert(layers.begin() + 5, nlohmann::json{{"index", 5}, {"type", "A2C2f"}, {"from", {4}}, {"c1", 64}, {"c2", 64},
                                                   {"n", 1}, {"a2", true}, {"area", 1}, {"residual", true},
                                                   {"mlp_ratio", 1.2}, {"e", 0.5}, {"g", 1}, {"shortcut", true},
                                                   {"attn", "qkv"}, {"pe_k", 7}});
  layers[6]["index"] = 6;
  layers[6]["from"] = {2, 3, 5};
  layers[6]["ch"] = {16, 16, 64};
  m.header["dtype"] = "f16";
  m.tensors.clear();
  for (const auto& spec : yolo12::graph::required_params(m.header)) {
    TestTensor t{spec.name, spec.shape, "f16", {}};
    std::size_t n = 1;
    for (long long d : spec.shape) n *= static_cast<std::size_t>(d);
    t.values.assign(n, 0.01f);
    if (spec.name == "model.5.gamma") t.dtype = "f32";
    m.tensors.push_back(t);
  }
  write_file(scratch_path("gamma.y12"), serialize(m));
  CHECK_NOTHROW(ModelFile::open(scratch_path("gamma.y12")));
  for (auto& t : m.tensors)
    if (t.name == "model.5.gamma") t.dtype = "f16";
  CHECK(contains(load_error(serialize(m)),
                 "tensor model.5.gamma: dtype: expected \"f32\" (layer-scale tensors are always f32), got \"f16\""));
}

TEST_CASE("non-finite weights are refused, naming the tensor", "[model]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* dtype : {"f32", "f16"}) {
    for (float bad : {nan, inf, -inf}) {
      TestModel m = tiny_model();
      m.header["dtype"] = dtype;
      for (auto& t : m.tensors) t.dtype = dtype;
      m.tensors[2].values[5] = bad;
      INFO(dtype << " " << bad);
      const std::string msg = load_error(serialize(m));
      CHECK(contains(msg, "tensor " + m.tensors[2].name + ": element 5 of "));
      CHECK(contains(msg, std::isnan(bad) ? "is NaN: expected finite weights" : "is infinite: expected finite weights"));
    }
  }
  // The last element of a large tensor too (the blocked scan).
  TestModel m = tiny_model();
  auto& t = m.tensors.back();
  t.values.back() = nan;
  CHECK(contains(load_error(serialize(m)), "element " + std::to_string(t.values.size() - 1)));
}

TEST_CASE("the loaded model is the engine's own copy: changing the file afterwards cannot reach it", "[model]") {
  // Before, the tensors were a memory map: truncating the file under a loaded model made reading a
  // tensor a SIGBUS.
  TestModel m = tiny_model(3, 11);
  const std::string path = scratch_path("owned.y12");
  write_file(path, to_v2(serialize(m)));
  auto mf = ModelFile::open(path);
  ::truncate(path.c_str(), 0);
  write_file(path, "garbage");
  for (const auto& t : m.tensors) {
    const auto got = mf->tensor_f32(t.name);
    REQUIRE(got == t.values);
  }
}

TEST_CASE("a model overwritten while it loads gives a clean error or the whole model", "[model]") {
  // `cp` onto a model being loaded: truncation then rewrite, over and over, while another thread loads.
  const std::string a = to_v2(serialize(tiny_model(3, 1))), b = to_v2(serialize(tiny_model(5, 2)));
  const std::string path = scratch_path("rewritten.y12");
  write_file(path, a);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      const std::string& bytes = i % 2 ? a : b;
      const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
      if (fd < 0) continue;
      for (std::size_t at = 0; at < bytes.size(); at += 4096)
        if (::write(fd, bytes.data() + at, std::min<std::size_t>(4096, bytes.size() - at)) < 0) break;
      ::close(fd);
    }
  });
  int loaded = 0, refused = 0;
  for (int i = 0; i < 200; ++i) {
    try {
      auto mf = ModelFile::open(path);
      const int nc = mf->info().num_classes;
      CHECK((nc == 3 || nc == 5));
      ++loaded;
    } catch (const ModelError&) {
      ++refused;
    }
  }
  stop = true;
  writer.join();
  INFO("loaded " << loaded << ", refused " << refused);
  CHECK(loaded + refused == 200);
}

TEST_CASE("the plan's memory is computed from the metadata and refused above the caller's limit", "[model][memory]") {
  using yolo12::model::memory_budget;
  const std::string path = scratch_path("budget.y12");
  write_file(path, to_v2(serialize(tiny_model())));
  auto mf = ModelFile::open(path);
  const auto one = memory_budget(*mf, 64, 64, 1), four = memory_budget(*mf, 64, 64, 4), big = memory_budget(*mf, 256, 256, 1);
  CHECK(one.model_bytes == mf->file_bytes());
  CHECK(one.weight_bytes == 2 * 4 * mf->info().num_parameters);
  CHECK(one.activation_bytes > 0);
  CHECK(four.activation_bytes == 4 * one.activation_bytes);
  CHECK(four.io_bytes == 4 * one.io_bytes);
  // (256 / 64)^2 = 16 times the pixels: the arena grows with them (16 floats of rounding per value aside).
  CHECK(big.activation_bytes > 12 * one.activation_bytes);
  CHECK(big.activation_bytes < 17 * one.activation_bytes);
  // The first conv's output (8, 32, 32) is live with the input: at least its 32 KiB are in the arena.
  CHECK(one.activation_bytes >= 8 * 32 * 32 * 4);

  yolo12::DetectorOptions opt;
  opt.device = yolo12::Device::Cpu;
  opt.max_memory_bytes = one.total() - 1;
  try {
    yolo12::Detector det(path, opt);
    FAIL("no error");
  } catch (const yolo12::OptionError& e) {
    CHECK(contains(e.what(), "needs about"));
    CHECK(contains(e.what(), "raise max_memory_bytes"));
  }
  opt.max_memory_bytes = one.total();
  CHECK_NOTHROW(yolo12::Detector(path, opt));
  // The default refuses a batch no machine here could hold, before allocating anything.
  opt = yolo12::DetectorOptions{};
  opt.device = yolo12::Device::Cpu;
  opt.input_height = opt.input_width = 8192;
  opt.max_batch = 1024;
  CHECK_THROWS_AS(yolo12::Detector(path, opt), yolo12::OptionError);
}
