// cli/settings.hpp - which model yolo12-infer runs when none is named (docs/cli.md, "The model"):
//   1. --model PATH (or model=PATH);
//   2. the environment variable YOLO12_MODEL;
//   3. "model" in settings.json in the yolo12 config folder: $YOLO12_CONFIG_DIR, else
//      $XDG_CONFIG_HOME/yolo12, else $HOME/.config/yolo12. exporter/export.py records each model it
//      writes there (unless --no-set-default). A missing file means no default; a corrupt one is an
//      error naming it.
#pragma once

#include <string>

namespace yolo12_cli {

struct ModelChoice {
  std::string path;
  std::string origin;  // "--model", "$YOLO12_MODEL" or "the default in <settings file>"
};

// The config folder, or "" when none of the variables above is set.
std::string config_dir();

// Applies the order above. Throws UsageError when no step gives a model, or when the settings file
// exists but cannot be read (not JSON, not an object, "model" not a string).
ModelChoice choose_model(const std::string& from_command_line);

}  // namespace yolo12_cli
