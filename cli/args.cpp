// cli/args.cpp - see args.hpp.
#include "args.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

namespace yolo12_cli {
namespace {

// Ultralytics keys whose yolo12-infer option has another name or an inverted sense. Every other
// supported key is our long option with '-' written '_' (conf, imgsz, save_txt, max_det, ...).
struct RenamedKey {
  const char* key;
  const char* option;  // our long option (without dashes); "" for the special cases below
  bool inverted;       // a flag set when the value is False
};
const RenamedKey kRenamedKeys[] = {
    {"show_labels", "hide-labels", true},
    {"show_conf", "hide-conf", true},
    {"verbose", "quiet", true},  // Ultralytics verbose=False prints no per-image lines
    {"source", "", false},       // a source
    {"tracker", "", false},      // only ByteTrack, which --track runs
};

// Ultralytics settings that yolo12-infer does not offer (docs/cli.md, "Ultralytics options").
const char* const kUnsupportedKeys[] = {
    "augment",   "visualize", "embed",  "retina_masks", "stream_buffer", "show",   "save_frames",
    "show_boxes", "dnn",      "persist", "task",        "mode",          "format", "data",
    "workers",   "compile",   "int8",   "plots",        "cfg",           "nms",    "end2end"};

bool is_mode_word(const std::string& s) { return s == "detect" || s == "predict" || s == "track"; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// True/False as Ultralytics writes them, and the usual variants. Throws for anything else.
bool parse_bool(const std::string& token, const std::string& value) {
  const std::string v = lower(value);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw UsageError(token + ": expected True or False");
}

// "[640, 480]", "(640,480)", "640 480" -> "640,480".
std::string list_value(const std::string& value) {
  std::string out;
  bool separator = false;
  for (char c : value) {
    if (c == '[' || c == ']' || c == '(' || c == ')') continue;
    if (c == ',' || c == ' ') {
      separator = !out.empty();
      continue;
    }
    if (separator) out += ',';
    separator = false;
    out += c;
  }
  return out;
}

std::string underscores_to_dashes(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}
std::string dashes_to_underscores(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

const KnownOption* find_long(const std::vector<KnownOption>& known, const std::string& name) {
  for (const KnownOption& o : known)
    if (std::find(o.long_names.begin(), o.long_names.end(), name) != o.long_names.end()) return &o;
  return nullptr;
}
const KnownOption* find_short(const std::vector<KnownOption>& known, const std::string& name) {
  for (const KnownOption& o : known)
    if (std::find(o.short_names.begin(), o.short_names.end(), name) != o.short_names.end()) return &o;
  return nullptr;
}

std::vector<std::string> long_names_of(const std::vector<KnownOption>& known, const std::string& prefix,
                                       bool underscores) {
  std::vector<std::string> names;
  for (const KnownOption& o : known)
    for (const std::string& n : o.long_names) names.push_back(prefix + (underscores ? dashes_to_underscores(n) : n));
  return names;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates, const std::string& suffix) {
  const std::string best = closest_match(word, candidates);
  return best.empty() ? "" : " (did you mean " + best + suffix + "?)";
}

// --imgsz 320 256 -> --imgsz=320,256: CLI11 would give a multi-value option every token that follows
// it (so `--imgsz 320 bus.jpg` would read "bus.jpg" as a size). At most two integers after --imgsz,
// any number after --classes; the tokens after them stay sources.
std::vector<std::string> fold_integer_lists(const std::vector<std::string>& args) {
  static const std::regex integer("-?[0-9]+");
  std::vector<std::string> folded;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      folded.insert(folded.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    const std::size_t max_values = arg == "--imgsz" ? 2 : arg == "--classes" ? 1000 : 0;
    std::string values;
    std::size_t taken = 0;
    while (max_values && taken < max_values && i + 1 < args.size() && std::regex_match(args[i + 1], integer))
      values += (taken++ ? "," : "") + args[++i];
    folded.push_back(taken ? arg + "=" + values : arg);
  }
  return folded;
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 3;  // at most 2 edits
  for (const std::string& c : candidates) {
    // Levenshtein distance, one row at a time.
    std::vector<std::size_t> row(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        const std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[c.size()] < best_distance && 2 * row[c.size()] < word.size()) {
      best_distance = row[c.size()];
      best = c;
    }
  }
  return best;
}

std::vector<std::string> normalize_arguments(const std::vector<std::string>& args,
                                             const std::vector<KnownOption>& known,
                                             const std::function<bool(const std::string&)>& is_file) {
  static const std::regex key_value("([A-Za-z][A-Za-z0-9_]*)=(.*)");
  static const std::regex negative_number("-[0-9.].*");
  std::vector<std::string> out;
  std::vector<std::string> extra_sources;  // from source=
  bool options_ended = false;              // after "--"
  bool seen_positional = false;            // mode words only lead
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    std::smatch m;
    if (options_ended) {
      out.push_back(token);
    } else if (token == "--") {
      options_ended = true;
      out.push_back(token);
    } else if (token.rfind("--", 0) == 0) {
      // A long option, maybe with =value: check the name, with '_' read as '-'.
      const std::size_t eq = token.find('=');
      const std::string name = underscores_to_dashes(token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      if (!find_long(known, name))
        throw UsageError("unknown option --" + name + suggestion("--" + name, long_names_of(known, "--", false), ""));
      out.push_back("--" + name + (eq == std::string::npos ? "" : token.substr(eq)));
    } else if (token.size() > 1 && token[0] == '-' && !std::regex_match(token, negative_number)) {
      // Short options, possibly grouped (-qv).
      for (std::size_t k = 1; k < token.size(); ++k)
        if (!find_short(known, token.substr(k, 1)))
          throw UsageError("unknown option -" + token.substr(k, 1) + " in " + token);
      out.push_back(token);
    } else if (!seen_positional && is_mode_word(token) && !is_file(token)) {
      if (token == "track") out.push_back("--track");
    } else if (std::regex_match(token, m, key_value) && !is_file(token)) {
      const std::string key = lower(m[1]);
      const std::string value = m[2];
      const RenamedKey* renamed = nullptr;
      for (const RenamedKey& r : kRenamedKeys)
        if (key == r.key) renamed = &r;
      if (renamed && key == "source") {
        extra_sources.push_back(value);
        continue;
      }
      if (renamed && key == "tracker") {
        if (lower(value) != "bytetrack.yaml" && lower(value) != "bytetrack")
          throw UsageError(token + ": only ByteTrack (bytetrack.yaml) is available; --track runs it");
        continue;
      }
      const std::string option = renamed ? renamed->option : underscores_to_dashes(key);
      const KnownOption* o = find_long(known, option);
      if (!o) {
        for (const char* unsupported : kUnsupportedKeys)
          if (key == unsupported)
            throw UsageError(token + ": Ultralytics' '" + key + "' is not supported by yolo12-infer (see docs/cli.md)");
        std::vector<std::string> keys = long_names_of(known, "", true);
        for (const RenamedKey& r : kRenamedKeys) keys.push_back(r.key);
        throw UsageError(token + ": unknown option '" + key + "'" + suggestion(key, keys, "=") +
                         "; a source named like this does not exist");
      }
      if (o->flag) {
        if (parse_bool(token, value) != (renamed && renamed->inverted)) out.push_back("--" + option);
      } else if (value.empty()) {
        throw UsageError(token + ": needs a value");
      } else if (option == "imgsz" || option == "classes") {
        out.push_back("--" + option + "=" + list_value(value));
      } else {
        out.push_back("--" + option + "=" + value);
      }
    } else {
      seen_positional = true;
      out.push_back(token);
    }
  }
  if (!extra_sources.empty()) {
    if (!options_ended) out.push_back("--");
    out.insert(out.end(), extra_sources.begin(), extra_sources.end());
  }
  return fold_integer_lists(out);
}

std::vector<int> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int> values;
  if (text.empty()) return values;
  std::stringstream items(text);
  std::string item;
  static const std::regex integer(" *-?[0-9]{1,9} *");
  while (std::getline(items, item, ',')) {
    if (!std::regex_match(item, integer)) throw UsageError(option + " " + text + ": expected integers");
    values.push_back(std::stoi(item));
  }
  return values;
}

}  // namespace yolo12_cli
