// text.hpp: small text helpers shared by the readers of keys and knobs.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// edit_distance: Levenshtein's distance between two texts, for "did you mean" hints.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// NearestName: the candidate nearest to a misspelt name, at most two edits away, for "did you
// mean" hints; the first of equally near candidates wins.
//   NearestName n("bucket_cap_md");
//   n.consider("bucket_cap_mb");          // n.hint() == " (did you mean \"bucket_cap_mb\"?)"
class NearestName {
 public:
  explicit NearestName(std::string_view typed) : typed_(typed) {}
  // consider: weigh `candidate`; `shown` is what the hint names if it is the nearest yet.
  void consider(std::string_view candidate, std::string_view shown) {
    if (const std::size_t d = edit_distance(typed_, candidate); d < best_) best_ = d, name_ = shown;
  }
  void consider(std::string_view candidate) { consider(candidate, candidate); }
  const std::string& name() const { return name_; }
  // hint: ` (did you mean "NAME"?)`, or nothing when no candidate is near.
  std::string hint() const { return name_.empty() ? std::string() : " (did you mean \"" + name_ + "\"?)"; }

 private:
  std::string typed_;
  std::string name_;
  std::size_t best_ = 3;  // at most two edits away
};

// counted: "1 step", "2 steps", "0 links": a count and its noun, plural unless the count is one.
inline std::string counted(long long n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

// display_width: the columns a UTF-8 text takes on a terminal: one per character (continuation
// bytes count nothing), two for East Asian wide ones (Hangul, CJK, fullwidth forms: Unicode's
// East_Asian_Width W and F blocks), so that tables line up host names such as "nœud-1" or "节点0".
inline std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (std::size_t k = 1; k < len && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                      (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD);
    width += wide ? 2 : 1;
    i += len;
  }
  return width;
}

// first_invalid_utf8: the offset of the first byte that is not well-formed UTF-8 (an overlong
// form, a surrogate, a code point past U+10FFFF, a missing continuation), npos when none.
inline std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned long cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // the n continuation bytes are missing
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

// valid_utf8: well-formed UTF-8 throughout.
inline bool valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

// rank_runs: ranks as runs of consecutive ones ("0-255", "0,2,4-7"), so that a message about a
// thousand GPUs stays one readable line.
inline std::string rank_runs(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i + 1    ? std::to_string(ranks[i]) + "-" + std::to_string(ranks[j])
           : j == i + 1 ? std::to_string(ranks[i]) + "," + std::to_string(ranks[j])
                        : std::to_string(ranks[i]);
    i = j + 1;
  }
  return out;
}

}  // namespace gradsync
