// core/tune_cache.cpp - reading, checking and writing the tune cache file (tune_cache.hpp).
#include "core/tune_cache.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include <unistd.h>

#include "yolo12/errors.hpp"

namespace yolo12 {
namespace {

bool printable_char(char c) { return c >= 0x20 && c <= 0x7e; }  // printable ASCII, not the tab

// A scope, key or value: printable characters only, 1 to kMaxField of them.
bool field_ok(const std::string& s) {
  if (s.empty() || s.size() > TuneCache::kMaxField) return false;
  for (const char c : s)
    if (!printable_char(c)) return false;
  return true;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw OptionError("tune cache " + path + ": " + why + " (remove it, or set tune_cache to another path)");
}

}  // namespace

TuneCache::TuneCache(std::string path, std::string scope) : path_(std::move(path)), scope_(std::move(scope)) {
  if (path_.empty()) throw OptionError("tune cache: the path is empty");
  if (!field_ok(scope_)) throw OptionError("tune cache: the scope '" + scope_ + "' is not a printable field");
  entries_ = read_file(path_);
}

TuneCache::Entries TuneCache::read_file(const std::string& path) {
  Entries out;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return out;  // no file yet: empty
  if (status.type() != std::filesystem::file_type::regular) refuse(path, "not a regular file");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) refuse(path, "cannot read its size (" + ec.message() + ")");
  if (bytes > kMaxFileBytes)
    refuse(path, std::to_string(bytes) + " bytes, over the " + std::to_string(kMaxFileBytes) + " a tune cache may have");
  std::ifstream in(path, std::ios::binary);
  if (!in) refuse(path, "cannot be opened for reading");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > kMaxFileBytes) refuse(path, "grew over the size a tune cache may have while it was read");
  if (text.empty()) return out;  // an empty file (e.g. made by mktemp): an empty cache
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  if (line != header()) refuse(path, "not a yolo12 tune cache (its first line is not '" + std::string(header()) + "')");
  int number = 1;
  while (std::getline(lines, line)) {
    ++number;
    const std::size_t a = line.find('\t');
    const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
    const std::string where = "line " + std::to_string(number);
    if (b == std::string::npos || line.find('\t', b + 1) != std::string::npos)
      refuse(path, where + " is not three tab-separated fields (scope, key, value)");
    std::string scope = line.substr(0, a), key = line.substr(a + 1, b - a - 1), value = line.substr(b + 1);
    if (!field_ok(scope) || !field_ok(key) || !field_ok(value))
      refuse(path, where + " has an empty field, one over " + std::to_string(kMaxField) +
                       " characters or a character outside printable ASCII");
    out[std::move(scope)][std::move(key)] = std::move(value);
  }
  if (!text.empty() && text.back() != '\n') refuse(path, "its last line is cut off (no line end)");
  return out;
}

std::string TuneCache::printable(std::string text) {
  for (char& c : text)
    if (!printable_char(c)) c = '_';
  return text;
}

const std::string* TuneCache::find(const std::string& key) const {
  const auto s = entries_.find(scope_);
  if (s == entries_.end()) return nullptr;
  const auto k = s->second.find(key);
  return k == s->second.end() ? nullptr : &k->second;
}

void TuneCache::put(const std::string& key, const std::string& value) {
  if (!field_ok(key)) throw OptionError("tune cache: the key '" + key + "' is not a printable field");
  if (!field_ok(value)) throw OptionError("tune cache: the value '" + value + "' is not a printable field");
  std::string& slot = entries_[scope_][key];
  if (slot == value) return;
  slot = value;
  dirty_ = true;
}

std::size_t TuneCache::size() const {
  const auto s = entries_.find(scope_);
  return s == entries_.end() ? 0 : s->second.size();
}

bool TuneCache::save() {
  if (!dirty_) return true;
  Entries merged = read_file(path_);  // what is on disk now: other scopes, other processes' lines
  for (const auto& [scope, keys] : entries_)
    for (const auto& [key, value] : keys) merged[scope][key] = value;
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path_ + ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                          std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << header() << '\n';
    for (const auto& [scope, keys] : merged)
      for (const auto& [key, value] : keys) out << scope << '\t' << key << '\t' << value << '\n';
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  entries_ = std::move(merged);
  dirty_ = false;
  return true;
}

}  // namespace yolo12
