// model/json_field.cpp - see json_field.hpp.
#include "model/json_field.hpp"

#include <cmath>
#include <cstdint>
#include <vector>
#include <cstdint>

namespace yolo12::model {

namespace {

// A SAX pass that only counts: nesting depth and values. It stops at the first limit crossed (and
// at a syntax error, which the DOM parse then reports). nlohmann's own parser callback would do the
// same job, but costs time quadratic in the number of array elements (38 s for 10^5 layers).
class LimitCounter {
 public:
  LimitCounter(int max_depth, std::size_t max_values) : max_depth_(max_depth), max_values_(max_values) {}
  std::string exceeded;  // which limit stopped the pass ("" if none)

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(std::int64_t) { return value(); }
  bool number_unsigned(std::uint64_t) { return value(); }
  bool number_float(double, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(std::vector<std::uint8_t>&) { return value(); }
  bool key(std::string&) { return true; }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool value() {
    if (++values_ <= max_values_) return true;
    exceeded = "more than " + std::to_string(max_values_) + " values";
    return false;
  }
  bool open() {
    if (++depth_ > max_depth_) {
      exceeded = "nested deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    return value();
  }
  bool close() {
    --depth_;
    return true;
  }
  int max_depth_;
  std::size_t max_values_;
  int depth_ = 0;
  std::size_t values_ = 0;
};

}  // namespace

nlohmann::json parse_bounded(const char* begin, const char* end, int max_depth, std::size_t max_values) {
  LimitCounter counter(max_depth, max_values);
  nlohmann::json::sax_parse(begin, end, &counter, nlohmann::json::input_format_t::json, /*strict=*/true);
  if (!counter.exceeded.empty()) throw JsonLimitError(counter.exceeded);
  return nlohmann::json::parse(begin, end);  // within the limits; throws parse_error for bad syntax
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
      const bool one = v.size() == 1;
      return std::string(v.is_array() ? "an array of " : "an object of ") + std::to_string(v.size()) +
             (v.is_array() ? (one ? " element" : " elements") : (one ? " key" : " keys"));
    }
    default:
      return cut(v.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

}  // namespace yolo12::model
