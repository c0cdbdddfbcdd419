// json_text.hpp: JSON as text, for every JSON gradsync writes. Names come from users (a model
// file's name, a path) and need not be UTF-8; nlohmann::json's dump() throws on such bytes, so
// they are written as U+FFFD instead, the rest of the document unchanged.
//
//   out << json_text(j, 2);   // result.json; a model named "caf\xe9" is written "caf\ufffd"
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gradsync {

template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gradsync
