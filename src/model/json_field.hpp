// model/json_field.hpp - reading untrusted JSON: a bounded parse, one checked integer reader, and
// short descriptions of values for error messages.
//
// The header of a model file is untrusted. parse_bounded() refuses documents nested deeper or
// holding more values than any real header (docs/model-format.md, "Limits"), while parsing, so no
// later step (an error message, a recursive walk) can meet a 10^5-deep array. exact_int() is how
// every integer of the header is read: a JSON integer (not 3.0, not "3", not true) inside a range,
// so 2^32 + 3 is refused instead of wrapping to 3. brief() describes a value in at most a few dozen
// characters, so a message never dumps an untrusted value whole.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace yolo12::model {

// Thrown by parse_bounded() for a document over its limits; what() says which limit.
class JsonLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses [begin, end) as one JSON document. Throws JsonLimitError when an array or object opens
// deeper than max_depth (the top-level value is depth 1) or the document holds more than
// max_values values (checked in a first pass that builds nothing), and nlohmann::json::exception
// when it does not parse.
nlohmann::json parse_bounded(const char* begin, const char* end, int max_depth, std::size_t max_values);

// True, with *out set, when v is a JSON integer in [lo, hi]; false for anything else (a float,
// even 3.0; a string; a boolean; an integer out of range, however large).
bool exact_int(const nlohmann::json& v, long long lo, long long hi, long long* out);

// True, with *out set, when v is a JSON number (integer or float) that is finite and in [lo, hi].
bool finite_number(const nlohmann::json& v, double lo, double hi, double* out);

// A description of v of at most about max_chars characters: a scalar as written (a long string
// cut with "..."), a small array or object as written, a larger one by its kind and size.
std::string brief(const nlohmann::json& v, std::size_t max_chars = 48);

}  // namespace yolo12::model
