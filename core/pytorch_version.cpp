// pytorch_version.cpp: parsing the scenario key pytorch_version (pytorch_version.hpp).
#include "core/pytorch_version.hpp"

#include <fmt/format.h>

#include <cctype>

#include "core/error.hpp"

namespace gradsync {

std::string PytorchVersion::text() const { return fmt::format("{}.{}", major, minor); }

namespace {

// parse: the version, or ConfigError with what was expected (without the text: callers quote it).
PytorchVersion parse(std::string_view text) {
  const std::string expected = fmt::format(
      "expected MAJOR.MINOR as torch.__version__ starts (\"2.3\", \"1.13.0a0\"), {} or later", kOldestPytorch.text());
  std::size_t i = 0;
  const auto number = [&](int* out) {
    const std::size_t start = i;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 4) {
      v = v * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) throw ConfigError(expected);
    // torch.__version__ writes its numbers without leading zeros: "2.011" is not 2.11.
    if (text[start] == '0' && i - start > 1) throw ConfigError(expected);
    *out = static_cast<int>(v);
  };
  PytorchVersion v;
  number(&v.major);
  if (i >= text.size() || text[i] != '.') throw ConfigError(expected);
  ++i;
  number(&v.minor);
  // What follows the minor number: a patch level, a pre-release or local tag ("0a0", "1+cu121").
  if (i < text.size() && text[i] != '.' && text[i] != '+' && text[i] != 'a' && text[i] != 'b' && text[i] != 'r' &&
      text[i] != 'd') {
    throw ConfigError(expected);
  }
  if (v < kOldestPytorch) throw ConfigError(expected);
  // A release after the newest modelled has rules gradsync has not read (a new default, a new
  // Reducer rule): say so rather than assume the newest's.
  if (kNewestPytorch < v)
    throw ConfigError(fmt::format("gradsync knows the rules of PyTorch {} to {}; give {} for a later release",
                                  kOldestPytorch.text(), kNewestPytorch.text(), kNewestPytorch.text()));
  return v;
}

}  // namespace

PytorchVersion parse_pytorch_version(std::string_view text) {
  try {
    return parse(text);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("pytorch version \"{}\": {}", text, e.what()));
  }
}

std::string canonical_pytorch_version(std::string_view text) { return parse(text).text(); }

}  // namespace gradsync
