// cli/paths.cpp - see paths.hpp.
#include "paths.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "args.hpp"

namespace fs = std::filesystem;

namespace yolo12_cli {
namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isdigit(c)) return false;
  return true;
}

}  // namespace

void make_folder(const std::string& path, const std::string& what) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path))
    throw UsageError(what + " " + path + ": cannot create the folder (" + (ec ? ec.message() : std::string("not a folder")) + ")");
}

std::string make_run_folder(const std::string& project, const std::string& name, bool exist_ok) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw UsageError("--name " + name + ": a folder name without '/'");
  make_folder(project, "--project");
  const std::string base = (fs::path(project) / name).string();
  if (exist_ok) {
    make_folder(base, "--exist-ok");
    return base;
  }
  for (int n = 1; n < 10000; ++n) {
    const std::string candidate = n == 1 ? base : base + std::to_string(n);
    if (::mkdir(candidate.c_str(), 0777) == 0) return candidate;
    if (errno != EEXIST) throw UsageError(candidate + ": cannot create the folder (" + std::strerror(errno) + ")");
  }
  throw UsageError(base + ": 9999 run folders exist already; pass --name or --exist-ok");
}

void ProtectedFiles::add(const std::string& path, const std::string& what, bool guard_folder) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;
  const std::string label = "the " + what + " " + path;
  files_.emplace(FileId{st.st_dev, st.st_ino}, label);
  if (!guard_folder) return;
  std::error_code ec;
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (!ec && ::stat(parent.c_str(), &st) == 0) folders_.emplace(FileId{st.st_dev, st.st_ino}, label);
}

std::string ProtectedFiles::find(const std::string& path) const {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  const auto it = files_.find(FileId{st.st_dev, st.st_ino});
  return it == files_.end() ? "" : it->second;
}

std::string ProtectedFiles::find_in_folder(const std::string& folder) const {
  struct stat st;
  if (::stat(folder.c_str(), &st) != 0) return "";
  const auto it = folders_.find(FileId{st.st_dev, st.st_ino});
  return it == folders_.end() ? "" : it->second;
}

bool OutputNames::taken_by_image_or_video(const std::string& name) const {
  return images_.count(name) || videos_.count(name);
}

// "clip_12" is frame 12 of a video "clip".
bool OutputNames::is_frame_of_video(const std::string& name) const {
  const std::size_t underscore = name.rfind('_');
  return underscore != std::string::npos && all_digits(name.substr(underscore + 1)) &&
         videos_.count(name.substr(0, underscore));
}

bool OutputNames::has_frames_named_like_images(const std::string& video) const {
  const std::string prefix = video + "_";
  for (auto it = images_.lower_bound(prefix); it != images_.end() && it->rfind(prefix, 0) == 0; ++it)
    if (all_digits(it->substr(prefix.size()))) return true;
  return false;
}

std::string OutputNames::claim_image(const std::string& stem) {
  std::string name = stem;
  for (int k = 2; taken_by_image_or_video(name) || is_frame_of_video(name); ++k) name = stem + "-" + std::to_string(k);
  images_.insert(name);
  return name;
}

std::string OutputNames::claim_video(const std::string& stem) {
  std::string name = stem;
  for (int k = 2; taken_by_image_or_video(name) || has_frames_named_like_images(name); ++k)
    name = stem + "-" + std::to_string(k);
  videos_.insert(name);
  return name;
}

std::string OutputNames::claim_crop(const std::string& folder, const std::string& base, const std::string& ext) {
  std::string path = folder + "/" + base + "." + ext;
  for (int k = 2; crops_.count(path); ++k) path = folder + "/" + base + std::to_string(k) + "." + ext;
  crops_.insert(path);
  return path;
}

}  // namespace yolo12_cli
