// cli/args.hpp - the command line before CLI11 sees it: Ultralytics spellings, underscores, mode
// words and integer lists are rewritten into our own options, and every option name is checked,
// so that a typo is an error with a suggestion before any work instead of a run at the wrong settings.
//
//   conf=0.3            -> --conf 0.3          (Ultralytics key=value, when no file has that name)
//   half=True           -> --half              (booleans: True/False, true/false, 1/0, yes/no)
//   show_labels=False   -> --hide-labels       (the few keys whose sense is inverted)
//   imgsz=[640,480]     -> --imgsz=640,480     (lists with or without brackets)
//   source=bus.jpg      -> a source            (appended after "--")
//   --max_det 5         -> --max-det 5         (underscores in any option name)
//   predict / track     -> (nothing) / --track (a leading mode word, as `yolo predict ...`)
//   --imgsz 320 256     -> --imgsz=320,256     (up to two integers after --imgsz, any after --classes)
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace yolo12_cli {

// A usage error: the message is printed with a pointer to --help and the exit status is 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One option CLI11 knows: its long names without dashes ("max-det"), short names ("q"), and
// whether it is a flag (takes no value).
struct KnownOption {
  std::vector<std::string> long_names;
  std::vector<std::string> short_names;
  bool flag = false;
};

// Rewrites args (without the program name) as described above. is_file(token) says whether a token
// names an existing file (a key=value that is a file stays a source). Throws UsageError for an
// unknown option or key, an Ultralytics key yolo12-infer does not support, or a malformed value.
std::vector<std::string> normalize_arguments(const std::vector<std::string>& args,
                                             const std::vector<KnownOption>& known,
                                             const std::function<bool(const std::string&)>& is_file);

// The closest candidate to word by edit distance, or "" when none is close enough (at most 2
// edits, and fewer than half of the word's letters).
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// "320,320" -> {320, 320}; "" -> {}. Throws UsageError naming the option for anything else.
std::vector<int> parse_int_list(const std::string& option, const std::string& text);

}  // namespace yolo12_cli
