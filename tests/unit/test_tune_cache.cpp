// The tune cache file (core/tune_cache.hpp): what it keeps, how it merges with what another process
// wrote, and the files it refuses (with an OptionError naming the path and the line, leaving them as
// they were). The backend's use of it is in test_conv ([tune][cache]) and test_model_gpu.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>

#include "catch.hpp"
#include "core/tune_cache.hpp"
#include "model_writer.hpp"
#include "support.hpp"
#include "yolo12/yolo12.hpp"

using namespace yolo12;

namespace {

std::string tmp_path(const std::string& name) {  // a scratch file of this process, not there yet
  const std::string path = test::scratch_path(name);
  std::remove(path.c_str());
  return path;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool refused_with(const std::string& path, const std::string& what) {
  try {
    TuneCache c(path, "gpu A");
  } catch (const OptionError& e) {
    const std::string msg = e.what();
    if (msg.find(path) != std::string::npos && msg.find(what) != std::string::npos) return true;
    UNSCOPED_INFO("message: " << msg << "\nexpected the path and: " << what);
    return false;
  }
  UNSCOPED_INFO("not refused: " << path);
  return false;
}

}  // namespace

TEST_CASE("tune cache: stores, saves, reads back per scope", "[tune_cache]") {
  const std::string path = tmp_path("tc_roundtrip.txt");
  {
    TuneCache c(path, "gpu A");  // no file yet: empty
    CHECK(c.size() == 0);
    CHECK(c.find("conv 1") == nullptr);
    CHECK_FALSE(c.dirty());
    CHECK(c.save());  // nothing to write
    CHECK_FALSE(test::file_exists(path));
    c.put("conv 1", "6 128 64 64 1 0 4");
    c.put("conv 2", "7 128 192 64 1 4 12");
    CHECK(c.dirty());
    REQUIRE(c.find("conv 1"));
    CHECK(*c.find("conv 1") == "6 128 64 64 1 0 4");
    REQUIRE(c.save());
    CHECK_FALSE(c.dirty());
    c.put("conv 2", "7 128 192 64 1 4 12");  // the same value: nothing changes
    CHECK_FALSE(c.dirty());
  }
  CHECK(read_text(path).rfind(std::string(TuneCache::header()) + "\n", 0) == 0);
  {
    TuneCache c(path, "gpu A");
    CHECK(c.size() == 2);
    REQUIRE(c.find("conv 2"));
    CHECK(*c.find("conv 2") == "7 128 192 64 1 4 12");
    TuneCache other(path, "gpu B");  // another GPU model sees none of them
    CHECK(other.size() == 0);
    CHECK(other.find("conv 1") == nullptr);
    other.put("conv 1", "5 128 16 144 1 4 8");
    REQUIRE(other.save());
  }
  TuneCache a(path, "gpu A"), b(path, "gpu B");
  CHECK(a.size() == 2);
  REQUIRE(b.find("conv 1"));
  CHECK(*b.find("conv 1") == "5 128 16 144 1 4 8");
  REQUIRE(a.find("conv 1"));
  CHECK(*a.find("conv 1") == "6 128 64 64 1 0 4");
}

TEST_CASE("tune cache: saving keeps what another process wrote meanwhile", "[tune_cache]") {
  const std::string path = tmp_path("tc_merge.txt");
  TuneCache first(path, "gpu A"), second(path, "gpu A");  // both read the (missing) file
  first.put("conv 1", "1 0 0 0 1 0 0");
  second.put("conv 2", "2 0 0 0 1 0 0");
  second.put("conv 1", "3 0 0 0 1 0 0");
  REQUIRE(first.save());
  REQUIRE(second.save());  // merges: conv 1 is second's own (its value wins), conv 2 its own
  TuneCache c(path, "gpu A");
  CHECK(c.size() == 2);
  REQUIRE(c.find("conv 1"));
  CHECK(*c.find("conv 1") == "3 0 0 0 1 0 0");
  first.put("conv 3", "4 0 0 0 1 0 0");
  REQUIRE(first.save());  // keeps second's conv 2
  TuneCache d(path, "gpu A");
  CHECK(d.size() == 3);
  REQUIRE(d.find("conv 2"));
  CHECK(*d.find("conv 2") == "2 0 0 0 1 0 0");
}

TEST_CASE("tune cache: files that are not a cache are refused and left as they are", "[tune_cache]") {
  const std::string h = std::string(TuneCache::header()) + "\n";
  struct Bad {
    const char* name;
    std::string text;
    const char* why;
  };
  const Bad bad[] = {
      {"not_cache.txt", "model weights, say\n", "not a yolo12 tune cache"},
      {"binary.txt", std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10), "not a yolo12 tune cache"},
      {"old_header.txt", "yolo12 tune cache 0\n", "not a yolo12 tune cache"},
      {"two_fields.txt", h + "gpu A\tconv 1\n", "line 2 is not three tab-separated fields"},
      {"four_fields.txt", h + "gpu A\tconv 1\t6 1\textra\n", "line 2 is not three"},
      {"empty_field.txt", h + "gpu A\t\t6 1\n", "line 2 has an empty field"},
      {"control_byte.txt", h + "gpu A\tconv\x01 1\t6 1\n", "line 2 has an empty field"},
      {"high_byte.txt", h + "gpu A\tconv 1\t6 \xc3\xa9\n", "outside printable ASCII"},
      {"long_field.txt", h + "gpu A\t" + std::string(TuneCache::kMaxField + 1, 'k') + "\t6 1\n", "line 2"},
      {"cut_off.txt", h + "gpu A\tconv 1\t6 1", "cut off"},
      {"third_line.txt", h + "gpu A\tconv 1\t6 1\ngarbage\n", "line 3"},
  };
  for (const Bad& b : bad) {
    INFO(b.name);
    const std::string path = tmp_path(b.name);
    write_text(path, b.text);
    CHECK(refused_with(path, b.why));
    CHECK(read_text(path) == b.text);  // untouched
  }
  // Over the size limit (the content is not read to refuse it).
  const std::string big = tmp_path("tc_big.txt");
  write_text(big, h + std::string(TuneCache::kMaxFileBytes, '#'));
  CHECK(refused_with(big, "bytes, over the"));
  std::remove(big.c_str());
  // A directory.
  const std::string dir = tmp_path("tc_dir");
  ::mkdir(dir.c_str(), 0755);
  CHECK(refused_with(dir, "not a regular file"));
  // An empty file (as mktemp makes) is an empty cache, and saving fills it.
  const std::string empty = tmp_path("tc_empty.txt");
  write_text(empty, "");
  TuneCache c(empty, "gpu A");
  CHECK(c.size() == 0);
  c.put("conv 1", "6 1");
  CHECK(c.save());
  CHECK(read_text(empty) == h + "gpu A\tconv 1\t6 1\n");
}

