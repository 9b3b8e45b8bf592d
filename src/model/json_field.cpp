// model/json_field.cpp - see json_field.hpp.
#include "model/json_field.hpp"

#include <cmath>
#include <cstdint>

namespace yolo12::model {

nlohmann::json parse_bounded(const char* begin, const char* end, int max_depth, std::size_t max_values) {
  using nlohmann::json;
  std::size_t values = 0;
  // The callback runs for every event, at the depth of the container the event belongs to (0 for
  // the top-level value): an array or object that starts at depth d opens nesting level d + 1.
  const json::parser_callback_t bound = [&](int depth, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::array_start || event == json::parse_event_t::object_start) {
      if (depth + 1 > max_depth)
        throw JsonLimitError("nested deeper than " + std::to_string(max_depth) + " levels");
    }
    if (event == json::parse_event_t::value || event == json::parse_event_t::array_start ||
        event == json::parse_event_t::object_start) {
      if (++values > max_values) throw JsonLimitError("more than " + std::to_string(max_values) + " values");
    }
    return true;
  };
  return json::parse(begin, end, bound, /*allow_exceptions=*/true, /*ignore_comments=*/false);
}

bool exact_int(const nlohmann::json& v, long long lo, long long hi, long long* out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi) || static_cast<long long>(u) < lo) return false;
    *out = static_cast<long long>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < lo || i > hi) return false;
    *out = i;
    return true;
  }
  return false;
}

bool finite_number(const nlohmann::json& v, double lo, double hi, double* out) {
  if (!v.is_number()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) return false;
  *out = d;
  return true;
}

std::string brief(const nlohmann::json& v, std::size_t max_chars) {
  using nlohmann::json;
  auto cut = [&](std::string s) {
    if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
    return s;
  };
  switch (v.type()) {
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      // Dump only a bounded prefix (dump escapes control characters and invalid UTF-8 is replaced).
      const json prefix = s.size() > max_chars ? s.substr(0, max_chars) : s;
      std::string text = prefix.dump(-1, ' ', false, json::error_handler_t::replace);
      if (s.size() > max_chars) text.insert(text.size() - 1, "...");
      return text;
    }
    case json::value_t::array:
    case json::value_t::object: {
      // Small, shallow containers as written; anything else by its size. The depth is bounded by
      // parse_bounded, and the element count here, so dump() stays small.
      const bool small = v.size() <= 8;
      bool shallow = small;
      if (small)
        for (const auto& x : v) shallow = shallow && (x.is_primitive() || x.empty());
      if (small && shallow) return cut(v.dump(-1, ' ', false, json::error_handler_t::replace));
      return std::string(v.is_array() ? "an array of " : "an object of ") + std::to_string(v.size()) +
             (v.is_array() ? " elements" : " keys");
    }
    default:
      return cut(v.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

}  // namespace yolo12::model
