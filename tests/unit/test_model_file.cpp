// Loader tests: a valid tiny model loads; every kind of corrupt file is refused with its specific,
// single-line ModelError (naming the file, and the tensor where there is one); nothing crashes.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <sys/stat.h>

#include "catch.hpp"
#include "model/model_file.hpp"
#include "model_writer.hpp"
#include "support.hpp"

using yolo12::ModelError;
using yolo12::model::ModelFile;
using namespace yolo12::test;

namespace {

std::string tmp_path(const std::string& name) {
  const std::string dir = binary_dir() + "/test_tmp";
  ::mkdir(dir.c_str(), 0755);
  return dir + "/" + name;
}

// Opens `bytes` as a model file and returns the error message ("" if it loaded).
std::string load_error(const std::string& bytes, const std::string& name = "case.y12") {
  const std::string path = tmp_path(name);
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
  const std::string path = tmp_path("valid.y12");
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
    ModelFile::open(tmp_path("does-not-exist.y12"));
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
    const std::string path = tmp_path("fuzz.y12");
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
