// cli/paths.hpp - where yolo12-infer writes, and the guards that keep every output off the inputs.
//
// Run folders follow Ultralytics: PROJECT/NAME (default runs/detect/predict, or .../track with
// --track), then NAME2, NAME3, ... so that a second run never writes into the first one's folder.
// The folder is claimed with mkdir(2), which fails when it exists, so two runs started at the same
// moment never share one. --exist-ok reuses PROJECT/NAME.
//
// Output names are unique across all sources of a run, also between an image's label file and a
// video frame's (clip_1.jpg and frame 1 of clip.mp4 would both be labels/clip_1.txt).
//
// No output may be an input or the model: ProtectedFiles knows them by device and inode, so another
// spelling of the same path, a symbolic link or a hard link is recognised too.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <utility>

namespace yolo12_cli {

// Creates and returns the run folder (see above). Throws UsageError when it cannot be created.
std::string make_run_folder(const std::string& project, const std::string& name, bool exist_ok);
// Creates a folder and its parents (what: the option or path named in the error). Throws UsageError.
void make_folder(const std::string& path, const std::string& what);

class ProtectedFiles {
 public:
  // Protects an existing file (ignored when path does not exist). what: "input", "model", ...
  // An input's folder is remembered too: --save into it would replace the input by its annotated copy.
  void add(const std::string& path, const std::string& what, bool guard_folder = false);
  // "the input bus.jpg" when path is (a name of) a protected file, else "".
  std::string find(const std::string& path) const;
  // "the input x/bus.jpg" when folder directly holds a file added with guard_folder, else "".
  std::string find_in_folder(const std::string& folder) const;

 private:
  using FileId = std::pair<dev_t, ino_t>;
  std::map<FileId, std::string> files_;
  std::map<FileId, std::string> folders_;  // the folders holding them, with one of their files
};

// Base names for saved files, unique over the run: an image "bus", then "bus-2", "bus-3"; a video
// "clip" whose frames are "clip_1", "clip_2", ... An image never gets a name of the form
// VIDEO_DIGITS for a video claimed before, nor a video a name whose frames would be an image's.
class OutputNames {
 public:
  std::string claim_image(const std::string& stem);
  std::string claim_video(const std::string& stem);
  // A crop file name: "crops/person/bus.jpg", then bus2.jpg, bus3.jpg, ... (as Ultralytics).
  std::string claim_crop(const std::string& folder, const std::string& base, const std::string& ext);

 private:
  bool taken_by_image_or_video(const std::string& name) const;
  bool is_frame_of_video(const std::string& name) const;
  bool has_frames_named_like_images(const std::string& video) const;
  std::set<std::string> images_, videos_, crops_;
};

}  // namespace yolo12_cli
