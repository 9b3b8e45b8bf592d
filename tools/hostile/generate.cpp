// tools/hostile/generate.cpp - the corrupt-model corpus: deterministic variants of one base model.
//
//   yolo12-hostile-gen BASE.y12 --list              one JSON line per variant: index, name, kind
//   yolo12-hostile-gen BASE.y12 --emit A B DIR      write variants A..B-1 to DIR/<index>-<name>.y12
//   yolo12-hostile-gen BASE.y12 --emit-indices DIR I...   write the variants I... there
//   yolo12-hostile-gen --tiny OUT.y12               write the tests' tiny model (v2) as a base
//   yolo12-hostile-gen BASE.y12 --run DIR EVERY TIMEOUT_S MEM_MB
//       runs one variant in EVERY (and every control) through this build's library, each in a
//       forked child (a Detector on the CPU, then one detect() of a 96x64 image) under an alarm
//       and an address-space limit, and prints one JSON line per variant: index, name, kind,
//       outcome (error / success / crash / hang / memory / other), seconds, message. No exec per
//       variant: ~100x cheaper than running the CLI on each (run.py --in-process).
//
// Kinds (what the runner, run.py, expects):
//   control   a valid file (the base as v2 and as v1): must load and run;
//   corrupt   bytes of a v2 file changed, truncated or extended WITHOUT fixing the checksum: must be
//             refused; a success is a "silent acceptance of a changed byte";
//   hostile   a header with a hostile value, a bomb or an inconsistency, written as a correct v2 file
//             (checksum recomputed), so the checks behind the checksum see it: must be refused;
//   v1-data   a tensor-data byte flipped in a version-1 file (no checksum): either outcome is
//             legitimate unless it crashes, hangs or blows up (counted apart).
// The base is read as the loader reads it (fixed header, JSON, data) and written back as v2.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.hpp"
#include "model/checksum.hpp"
#include "model_writer.hpp"
#include "yolo12/errors.hpp"
#include "yolo12/yolo12.hpp"

namespace {

using nlohmann::json;

struct Base {
  json header;
  std::string header_text;
  std::string data;
};

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A file from header text and data: version 2 with the trailer, or version 1 without.
std::string layout(const std::string& header_text, const std::string& data, int version = 2) {
  std::string f("Y12MODEL", 8);
  put(f, static_cast<std::uint64_t>(version), 4);
  put(f, 0, 4);
  put(f, header_text.size(), 8);
  f += header_text;
  f.resize((f.size() + 255) / 256 * 256, '\0');
  f += data;
  if (version == 2) {
    const std::uint64_t sum = yolo12::model::tree_checksum(reinterpret_cast<const unsigned char*>(f.data()), f.size());
    f += "Y12CHECK";
    put(f, sum, 8);
  }
  return f;
}

Base read_base(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (b.size() < 24 || b.compare(0, 8, "Y12MODEL") != 0) throw std::runtime_error(path + ": not a .y12 file");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[16 + i])) << (8 * i);
  Base base;
  base.header_text = b.substr(24, n);
  base.header = json::parse(base.header_text);
  const std::size_t start = (24 + n + 255) / 256 * 256;
  base.data = b.substr(start, base.header.at("data_size").get<std::size_t>());
  return base;
}

struct Variant {
  std::string name, kind;
  std::function<std::string()> bytes;
};

// Every numeric leaf of the header, as a JSON pointer ("/layers/3/c2", "/tensors/0/shape/1", ...).
void numeric_leaves(const json& j, const std::string& at, std::vector<std::string>* out) {
  if (j.is_number()) out->push_back(at);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) numeric_leaves(j[i], at + "/" + std::to_string(i), out);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) numeric_leaves(it.value(), at + "/" + it.key(), out);
}
void string_leaves(const json& j, const std::string& at, std::vector<std::string>* out) {
  if (j.is_string()) out->push_back(at);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size() && i < 4; ++i) string_leaves(j[i], at + "/" + std::to_string(i), out);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) string_leaves(it.value(), at + "/" + it.key(), out);
}

// The header text with the value at `pointer` replaced by raw JSON text (for values nlohmann
// cannot hold, such as a 10^5-deep array or 1e400, and to keep the rest byte-identical).
std::string replace_raw(const json& header, const std::string& pointer, const std::string& text) {
  json h = header;
  h[json::json_pointer(pointer)] = "@@HOSTILE@@";
  std::string s = h.dump();
  const std::size_t at = s.find("\"@@HOSTILE@@\"");
  return s.replace(at, 13, text);
}

