// scenario.cpp: the YAML scenario file and the scenario as JSON, both through the key table.
#include "core/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"
#include "core/yaml_reader.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

static Scenario parse_scenario_unchecked(std::string_view text, const std::string& origin, Scenario s,
                                         const std::string& folder, ScenarioLines* lines);

Scenario read_scenario_file(const std::string& path, Scenario s, ScenarioLines* lines) {
  const std::string text = read_input_file(path, "scenario file");
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return as_data_error([&] { return parse_scenario_unchecked(text, path, std::move(s), folder, lines); });
}

// Every error of the file's content is a DataError (exit 1), whoever named the file.
InputLocation input_location(const Scenario& s) {
  if (s.input == "device") return InputLocation::kDevice;
  if (s.input == "pinned") return InputLocation::kPinned;
  if (s.input == "pageable") return InputLocation::kPageable;
  throw ConfigError(fmt::format("input \"{}\": expected pageable, pinned or device", s.input));
}

Scenario parse_scenario(std::string_view text, const std::string& origin, Scenario s) {
  return as_data_error([&] { return parse_scenario_unchecked(text, origin, std::move(s), {}, nullptr); });
}

static Scenario parse_scenario_unchecked(std::string_view text, const std::string& origin, Scenario s,
                                         const std::string& folder, ScenarioLines* lines) {
  const YamlReader r(origin);
  return scenario_from_node(r, r.load(text, "scenario"), std::move(s), folder, lines);
}

// in_folder: a NAME|FILE value as the file means it: a relative path (holding '/' or '.', which
// no built-in name does) joined to the file's folder; names and absolute paths unchanged.
static std::string in_folder(const std::string& value, const std::string& folder) {
  if (folder.empty() || value.find_first_of("/.") == std::string::npos) return value;
  const std::filesystem::path p(value);
  if (p.is_absolute()) return value;
  return (std::filesystem::path(folder) / p).lexically_normal().string();
}

Scenario scenario_from_node(const YamlReader& r, const YAML::Node& root, Scenario s, const std::string& folder,
                            ScenarioLines* lines) {
  if (!root.IsMap()) r.fail(root, "scenario", "expected a mapping of scenario keys (model: gpt2, gpus: 8, ...)");
  std::map<std::string, std::pair<int, std::string>> seen;  // key -> line (1-based) and the name it went by
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) r.fail(kv.first, "scenario", "a key must be a single word (model, gpus, ...)");
    const std::string name = kv.first.as<std::string>();
    // A key is its row's name or an alias, with dashes or underscores alike (batch-per-gpu is
    // batch_per_gpu), as README's "Scenario" says; not a flag's spelling (--batch-per-gpu).
    std::string key = name;
    std::replace(key.begin(), key.end(), '-', '_');
    const ScenarioKey* k = name.rfind('-', 0) == 0 ? nullptr : find_scenario_key(key);
    if (k == nullptr || (k->name != key && std::find(k->aliases.begin(), k->aliases.end(), key) == k->aliases.end())) {
      r.fail(
          kv.first, "scenario",
          fmt::format("unknown key \"{}\"{}; expected one of {}", name, nearest_key_hint(name), scenario_key_names()));
    }
    // One key under two of its names (nccl_algo and algo): the mapping's own check cannot see it.
    if (const auto [it, fresh] = seen.emplace(std::string(k->name), std::pair{kv.first.Mark().line + 1, key}); !fresh) {
      r.fail(kv.first, "scenario",
             fmt::format("\"{}\" sets {} again (already set on line {}{})", name, k->name, it->second.first,
                         it->second.second == k->name ? "" : " as " + it->second.second));
    }
    const YAML::Node& v = kv.second;
    if (v.IsNull()) {
      r.fail(kv.first, "scenario",
             fmt::format("{}: no value; give one or remove the key for the default ({})", name, k->default_text));
    }
    if (!v.IsScalar()) {
      r.fail(v, "scenario", fmt::format("{} is {}; expected a single value", name, YamlReader::scalar_text(v)));
    }
    const std::string value = v.Scalar();
    // No value of a key begins or ends with blanks; a quoted one does where its closing quote is
    // missing (the quote runs on over the line break, which YAML folds into a space, to the end).
    if (!value.empty() && value != trim_blanks(value)) {
      r.fail(v, "scenario",
             fmt::format("{} \"{}\": begins or ends with a blank (is a quote left open?); expected the value "
                         "alone, quoted on one line or not at all",
                         name, value));
    }
    try {
      nlohmann::ordered_json parsed = parse_key_value(*k, value);
      if (k->kind == KeyKind::kName) parsed = in_folder(parsed.get<std::string>(), folder);
      set_key(s, *k, parsed);
    } catch (const ConfigError& e) {
      r.fail(v, "scenario", fmt::format("{} \"{}\": {}", name, value, e.what()));
    }
  }
  if (lines != nullptr)
    for (const auto& [key, at] : seen) lines->emplace(key, at.first);
  return s;
}

std::string located_scenario_error(std::string_view message, const std::string& file, const ScenarioLines& lines) {
  // The key the message starts with: its name (bucket_cap_mb 5: ...), its flag (--bucket-cap-mb=5:
  // ...) or an NCCL knob with its value (NCCL_ALGO=tree: ...).
  std::string_view first = message.substr(0, message.find_first_of(" :"));
  first = first.substr(0, first.find('='));
  const ScenarioKey* k = find_scenario_key(first);
  if (k == nullptr || (k->name != first && k->flag != first)) return std::string(message);
  const auto at = lines.find(k->name);
  if (at == lines.end()) return std::string(message);
  return fmt::format("{}:{}: {}", file, at->second, message);
}

namespace {

// typed: `v` as result.json types it: a choice of auto|true|false resolved to true or false is a
// JSON boolean, a decimal key (gpu_spread_pct) a number; the Scenario keeps them as text.
json typed(const ScenarioKey& k, json v) {
  if (!v.is_string()) return v;
  const std::string t = v.get<std::string>();
  if (k.kind == KeyKind::kChoice && (t == "true" || t == "false") &&
      std::find(k.choices.begin(), k.choices.end(), "auto") != k.choices.end())
    return t == "true";
  if (k.decimal) return std::stod(t);  // canonical: decimal digits, {:g}
  return v;
}

}  // namespace

json scenario_json(const Scenario& s) {
  json j = json::object();
  for (const ScenarioKey& k : scenario_table()) j[std::string(k.name)] = typed(k, key_value(s, k));
  return j;
}

}  // namespace gradsync
