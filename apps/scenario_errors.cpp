// scenario_errors.cpp: where a scenario's error points (scenario_args.hpp): the scenario file's
// line of the key at fault, or the flag that gave the value.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/scenario_args.hpp"
#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "models/model.hpp"
#include "models/scenario_basics.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {

namespace {

// file_lines: the lines of the keys the scenario file set and no flag, --nccl or `also_set` key
// overrode, and the file's values.
ScenarioLines file_lines(const ScenarioArgs& a, const std::vector<std::string>& also_set, Scenario* values = nullptr) {
  ScenarioLines lines;
  if (a.file.empty()) return lines;
  const Scenario read = sim::read_scenario_file(a.file, {}, &lines);  // read before, so it reads again
  if (values) *values = read;
  for (const auto& [name, option] : a.given)
    if (option->count() > 0) lines.erase(name);
  for (const std::string& item : a.nccl) lines.erase(item.substr(0, item.find('=')));
  for (const std::string& name : also_set) lines.erase(name);
  return lines;
}

// flag_spelling: a message about a key's value ('precision "bf16": ...', 'gpus 5: ...') that a
// flag gave, spelled as the flag ('--precision bf16: ...'); others as they are.
std::string flag_spelling(const ScenarioArgs& a, const std::string& message) {
  for (const auto& [name, option] : a.given) {
    if (option->count() == 0) continue;
    const ScenarioKey* k = find_scenario_key(name);
    if (k == nullptr || k->flag.empty()) continue;
    for (const std::string& head : {std::string(k->name) + " \"", std::string(k->name) + " "}) {
      if (message.rfind(head, 0) != 0) continue;
      const bool quoted = head.back() == '"';
      const std::size_t value_end = quoted ? message.find("\": ", head.size()) : message.find(": ", head.size());
      if (value_end == std::string::npos) continue;
      const std::string value = message.substr(head.size(), value_end - head.size());
      return fmt::format("{} {}{}", k->flag, value, message.substr(value_end + (quoted ? 1 : 0)));
    }
  }
  return message;
}

}  // namespace

void apply_model_defaults(Scenario& s, const ScenarioArgs& a, const std::vector<std::string>& also_set) {
  // The zoo's models carry no measured step; a model that does not load is said by the
  // resolution, where its error is placed.
  const std::vector<std::string> zoo = zoo_model_names();
  if (std::find(zoo.begin(), zoo.end(), s.model) != zoo.end()) return;
  std::optional<Model> m;
  try {
    m = load_model(s.model);
  } catch (const Error&) {
    return;
  }
  std::optional<ScenarioLines> lines;  // the keys the scenario file sets, read when first asked
  apply_measured_defaults(s, *m, [&](std::string_view key) {
    if (const auto o = a.given.find(std::string(key)); o != a.given.end() && o->second->count() > 0) return false;
    if (std::find(also_set.begin(), also_set.end(), key) != also_set.end()) return false;
    if (!lines) {
      lines.emplace();
      if (!a.file.empty()) sim::read_scenario_file(a.file, {}, &*lines);
    }
    return !lines->contains(key);
  });
}

std::optional<int> file_line_of(const ScenarioArgs& a, std::string_view key) {
  const ScenarioLines lines = file_lines(a, {});
  const auto at = lines.find(key);
  if (at == lines.end()) return std::nullopt;
  return at->second;
}

std::string file_key_error(const ScenarioArgs& a, std::string_view message, const std::vector<std::string>& also_set) {
  if (a.file.empty()) return std::string(message);
  Scenario values;
  const ScenarioLines lines = file_lines(a, also_set, &values);
  const std::string located = located_scenario_error(message, a.file, lines);
  if (located != message) return located;
  // A message that quotes a value the file gave a key (unknown topology "dgx-a101"; ...) is
  // about that key's line: the key the message names first, where two keys share the value (an
  // alias: model: &a resnet18, topology: *a).
  for (const bool named : {true, false}) {
    for (const auto& [name, line] : lines) {
      const ScenarioKey& k = scenario_key(name);
      const std::string text = value_text(key_value(values, k));
      if (text.empty() || message.find(fmt::format("\"{}\"", text)) == std::string_view::npos) continue;
      if (named && message.find(name) == std::string_view::npos) continue;
      return fmt::format("{}:{}: {}", a.file, line, message);
    }
  }
  // A file the scenario names that cannot be read ("cal.yaml: cannot read ..."), or that does not
  // fit the scenario ("calibration cal.yaml: its GEMMs were timed in fp32 ..."): the key's line.
  // An error inside that file ("cal.yaml:4: ...") keeps the file's own line.
  for (const auto& [name, line] : lines) {
    const ScenarioKey& k = scenario_key(name);
    const std::string text = value_text(key_value(values, k));
    if (text.empty()) continue;
    const bool whole_file =
        message.rfind(text + ": ", 0) == 0 || message.rfind(fmt::format("{} {}: ", name, text), 0) == 0;
    if (whole_file) return fmt::format("{}:{}: {}", a.file, line, message);
  }
  return located;
}

Scenario resolve_located(const ScenarioArgs& a, const std::function<Scenario()>& resolve) {
  if (!a.file.empty()) {
    try {
      return resolve();
    } catch (const DataError& e) {
      throw like(e, DataError(file_key_error(a, e.what())));
    } catch (const ConfigError& e) {
      throw like(e, ConfigError(file_key_error(a, e.what())));
    }
  }
  try {
    return resolve();
  } catch (const DataError&) {
    throw;  // a model, topology or calibration file the flags named: its content is at fault
  } catch (const ConfigError& e) {
    throw like(e, UsageError(flag_spelling(a, e.what())));  // every other value came from a flag
  }
}

}  // namespace gradsync::apps