std::vector<Variant> variants(const Base& base) {
  std::vector<Variant> v;
  // The valid v2 file, shared by the variants' generators (each makes its bytes only when emitted).
  const auto good_ptr = std::make_shared<const std::string>(layout(base.header_text, base.data));
  const std::string& good = *good_ptr;
  const std::size_t data_start = good.size() - 16 - base.data.size();
  auto hostile_text = [&](const std::string& name, std::function<std::string()> text) {
    v.push_back({name, "hostile", [&base, text] { return layout(text(), base.data); }});
  };
  auto hostile_edit = [&](const std::string& name, std::function<void(json&)> edit) {
    hostile_text(name, [&base, edit] {
      json h = base.header;
      edit(h);
      return h.dump();
    });
  };

  // control
  v.push_back({"control-v2", "control", [good_ptr] { return *good_ptr; }});
  v.push_back({"control-v1", "control", [&base] { return layout(base.header_text, base.data, 1); }});

  // corrupt: truncations at every byte of the fixed header and (in steps) the JSON, the data, the trailer
  std::vector<std::size_t> cuts;
  for (std::size_t c = 0; c < 24; ++c) cuts.push_back(c);
  for (std::size_t c = 24; c < data_start; c += std::max<std::size_t>(1, (data_start - 24) / 400)) cuts.push_back(c);
  for (std::size_t c = data_start; c < good.size() - 16; c += std::max<std::size_t>(1, base.data.size() / 400)) cuts.push_back(c);
  for (std::size_t c = good.size() - 16; c < good.size(); ++c) cuts.push_back(c);
  for (std::size_t c : cuts) v.push_back({"truncate-" + std::to_string(c), "corrupt", [good_ptr, c] { return good_ptr->substr(0, c); }});
  v.push_back({"extend-1", "corrupt", [good_ptr] { return *good_ptr + "x"; }});
  v.push_back({"extend-4096", "corrupt", [good_ptr] { return *good_ptr + std::string(4096, '\0'); }});

  // corrupt: single-bit flips (a third in the header and JSON, a third in the data, the rest in the
  // padding and trailer), and 8-byte overwrites
  std::mt19937_64 rng(13);
  for (int i = 0; i < 2100; ++i) {
    std::size_t at;
    const int region = i % 3;
    if (region == 0) at = rng() % data_start;
    else if (region == 1) at = data_start + rng() % base.data.size();
    else at = (i % 2) ? good.size() - 16 + rng() % 16 : 24 + base.header_text.size() + rng() % (data_start - 24 - base.header_text.size() + 1);
    const int bit = static_cast<int>(rng() % 8);
    if (at >= good.size()) at = good.size() - 1;
    v.push_back({"flip-" + std::to_string(at) + "." + std::to_string(bit), "corrupt", [good_ptr, at, bit] {
                   std::string b = *good_ptr;
                   b[at] = static_cast<char>(b[at] ^ (1 << bit));
                   return b;
                 }});
  }
  for (int i = 0; i < 300; ++i) {
    const std::size_t at = rng() % (good.size() - 8);
    const std::uint64_t junk = rng();
    v.push_back({"overwrite8-" + std::to_string(at), "corrupt", [good_ptr, at, junk] {
                   std::string b = *good_ptr;
                   for (int k = 0; k < 8; ++k) b[at + k] = static_cast<char>(junk >> (8 * k));
                   return b;
                 }});
  }
  // v1-data: flips in a version-1 file's tensor data (nothing can detect most of them)
  for (int i = 0; i < 200; ++i) {
    const std::size_t at = rng() % base.data.size();
    const int bit = static_cast<int>(rng() % 8);
    v.push_back({"v1-flip-data-" + std::to_string(at) + "." + std::to_string(bit), "v1-data", [&base, at, bit] {
                   std::string d = base.data;
                   d[at] = static_cast<char>(d[at] ^ (1 << bit));
                   return layout(base.header_text, d, 1);
                 }});
  }

  // hostile: every numeric leaf of the header replaced by each hostile number or type
  const std::vector<std::pair<std::string, std::string>> numbers = {
      {"neg1", "-1"},         {"zero", "0"},          {"int31", "2147483647"},     {"int31p1", "2147483648"},
      {"int32p3", "4294967299"}, {"int63", "9223372036854775807"}, {"u64max", "18446744073709551615"},
      {"int64min", "-9223372036854775808"}, {"1e300", "1e300"}, {"-1e300", "-1e300"}, {"1e400", "1e400"},
      {"half", "0.5"},        {"str", "\"3\""},       {"true", "true"},            {"null", "null"},
      {"arr", "[3]"},         {"obj", "{}"},          {"deep", std::string(100000, '[') + std::string(100000, ']')},
  };
  std::vector<std::string> leaves;
  numeric_leaves(base.header, "", &leaves);
  for (const std::string& p : leaves)
    for (const auto& [label, text] : numbers) {
      // Values that may be legitimate for this field are left out (0 for an offset, say).
      const json& orig = base.header[json::json_pointer(p)];
      if (orig.is_number_integer() && text == orig.dump()) continue;
      if ((label == "zero" || label == "half") && (p.find("/offset") != std::string::npos || p.find("/from") != std::string::npos ||
                                                  p.find("/n") + 2 == p.size() || p.find("/p") + 2 == p.size()))
        continue;
      if (label == "half" && (p.find("/e") + 2 == p.size() || p.find("mlp_ratio") != std::string::npos)) continue;
      if (label == "neg1" && (p.find("/area") != std::string::npos)) continue;
      hostile_text("value" + p + "=" + label, [&base, p, text = text] { return replace_raw(base.header, p, text); });
      // the same value plus the original (2^32 + c2 and the like)
      if (label == "int32p3" && orig.is_number_unsigned()) {
        const std::string wrapped = std::to_string((1ull << 32) + orig.get<std::uint64_t>());
        hostile_text("value" + p + "=2^32+orig", [&base, p, wrapped] { return replace_raw(base.header, p, wrapped); });
      }
      if (label == "half" && orig.is_number_integer()) {
        const std::string as_float = orig.dump() + ".0";
        hostile_text("value" + p + "=float", [&base, p, as_float] { return replace_raw(base.header, p, as_float); });
      }
    }
  // hostile: string leaves (types, dtype, act, attn, mode, names, ...) replaced
  leaves.clear();
  string_leaves(base.header, "", &leaves);
  const std::vector<std::pair<std::string, std::string>> strings = {
      {"empty", "\"\""}, {"long", "\"" + std::string(100000, 'x') + "\""}, {"number", "7"}, {"null", "null"},
      {"control", "\"a\\nb\\u0000c\""}, {"deep", std::string(100000, '[') + std::string(100000, ']')}};
  for (const std::string& p : leaves) {
    if (p.rfind("/source", 0) == 0 || p == "/family" || (p.rfind("/names/", 0) == 0 && p != "/names/0")) continue;  // free text
    for (const auto& [label, text] : strings)
      if (!(p == "/scale" && label == "empty"))  // "" is a valid scale (a model without one)
        hostile_text("string" + p + "=" + label, [&base, p, text = text] { return replace_raw(base.header, p, text); });
  }

  // hostile: the bombs and inconsistencies issue 13 names
  const json& layers = base.header.at("layers");
  std::size_t block = 0;  // the first layer with a repeat count n
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].contains("n")) { block = i; break; }
  for (const long long n : {33ll, 1000ll, 1000000ll, 2147483647ll})
    hostile_edit("n=" + std::to_string(n), [block, n](json& h) { h["layers"][block]["n"] = n; });
  for (const long long count : {257ll, 1000ll, 100000ll})
    hostile_edit("layers=" + std::to_string(count), [count](json& h) {
      json big = json::array();
      for (long long i = 0; i < count; ++i) big.push_back(h["layers"][0]);
      h["layers"] = big;
    });
  for (const long long side : {4097ll, 8192ll, 65536ll})
    hostile_edit("imgsz=" + std::to_string(side), [side](json& h) { h["imgsz"] = {side, side}; });
  for (const long long c : {16385ll, 1ll << 20, 1ll << 31})
    hostile_edit("channels=" + std::to_string(c), [c](json& h) { h["layers"][0]["c2"] = c; });
  hostile_edit("nc-names-mismatch", [](json& h) { h["names"].push_back("extra"); });
  hostile_edit("nc=100000", [](json& h) { h["nc"] = 100000; });
  hostile_edit("names-10MB", [](json& h) { h["names"][0] = std::string(10 << 20, 'n'); });
  hostile_edit("strides-100000", [](json& h) { h["strides"] = std::vector<int>(100000, 8); });
  hostile_edit("values-2M", [](json& h) { h["unused"] = std::vector<int>(2000000, 0); });
  hostile_edit("duplicate-tensor", [](json& h) { h["tensors"][1]["name"] = h["tensors"][0]["name"]; });
  hostile_edit("overlap", [](json& h) { h["tensors"][1]["offset"] = h["tensors"][0]["offset"]; });
  hostile_edit("unknown-type", [](json& h) { h["layers"][1]["type"] = "FancyBlock"; });
  hostile_edit("no-detect", [](json& h) { h["layers"].erase(h["layers"].size() - 1); });
  hostile_edit("from-forward", [](json& h) { h["layers"][1]["from"] = {5}; });
  hostile_edit("from-self", [](json& h) { h["layers"][1]["from"] = {1}; });
  for (const char* key : {"format", "family", "task", "nc", "names", "strides", "imgsz", "reg_max", "dtype", "layers",
                          "tensors", "data_size"})
    hostile_edit(std::string("missing-") + key, [key](json& h) { h.erase(key); });
  // dtype swaps: the header's dtype flipped; one tensor's dtype flipped (its size kept consistent)
  hostile_edit("header-dtype-swap", [](json& h) { h["dtype"] = h["dtype"] == "f32" ? "f16" : "f32"; });
  const json& tensors = base.header.at("tensors");
  for (std::size_t i = 0; i < tensors.size(); i += std::max<std::size_t>(1, tensors.size() / 40))
    hostile_edit("tensor-dtype-swap-" + std::to_string(i), [i](json& h) {
      json& t = h["tensors"][i];
      const bool f32 = t["dtype"] == "f32";
      t["dtype"] = f32 ? "f16" : "f32";
      const std::uint64_t size = t["size"].get<std::uint64_t>();
      t["size"] = f32 ? size / 2 : size * 2;
    });
  // non-finite weights at the start, middle and end of tensors, as a correct v2 file
  const bool f16 = base.header.at("dtype") == "f16";
  for (std::size_t i = 0; i < tensors.size(); i += std::max<std::size_t>(1, tensors.size() / 30)) {
    const std::size_t off = tensors[i].at("offset").get<std::size_t>(), size = tensors[i].at("size").get<std::size_t>();
    const bool t16 = tensors[i].at("dtype") == "f16";
    const std::size_t w = t16 ? 2 : 4;
    for (const char* what : {"nan", "inf", "-inf"})
      for (const std::size_t at : {off, off + (size / w / 2) * w, off + size - w}) {
        v.push_back({std::string("weight-") + what + "-" + std::to_string(i) + "@" + std::to_string(at), "hostile",
                     [&base, at, t16, what] {
                       std::string d = base.data;
                       const std::string s = what;
                       if (t16) {
                         const std::uint16_t b = s == "nan" ? 0x7e00 : s == "inf" ? 0x7c00 : 0xfc00;
                         std::memcpy(&d[at], &b, 2);
                       } else {
                         const std::uint32_t b = s == "nan" ? 0x7fc00000u : s == "inf" ? 0x7f800000u : 0xff800000u;
                         std::memcpy(&d[at], &b, 4);
                       }
                       return layout(base.header_text, d);
                     }});
      }
  }
  (void)f16;
  return v;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// The --run child: exit 0 when the model loads and detects, 1 for a yolo12::Error, 3 for
