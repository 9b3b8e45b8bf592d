// tests/support.cpp - see support.hpp.
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace yolo12::test {

std::string source_dir() {
  if (const char* env = std::getenv("YOLO12_SOURCE_DIR")) return env;
  return YOLO12_SOURCE_DIR;
}
std::string binary_dir() {
  if (const char* env = std::getenv("YOLO12_BINARY_DIR")) return env;
  return YOLO12_BINARY_DIR;
}
std::string scratch_path(const std::string& name) {
  const std::string dir = binary_dir() + "/test_tmp";
  ::mkdir(dir.c_str(), 0755);
  return dir + "/" + std::to_string(::getpid()) + "_" + name;
}
bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}
std::string shared_data_dir() {
  std::string dir;
  if (const char* env = std::getenv("YOLO12_SHARED_DATA")) dir = env;
  else dir = source_dir() + "/../shared/data";
  return file_exists(dir) ? dir : std::string();
}
std::string test_data_dir() { return source_dir() + "/tests/data"; }

std::string export_model(const std::string& src, const std::string& name, std::string& why) {
  static std::map<std::string, std::string> done;
  if (done.count(src)) return done[src];
  auto quoted = [](const std::string& s) { return "'" + s + "'"; };
  const std::string exporter = source_dir() + "/exporter/export.py";
  if (!file_exists(src)) return why = "model " + src + " is absent", "";
  if (!file_exists(exporter)) return why = "exporter/export.py is absent", "";
  static const bool have_numpy = std::system("python3 -c 'import numpy' > /dev/null 2>&1") == 0;
  if (!have_numpy) return why = "python3 with numpy is not available to run the exporter", "";
  const std::string dir = binary_dir() + "/parity_models";
  const std::string out = dir + "/" + name + ".y12";
  const std::string log = dir + "/" + name + ".export.log";
  const std::string cmd = "mkdir -p " + quoted(dir) + " && python3 " + quoted(exporter) + " " + quoted(src) +
                          " -o " + quoted(out) + " --no-set-default > " + quoted(log) + " 2>&1";
  if (std::system(cmd.c_str()) != 0 || !file_exists(out))
    return why = "the exporter failed on " + src + " (see " + log + ")", "";
  return done[src] = out;
}

static NpyArray parse_npy(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    hstart = 10;
  } else {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + 8, 4);
    hlen = v;
    hstart = 12;
  }
  const std::string header = bytes.substr(hstart, hlen);
  const bool f4 = header.find("'<f4'") != std::string::npos;
  const bool u1 = header.find("'|u1'") != std::string::npos;
  const bool f8 = header.find("'<f8'") != std::string::npos;
  if (!f4 && !u1 && !f8) throw std::runtime_error(path + ": only float32/float64/uint8 .npy supported");
  if (header.find("'fortran_order': True") != std::string::npos)
    throw std::runtime_error(path + ": Fortran order not supported");
  NpyArray arr;
  const auto lp = header.find('('), rp = header.find(')');
  std::stringstream ss(header.substr(lp + 1, rp - lp - 1));
  std::string item;
  std::size_t n = 1;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    arr.shape.push_back(std::stoll(item));
    n *= static_cast<std::size_t>(arr.shape.back());
  }
  const std::size_t esz = f4 ? 4 : (f8 ? 8 : 1);
  const std::size_t start = hstart + hlen;
  if (bytes.size() < start + n * esz) throw std::runtime_error(path + ": truncated .npy");
  arr.data.resize(n);
  const char* p = bytes.data() + start;
  for (std::size_t i = 0; i < n; ++i) {
    if (f4) std::memcpy(&arr.data[i], p + 4 * i, 4);
    else if (f8) { double d; std::memcpy(&d, p + 8 * i, 8); arr.data[i] = static_cast<float>(d); }
    else arr.data[i] = static_cast<unsigned char>(p[i]);
  }
  return arr;
}

NpyArray load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_npy(ss.str(), path);
}

NpyArray load_npy_any(const std::string& path) {
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return load_npy(path);
  const std::string cmd = "gzip -dc '" + path + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  std::string bytes;
  char buf[1 << 16];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe.get())) > 0) bytes.append(buf, got);
  return parse_npy(bytes, path);
}

void save_npy(const std::string& path, const std::vector<long long>& shape, const float* data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  std::size_t n = 1;
  for (auto d : shape) {
    dict += std::to_string(d) + ", ";
    n *= static_cast<std::size_t>(d);
  }
  dict += "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::ofstream f(path, std::ios::binary);
  const unsigned short hl = static_cast<unsigned short>(dict.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(hl & 0xff));
  f.put(static_cast<char>(hl >> 8));
  f << dict;
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * 4));
}

double rel_l2(const float* a, const float* b, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num) / (std::sqrt(den) + 1e-30);
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

}  // namespace yolo12::test
