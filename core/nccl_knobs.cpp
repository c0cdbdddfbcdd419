// nccl_knobs.cpp: NCCL's knob syntax (see nccl_knobs.hpp).
#include "core/nccl_knobs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gradsync {
namespace {

std::string lower(std::string_view s) { return ascii_lower(s); }
std::string trimmed(std::string_view s) { return std::string(trim_blanks(s)); }

}  // namespace

std::string canonical_nccl_list(std::string_view text, std::span<const std::string_view> names) {
  std::string t = lower(trimmed(text));
  if (t == "auto") return "";
  const std::string expected = fmt::format(
      "expected a comma list of {} (NCCL's names, any case), ^ first to exclude them", fmt::join(names, ", "));
  // NCCL 2.24 on also reads per-collective lists ("allreduce:tree,ring;allgather:ring",
  // tuning.cc parseList); gradsync holds one list for every collective.
  if (t.find(':') != std::string::npos || t.find(';') != std::string::npos) {
    throw ConfigError(
        fmt::format("per-collective lists (NCCL 2.24's \"allreduce:tree;allgather:ring\" form) are not "
                    "modelled; {}, for every collective",
                    expected));
  }
  bool exclude = false;
  if (!t.empty() && t.front() == '^') {
    exclude = true;
    t.erase(0, 1);
  }
  if (t.empty()) throw ConfigError(expected);
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = t.find(',', start);
    const std::string item =
        trimmed(std::string_view(t).substr(start, comma == std::string::npos ? comma : comma - start));
    if (item.empty()) throw ConfigError(expected);
    if (item == "collnetdirect" || item == "collnetchain" || item == "collnet" || item == "pat") {
      throw ConfigError(fmt::format("{}: gradsync does not model CollNet (SHARP) or PAT; {}", item, expected));
    }
    if (std::find(names.begin(), names.end(), item) == names.end()) {
      throw ConfigError(fmt::format("unknown name \"{}\"; {}", item, expected));
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (exclude && out.size() == names.size()) {
    throw ConfigError(fmt::format("^{} excludes every one of {}, and NCCL would have nothing to run; {}",
                                  fmt::join(out, ","), fmt::join(names, ", "), expected));
  }
  // NCCL reads the list as a set (tuning.cc parseList): written in its own order, so that
  // "tree,ring" and "ring,tree" are one setting (one --vary value, one simulation).
  std::vector<std::string> ordered;
  for (std::string_view n : names)
    if (std::find(out.begin(), out.end(), n) != out.end()) ordered.emplace_back(n);
  return fmt::format("{}{}", exclude ? "^" : "", fmt::join(ordered, ","));
}

bool nccl_list_allows(std::string_view list, std::string_view name) {
  if (list.empty()) return true;
  const bool exclude = list.front() == '^';
  if (exclude) list.remove_prefix(1);
  bool listed = false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    if (list.substr(start, comma == std::string_view::npos ? comma : comma - start) == name) listed = true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return exclude ? !listed : listed;
}

std::string canonical_nccl_level(std::string_view text) {
  const std::string t = trimmed(text);
  static constexpr std::string_view kLevels[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS"};
  for (std::string_view l : kLevels)
    if (t == l) return t;
  // NCCL's integers keep their old meaning (paths.cc ncclGetLevel, levelsOldToNew, 2.7 on): text that
  // starts with a digit is read with strtol(str, NULL, 0) (010 is 8, 0x2 is 2) and clamped to the
  // table's last entry: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS.
  static constexpr std::string_view kOld[] = {"LOC", "PIX", "PXB", "PHB", "SYS", "SYS"};
  if (!t.empty() && t[0] >= '0' && t[0] <= '9') {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 0);
    if (*end != '\0')
      throw ConfigError(fmt::format(
          "NCCL reads \"{}\" as {} (strtol with base 0 stops at \"{}\"; a leading 0 is octal, 0x hex); write {} if "
          "that is meant",
          t, v, end, v));
    // NCCL stores strtol's long in an int: beyond INT_MAX the level it indexes is undefined.
    if (errno == ERANGE || v > std::numeric_limits<int>::max())
      throw ConfigError(
          fmt::format("{} is out of NCCL's range: it keeps the old level in an int (at most {}); "
                      "expected 0-5 (4 and above are SYS)",
                      t, std::numeric_limits<int>::max()));
    return std::string(kOld[std::min<long long>(v, 5)]);
  }
  throw ConfigError(
      "expected LOC, NVL, NVB, PIX, PXB, PHB or SYS (NCCL compares them in upper case) or NCCL's old integers (0 LOC, "
      "1 PIX, 2 PXB, 3 PHB, 4 and above SYS)");
}

std::string canonical_nccl_nvls(std::string_view text) {
  const std::string t = trimmed(text);
  if (t == "0" || t == "1" || t == "2") return t;
  throw ConfigError("expected 0 (off), 1 (on where the NVSwitches support it) or 2 (auto, NCCL's default)");
}

}  // namespace gradsync
