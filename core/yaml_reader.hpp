// yaml_reader.hpp: typed access to YAML data files whose every error says origin:line, the entry,
// the field, the bad value and what was expected. Shared by the model, GPU-spec, scenario and
// calibration loaders.
//
//   YamlReader r("models/zoo/gpt2.yaml");
//   const auto batch = r.positive_int(r.required(defaults, "defaults", "batch"), "defaults", "batch");
//   // ConfigError: models/zoo/gpt2.yaml:7: defaults: field "batch" is 0; it must be > 0
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/units.hpp"

namespace gradsync {

// YamlReader carries a file's name; `where` arguments name the entry ("parameters[3] \"x\"").
class YamlReader {
 public:
  explicit YamlReader(std::string origin) : origin_(std::move(origin)) {}

  // load parses text, turning a syntax error into ConfigError at origin:line:column. `what` names
  // the file in messages about its structure ("scenario: key \"gpus\" appears twice ...").
  YAML::Node load(std::string_view text, std::string_view what = "document") const;

  // fail throws ConfigError "origin:line: where: what" (line of `at` when it has one).
  [[noreturn]] void fail(const YAML::Node& at, const std::string& where, const std::string& what) const;

  // only_keys rejects any field of `map` outside `allowed`: a typo must not pass silently.
  void only_keys(const YAML::Node& map, const std::string& where,
                 std::initializer_list<std::string_view> allowed) const;
  // required returns map[key], failing when it is missing or null.
  YAML::Node required(const YAML::Node& map, const std::string& where, const char* key) const;

  std::string string(const YAML::Node& n, const std::string& where, const char* key) const;
  bool boolean(const YAML::Node& n, const std::string& where, const char* key) const;
  std::int64_t positive_int(const YAML::Node& n, const std::string& where, const char* key) const;
  std::int64_t non_negative_int(const YAML::Node& n, const std::string& where, const char* key) const;
  double positive_number(const YAML::Node& n, const std::string& where, const char* key) const;
  double non_negative_number(const YAML::Node& n, const std::string& where, const char* key) const;
  Bytes size(const YAML::Node& n, const std::string& where, const char* key) const;        // "80GiB"
  double bandwidth(const YAML::Node& n, const std::string& where, const char* key) const;  // "25GBps"
  // shape reads a list of dimensions, each > 0.
  std::vector<std::int64_t> shape(const YAML::Node& n, const std::string& where) const;
  DType dtype(const YAML::Node& n, const std::string& where) const;

  // scalar_text shows a node in an error: its text, or "a list" / "a mapping".
  static std::string scalar_text(const YAML::Node& n);
  const std::string& origin() const { return origin_; }

 private:
  // located runs parse(text of n) and reports its ConfigError at n's line, naming `key` (if any).
  template <typename Parse>
  auto located(const YAML::Node& n, const std::string& where, const char* key, Parse parse) const;

  std::string origin_;
};

}  // namespace gradsync