TEST_CASE("tune cache: bad keys and values, and a path that cannot be written", "[tune_cache]") {
  const std::string path = tmp_path("tc_put.txt");
  TuneCache c(path, "gpu A");
  CHECK_THROWS_AS(c.put("conv\t1", "6"), OptionError);
  CHECK_THROWS_AS(c.put("conv 1", "6\n7"), OptionError);
  CHECK_THROWS_AS(c.put("", "6"), OptionError);
  CHECK_THROWS_AS(c.put("conv 1", std::string(TuneCache::kMaxField + 1, '6')), OptionError);
  CHECK_FALSE(c.dirty());  // nothing stored
  CHECK_THROWS_AS(TuneCache(path, "gpu\tA"), OptionError);
  CHECK(TuneCache::printable("gpu\tA\xc3\xa9\n") == "gpu_A___");  // what the backend makes a device name into
  CHECK_NOTHROW(TuneCache(path, TuneCache::printable("gpu\tA")));
  CHECK_THROWS_AS(TuneCache("", "gpu A"), OptionError);
  // A folder that does not exist: save() reports it and keeps the entries, it does not throw.
  TuneCache lost(test::scratch_path("no_such_folder") + "/tc.txt", "gpu A");
  lost.put("conv 1", "6 1");
  CHECK_FALSE(lost.save());
  CHECK(lost.dirty());
  REQUIRE(lost.find("conv 1"));
}

TEST_CASE("tune cache: a Detector refuses a file that is not a cache, before any work", "[tune_cache]") {
  const std::string model = test::scratch_path("tune_cache_tiny.y12");
  test::write_file(model, test::serialize(test::tiny_model(3, 11)));
  const std::string path = tmp_path("tc_detector.txt");
  write_text(path, "precious notes\n");
  DetectorOptions o;
  o.device = Device::Cpu;
  o.cpu_threads = 1;
  o.tune_cache = path;
  bool refused = false;
  try {
    Detector d(model, o);
  } catch (const OptionError& e) {
    refused = std::string(e.what()).find(path) != std::string::npos;
  }
  CHECK(refused);
  CHECK(read_text(path) == "precious notes\n");
  // A valid (here missing) cache path is accepted; the CPU backend has nothing to tune and writes nothing.
  std::remove(path.c_str());
  Detector d(model, o);
  CHECK_FALSE(test::file_exists(path));
}
