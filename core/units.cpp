// units.cpp: parsing and formatting of sizes, bandwidths and durations (see units.hpp).
#include "core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "core/error.hpp"

namespace gradsync {
namespace {

constexpr const char* kSizeUnits = "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB or PiB";
constexpr const char* kBandwidthUnits =
    "a prefix k, M, G, T, P, Ki, Mi, Gi, Ti or Pi, then B (bytes) or b (bits), then ps or /s, "
    "as in 300GBps, 200Gbps, 25GiBps";
constexpr const char* kDurationUnits = "ns, us, ms, s, min or h";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A number split from its unit: "2.5ms" -> {2.5, "ms"}.
struct Quantity {
  double value = 0;
  std::string_view number;
  std::string_view unit;
};

// split_quantity parses the leading decimal number (digits, optional fraction, optional
// exponent) and returns it with the trimmed rest as the unit. `kind` names the quantity in errors.
Quantity split_quantity(std::string_view original, const char* kind) {
  std::string_view s = trim(original);
  if (s.empty()) {
    throw ConfigError(fmt::format("{} \"{}\" is empty; expected a number with a unit", kind, original));
  }
  bool negative = false;
  std::size_t i = 0;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    i = 1;
  }
  const std::size_t start = i;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) {
    throw ConfigError(
        fmt::format("{} \"{}\" does not start with a number; expected e.g. 1.5 followed by a unit", kind, original));
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t exp_start = j;
    while (j < s.size() && is_digit(s[j])) ++j;
    if (j == exp_start) {
      throw ConfigError(fmt::format("{} \"{}\" has an exponent without digits; expected e.g. 1.5e3", kind, original));
    }
    i = j;
  }
  Quantity q;
  q.number = s.substr(0, i);
  q.unit = trim(s.substr(i));
  const std::string_view magnitude = s.substr(start, i - start);
  auto [ptr, ec] = std::from_chars(magnitude.data(), magnitude.data() + magnitude.size(), q.value);
  if (ec == std::errc::result_out_of_range || !std::isfinite(q.value)) {
    throw ConfigError(fmt::format("{} \"{}\" is out of range; expected a number of at most {:g}", kind, original,
                                  std::numeric_limits<double>::max()));
  }
  if (ec != std::errc() || ptr != magnitude.data() + magnitude.size()) {
    throw ConfigError(fmt::format("{} \"{}\" is not a number", kind, original));
  }
  if (negative && q.value != 0) q.value = -q.value;
  return q;
}

// prefix_multiplier maps an SI or binary prefix ("", "k", "Mi", ...) to its factor.
std::optional<double> prefix_multiplier(std::string_view prefix) {
  struct Prefix {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Prefix, 12> kPrefixes{{{"", 1.0},
                                                     {"k", 1e3},
                                                     {"K", 1e3},
                                                     {"M", 1e6},
                                                     {"G", 1e9},
                                                     {"T", 1e12},
                                                     {"P", 1e15},
                                                     {"Ki", 1024.0},
                                                     {"Mi", 1048576.0},
                                                     {"Gi", 1073741824.0},
                                                     {"Ti", 1099511627776.0},
                                                     {"Pi", 1125899906842624.0}}};
  for (const auto& p : kPrefixes) {
    if (p.name == prefix) return p.factor;
  }
  return std::nullopt;
}

}  // namespace