// bad_alloc, 4 for any other exception; the message goes up the pipe.
[[noreturn]] void run_child(const std::string& path, int pipe_fd, unsigned timeout_s, std::uint64_t mem_mb) {
  if (mem_mb) {
    const rlimit lim{mem_mb << 20, mem_mb << 20};
    setrlimit(RLIMIT_AS, &lim);
  }
  alarm(timeout_s);
  int code = 0;
  std::string message;
  try {
    yolo12::DetectorOptions opt;
    opt.device = yolo12::Device::Cpu;
    opt.cpu_threads = 1;
    yolo12::Detector det(path, opt);
    std::vector<std::uint8_t> pixels(96 * 64 * 3, 128);
    yolo12::ImageView img;
    img.data = pixels.data();
    img.width = 96;
    img.height = 64;
    img.pitch = 96 * 3;
    det.detect(img);
  } catch (const yolo12::Error& e) {
    code = 1, message = e.what();
  } catch (const std::bad_alloc& e) {
    code = 3, message = e.what();
  } catch (const std::exception& e) {
    code = 4, message = e.what();
  }
  message = message.substr(0, 300);
  if (!message.empty() && ::write(pipe_fd, message.data(), message.size()) < 0) code = 5;
  _exit(code);
}

int run_all(const std::vector<Variant>& all, const std::string& dir, std::size_t every, unsigned timeout_s,
            std::uint64_t mem_mb) {
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % every != 0 && all[i].kind != "control") continue;
    const std::string path = dir + "/variant-" + std::to_string(i) + ".y12";
    write(path, all[i].bytes());
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::cout.flush();
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      close(fds[0]);
      run_child(path, fds[1], timeout_s, mem_mb);
    }
    close(fds[1]);
    std::string message;
    char buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;)
      if (n > 0) message.append(buf, static_cast<std::size_t>(n));
      else if (errno != EINTR) break;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::remove(path.c_str());
    std::string outcome = "other";
    if (WIFSIGNALED(status))
      outcome = WTERMSIG(status) == SIGALRM ? "hang" : WTERMSIG(status) == SIGKILL ? "memory" : "crash";
    else if (WIFEXITED(status))
      outcome = WEXITSTATUS(status) == 0 ? "success" : WEXITSTATUS(status) == 1 ? "error"
                : WEXITSTATUS(status) == 3 ? "memory" : "other";
    if (message.find("AddressSanitizer") != std::string::npos || message.find("runtime error") != std::string::npos)
      outcome = "crash";
    std::cout << json({{"index", i}, {"name", all[i].name}, {"kind", all[i].kind}, {"outcome", outcome},
                       {"seconds", seconds}, {"message", message}})
                     .dump(-1, ' ', false, json::error_handler_t::replace)
              << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() == 2 && a[0] == "--tiny") {
      // The tests' tiny model, narrowed (Detect c2 = 16) and in f16 so that the file is small
      // enough to be a fuzz seed; every tensor the narrowed architecture requires, random values.
      yolo12::test::TestModel m = yolo12::test::tiny_model(2, 5);
      m.header["layers"][5]["c2"] = 16;
      m.header["dtype"] = "f16";
      std::vector<yolo12::test::TestTensor> tensors;
      std::mt19937 rng(5);
      std::normal_distribution<float> normal(0.f, 0.3f);
      for (const auto& spec : yolo12::graph::required_params(m.header)) {
        yolo12::test::TestTensor t{spec.name, spec.shape, "f16", {}};
        std::size_t n = 1;
        for (long long d : spec.shape) n *= static_cast<std::size_t>(d);
        for (std::size_t k = 0; k < n; ++k) t.values.push_back(normal(rng));
        tensors.push_back(std::move(t));
      }
      m.tensors = std::move(tensors);
      const std::string v1 = yolo12::test::serialize(m);
      std::uint64_t n = 0;
      for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(v1[16 + i])) << (8 * i);
      write(a[1], layout(v1.substr(24, n), v1.substr((24 + n + 255) / 256 * 256)));
      return 0;
    }
    if (a.size() < 2) {
      std::cerr << "usage: yolo12-hostile-gen BASE.y12 --list | --emit A B DIR | --emit-indices DIR I... | --run DIR EVERY TIMEOUT_S MEM_MB;  yolo12-hostile-gen --tiny OUT.y12\n";
      return 2;
    }
    const Base base = read_base(a[0]);
    const std::vector<Variant> all = variants(base);
    if (a[1] == "--list") {
      for (std::size_t i = 0; i < all.size(); ++i)
        std::cout << json({{"index", i}, {"name", all[i].name}, {"kind", all[i].kind}}).dump() << "\n";
      return 0;
    }
    if (a[1] == "--run" && a.size() == 6)
      return run_all(all, a[2], std::max<std::size_t>(1, std::stoul(a[3])), static_cast<unsigned>(std::stoul(a[4])),
                     std::stoull(a[5]));
    if ((a[1] == "--emit" && a.size() == 5) || (a[1] == "--emit-indices" && a.size() >= 3)) {
      // --emit A B DIR, or --emit-indices DIR I...
      std::vector<std::size_t> which;
      const std::string dir = a[1] == "--emit" ? a[4] : a[2];
      if (a[1] == "--emit")
        for (std::size_t i = std::stoul(a[2]); i < std::min<std::size_t>(std::stoul(a[3]), all.size()); ++i) which.push_back(i);
      else
        for (std::size_t k = 3; k < a.size(); ++k) which.push_back(std::stoul(a[k]));
      for (std::size_t i : which) {
        if (i >= all.size()) throw std::runtime_error("no variant " + std::to_string(i));
        std::string safe = all[i].name.substr(0, 80);
        for (char& c : safe)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '=') c = '_';
        write(dir + "/" + std::to_string(i) + "-" + safe + ".y12", all[i].bytes());
      }
      return 0;
    }
    std::cerr << "yolo12-hostile-gen: unknown arguments\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "yolo12-hostile-gen: " << e.what() << "\n";
    return 1;
  }
}
