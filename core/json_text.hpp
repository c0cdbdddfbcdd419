// json_text.hpp: JSON as text, for every JSON gradsync writes. Names come from users (a model
// file's name, a path) and need not be UTF-8; nlohmann::json's dump() throws on such bytes, so
// they are written as U+FFFD instead, the rest of the document unchanged.
//
//   out << json_text(j, 2);   // result.json; a model named "caf\xe9" is written "caf\ufffd"
#pragma once

#include <cmath>

#include <nlohmann/json.hpp>

#include <string>

namespace gradsync {

template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// whole_json: a count held as a double (bytes) written as a JSON integer when it is a whole
// number below 2^53, so that readers that decode counts into integers (Rust's u64, Go's int64)
// take it ("1048576", not "1048576.0"); otherwise the number as it is.
inline nlohmann::ordered_json whole_json(double v) {
  if (v >= -9007199254740992.0 && v <= 9007199254740992.0 && v == static_cast<double>(static_cast<long long>(v)))
    return static_cast<long long>(v);
  return v;
}

// bytes_json: a byte count as summary.csv writes it, rounded to a whole byte: the engine's share of
// a tensor split over GPUs (DataParallel's scatter of a batch into 3) is a fraction of a byte, and
// sums of shares carry float error (256816800.00000006); no count is a fraction.
inline nlohmann::ordered_json bytes_json(double v) { return whole_json(std::round(v)); }

}  // namespace gradsync
