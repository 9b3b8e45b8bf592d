// core/tune_cache.hpp - a file of kernel-tuning choices, so that a Detector with tune_kernels times
// each conv's kernels once per GPU model and not at every start-up (DetectorOptions::tune_cache).
//
// The file is text, one choice per line under a first line naming the format:
//   yolo12 tune cache 1
//   <scope> TAB <key> TAB <value>
// scope: the GPU and library the choice was timed with (the executor's tune_cache_scope: device name,
// compute capability, multiprocessors, library version, precision); key: what was tuned (a conv's shape,
// views and batch); value: the choice (a ConvPlan as conv_plan_encode writes it). A file can hold many
// scopes (several GPU models sharing one path); a TuneCache reads and writes only its own.
//
// The backend checks every value it takes against what the current build can run (a value it cannot
// use is re-tuned and replaced), so a stale file costs a tuning run, never a wrong kernel. A file that
// is not a tune cache at all, or is damaged, is an OptionError naming the path and the line: the cache
// is never overwritten then, since the path may name someone else's file.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace yolo12 {

class TuneCache {
 public:
  static constexpr std::size_t kMaxFileBytes = std::size_t{8} << 20;  // a larger file is refused
  static constexpr std::size_t kMaxField = 512;                       // characters per scope, key or value

  // Reads `path` if it exists (a missing file is an empty cache). Throws OptionError for a file that
  // cannot be read, is over kMaxFileBytes, does not start with the format line or has a malformed line.
  TuneCache(std::string path, std::string scope);

  const std::string& path() const { return path_; }
  const std::string& scope() const { return scope_; }
  // The value stored for key under this scope, or nullptr.
  const std::string* find(const std::string& key) const;
  // Stores (or replaces) a value under this scope. Throws OptionError for a key or value with a tab, a
  // line break or a byte outside printable ASCII, or longer than kMaxField.
  void put(const std::string& key, const std::string& value);
  // Entries of this scope.
  std::size_t size() const;
  // Whether put() changed anything since the file was read or last saved.
  bool dirty() const { return dirty_; }
  // Writes the file if dirty(): re-reads it first and keeps the other scopes' lines and any line
  // another process added meanwhile (this cache's own entries win), writes a temporary file beside it
  // and renames it over the path, so a reader never sees half a file. Returns false (and leaves
  // dirty() set) where the file cannot be written; it never throws for that, since the cache only saves
  // time. Throws OptionError if the file on disk has meanwhile become something that is not a cache.
  bool save();

  // text with every byte a field may not hold (outside printable ASCII, so the tab too) replaced by '_':
  // a valid scope or key made from any text (a device name, say), if not empty and at most kMaxField long.
  static std::string printable(std::string text);

  // The format's first line.
  static const char* header() { return "yolo12 tune cache 1"; }

 private:
  using Entries = std::map<std::string, std::map<std::string, std::string>>;  // scope -> key -> value
  static Entries read_file(const std::string& path);
  std::string path_, scope_;
  Entries entries_;
  bool dirty_ = false;
};

}  // namespace yolo12