std::string size_unit_case_hint(std::string_view text) {
  // Units are case-sensitive (M is mega, m would be milli): one that differs only in case is
  // named, not guessed.
  const std::string_view t = trim(text);
  std::size_t at = t.size();
  while (at > 0 && std::isalpha(static_cast<unsigned char>(t[at - 1]))) --at;
  const std::string_view unit = t.substr(at);
  if (unit.empty() || at == 0) return "";
  for (std::string_view u : {"B", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB"}) {
    if (u == unit || u.size() != unit.size()) continue;
    if (std::equal(u.begin(), u.end(), unit.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return fmt::format(" (units are case-sensitive: {})", u);
  }
  return "";
}

Bytes parse_size(std::string_view text) {
  // A plain integer is exact even beyond 2^53, so it does not go through double.
  const std::string_view t = trim(text);
  if (!t.empty() && std::all_of(t.begin(), t.end(), is_digit)) {
    Bytes n = 0;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec == std::errc::result_out_of_range) {
      throw ConfigError(
          fmt::format("size \"{}\" is too large; the most is {} bytes", text, std::numeric_limits<Bytes>::max()));
    }
    (void)ptr;
    return n;
  }
  const Quantity q = split_quantity(text, "size");
  if (q.value < 0) throw ConfigError(fmt::format("size \"{}\" must be >= 0", text));
  std::optional<double> factor;
  if (q.unit.empty()) {
    factor = 1.0;
  } else if (q.unit.back() == 'B') {
    factor = prefix_multiplier(q.unit.substr(0, q.unit.size() - 1));
  }
  if (!factor) {
    throw ConfigError(fmt::format("size \"{}\" has unknown unit \"{}\"{}; expected {}", text, q.unit,
                                  size_unit_case_hint(text), kSizeUnits));
  }
  const double bytes = q.value * *factor;
  if (bytes >= 18446744073709551616.0) {
    throw ConfigError(
        fmt::format("size \"{}\" is too large; the most is {} bytes", text, std::numeric_limits<Bytes>::max()));
  }
  const double whole = std::round(bytes);
  if (std::fabs(bytes - whole) > 1e-9 * std::max(1.0, bytes)) {
    throw ConfigError(fmt::format("size \"{}\" is {} bytes, not a whole number of bytes", text, bytes));
  }
  return static_cast<Bytes>(whole);
}

double parse_bandwidth(std::string_view text) {
  const Quantity q = split_quantity(text, "bandwidth");
  std::string_view unit = q.unit;
  bool per_second = false;
  for (std::string_view suffix : {"ps", "/s"}) {
    if (unit.size() > suffix.size() && unit.substr(unit.size() - suffix.size()) == suffix) {
      unit.remove_suffix(suffix.size());
      per_second = true;
      break;
    }
  }
  std::optional<double> factor;
  if (per_second && !unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) {
    const double per_unit = unit.back() == 'B' ? 1.0 : 0.125;
    if (auto p = prefix_multiplier(unit.substr(0, unit.size() - 1))) factor = *p * per_unit;
  }
  if (!factor) {
    if (q.unit.empty()) {
      throw ConfigError(fmt::format("bandwidth \"{}\" has no unit; expected {}", text, kBandwidthUnits));
    }
    throw ConfigError(
        fmt::format("bandwidth \"{}\" has unknown unit \"{}\"; expected {}", text, q.unit, kBandwidthUnits));
  }
  // The unit first: "0x10GBps" is a number with an unknown unit ("x10GBps"), not a zero bandwidth.
  if (q.value <= 0) throw ConfigError(fmt::format("bandwidth \"{}\" must be > 0", text));
  const double bps = q.value * *factor;
  if (!std::isfinite(bps)) {
    throw ConfigError(fmt::format("bandwidth \"{}\" is out of range; the most is {:g} B/s", text,
                                  std::numeric_limits<double>::max()));
  }
  return bps;
}

double parse_duration(std::string_view text) {
  const Quantity q = split_quantity(text, "duration");
  if (q.value < 0) throw ConfigError(fmt::format("duration \"{}\" must be >= 0", text));
  struct Unit {
    std::string_view name;
    double seconds;
  };
  static constexpr std::array<Unit, 7> kUnits{
      {{"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}}};
  if (q.unit.empty()) {
    throw ConfigError(fmt::format("duration \"{}\" has no unit; expected {}", text, kDurationUnits));
  }
  for (const auto& u : kUnits) {
    if (u.name == q.unit) {
      const double s = q.value * u.seconds;
      if (!std::isfinite(s)) {
        throw ConfigError(fmt::format("duration \"{}\" is out of range; the most is {:g} s", text,
                                      std::numeric_limits<double>::max()));
      }
      return s;
    }
  }
  throw ConfigError(fmt::format("duration \"{}\" has unknown unit \"{}\"; expected {}", text, q.unit, kDurationUnits));
}

namespace {
// three_digits formats v (>= 1 and < 1000 after scaling) with three significant digits.
std::string three_digits(double v, std::string_view unit) {
  if (v >= 99.95) return fmt::format("{:.0f} {}", v, unit);
  if (v >= 9.995) return fmt::format("{:.1f} {}", v, unit);
  return fmt::format("{:.2f} {}", v, unit);
}
}  // namespace

std::string human_bytes(double bytes) {
  static constexpr std::array<std::string_view, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  std::size_t i = 0;
  while (bytes >= 1023.95 && i + 1 < kUnits.size()) {
    bytes /= 1024;
    ++i;
  }
  return three_digits(bytes, kUnits[i]);
}

std::string human_bandwidth(double bytes_per_s) {
  static constexpr std::array<std::string_view, 6> kUnits{"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
  std::size_t i = 0;
  while (bytes_per_s >= 999.95 && i + 1 < kUnits.size()) {
    bytes_per_s /= 1000;
    ++i;
  }
  return three_digits(bytes_per_s, kUnits[i]);
}

std::string human_duration(double seconds) {
  if (seconds == 0) return "0 s";
  if (seconds < 999.5e-9) return three_digits(seconds * 1e9, "ns");
  if (seconds < 999.5e-6) return three_digits(seconds * 1e6, "us");
  if (seconds < 999.5e-3) return three_digits(seconds * 1e3, "ms");
  return three_digits(seconds, "s");
}

}  // namespace gradsync
