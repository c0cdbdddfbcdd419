// text.hpp: small text helpers shared by the readers of keys and knobs.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace gradsync {

// ascii_lower: the text with ASCII letters lower-cased ("RING" -> "ring").
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// trim_blanks: the text without leading and trailing spaces and tabs.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// counted: "1 step", "2 steps", "0 links": a count and its noun, plural unless the count is one.
inline std::string counted(long long n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace gradsync
