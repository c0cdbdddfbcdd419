// scenario_grid.cpp: --vary values and ranges, and the sweep's grid.
#include "core/scenario_grid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

namespace {

// kMaxGridPoints: points one sweep may have (every one is a simulation).
constexpr std::size_t kMaxGridPoints = 100000;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(sep, start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// list_valued: NCCL's knobs whose one value is itself a comma list (NCCL_ALGO=ring,tree). In --vary
// the comma separates values, so their names join with '+' there (NCCL_ALGO=ring+tree,nvls).
bool list_valued(const ScenarioKey* k) {
  return k != nullptr && (k->name == std::string_view("NCCL_ALGO") || k->name == std::string_view("NCCL_PROTO"));
}

// items: the list's values. A comm hook's options hold commas ("powersgd:rank=4,start_iter=10"):
// an item "name=value" without a colon continues the item before it. A list-valued NCCL knob's
// '+' is its own comma.
std::vector<std::string> items_of(const ScenarioKey* k, std::string_view list) {
  std::vector<std::string> parts = split(list, ',');
  if (list_valued(k)) {
    for (std::string& p : parts) std::replace(p.begin(), p.end(), '+', ',');
    return parts;
  }
  if (k == nullptr || k->kind != KeyKind::kSpec) return parts;
  std::vector<std::string> out;
  for (std::string& p : parts) {
    const bool option = p.find('=') != std::string::npos && p.find(':') == std::string::npos;
    if (option && !out.empty()) {
      out.back() += "," + p;
    } else {
      out.push_back(std::move(p));
    }
  }
  return out;
}

// Range: "A..B", "A:B:xF", "A:B:S" or "A:B:+S" split into its parts.
struct Range {
  std::string from, to, step;
  bool multiply = false;
};

std::optional<Range> range_of(const std::string& item) {
  if (const auto dots = item.find(".."); dots != std::string::npos) {
    return Range{item.substr(0, dots), item.substr(dots + 2), "1", false};
  }
  const std::vector<std::string> parts = split(item, ':');
  if (parts.size() != 3) return std::nullopt;
  Range r{parts[0], parts[1], parts[2], false};
  if (!r.step.empty() && (r.step[0] == 'x' || r.step[0] == '*')) {
    r.multiply = true;
    r.step.erase(0, 1);
  } else if (!r.step.empty() && r.step[0] == '+') {
    r.step.erase(0, 1);
  }
  return r;
}

// number_of: a key's value as a number (a decimal key's canonical text, "1.5", read back).
double number_of(const json& v) {
  if (v.is_string()) return std::strtod(v.get<std::string>().c_str(), nullptr);
  return v.is_number_integer() ? static_cast<double>(v.get<std::int64_t>()) : v.get<double>();
}

// expand_range: the values of a range of key k, each checked as the key's flag checks it.
std::vector<json> expand_range(const ScenarioKey& k, const Range& r, const std::string& item) {
  const bool whole = k.kind == KeyKind::kCount;
  // Each end as the key's flag takes it, named as an end of the range.
  const auto end_value = [&](const std::string& text, const char* which) {
    try {
      return parse_key_value(k, text);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("range \"{}\": its {} \"{}\": {}", item, which, text, e.what()));
    }
  };
  const json from = end_value(r.from, "start");
  const json to = end_value(r.to, "end");
  double step = 0;
  {
    auto [end, ec] = std::from_chars(r.step.data(), r.step.data() + r.step.size(), step);
    if (!r.multiply && !whole && (ec != std::errc() || end != r.step.data() + r.step.size())) {
      try {  // a size step takes a unit as the key's values do: 1MiB:4MiB:+512KiB
        step = number_of(parse_key_value(k, r.step));
        end = r.step.data() + r.step.size();
        ec = std::errc();
      } catch (const ConfigError&) {
      }
    }
    const bool ok = !r.step.empty() && ec == std::errc() && end == r.step.data() + r.step.size() && std::isfinite(step);
    if (!ok || (r.multiply ? !(step > 1) : !(step > 0)) || (whole && step != std::floor(step))) {
      throw ConfigError(fmt::format("range \"{}\": step \"{}\": expected {}", item, r.step,
                                    r.multiply ? (whole ? "xF with a whole factor F >= 2" : "xF with a factor F > 1")
                                               : (whole ? "a whole step >= 1" : "a step > 0")));
    }
  }
  const double a = number_of(from), b = number_of(to);
  if (a > b) throw ConfigError(fmt::format("range \"{}\" is empty: {} is above {}", item, r.from, r.to));
  if (r.multiply && !(a > 0)) throw ConfigError(fmt::format("range \"{}\": a range xF must start above 0", item));
  std::vector<json> out;
  // Sizes in MiB are doubles: a bound reached within rounding counts (1:2:+0.1 ends at 2).
  const double last = whole ? b : b * (1 + 1e-12);
  // Counted before any value is made: a step too fine to write (1e-20) is a range of too many values,
  // not a value the key refuses.
  const double count =
      r.multiply ? std::floor(std::log(last / a) / std::log(step)) + 1 : std::floor((last - a) / step) + 1;
  if (!(count <= static_cast<double>(kMaxVaryValues)))
    throw ConfigError(fmt::format("range \"{}\" has more than {} values", item, kMaxVaryValues));
  for (double v = a; v <= last; v = r.multiply ? v * step : v + step) {
    if (out.size() >= kMaxVaryValues)
      throw ConfigError(fmt::format("range \"{}\" has more than {} values", item, kMaxVaryValues));
    // A decimal key's value is its canonical text: 0.1 + 0.2 is written 0.3, as its flag writes it.
    out.push_back(whole       ? json(static_cast<std::int64_t>(v))
                  : k.decimal ? parse_key_value(k, fmt::format("{:.12g}", v))
                              : json(v));
  }
  return out;
}

}  // namespace

std::string vary_key_names() { return "strategy, " + scenario_key_names(); }

Vary parse_vary(std::string_view text) {
  const auto eq = text.find('=');
  const std::string shown(text);
  if (eq != std::string_view::npos && eq > 0 && eq + 1 == text.size()) {
    // KEY= with nothing after it: the values are missing, whatever the key.
    throw UsageError(
        fmt::format("--vary \"{}\": no values after \"=\"; expected {}V1,V2,... or a range (1..8, "
                    "1:64:x2)",
                    shown, text));
  }
  if (eq == std::string_view::npos || eq == 0) {
    throw UsageError(fmt::format("--vary \"{}\": expected KEY=V1,V2,... or a range (1..8, 1:64:x2); keys: {}", shown,
                                 vary_key_names()));
  }
  const std::string_view name = text.substr(0, eq);
  Vary v;
  const ScenarioKey* k = nullptr;
  if (name == "strategy") {
    v.key = "strategy";
  } else {
    k = find_scenario_key(name);
    if (k == nullptr || std::string_view(name).rfind("--", 0) == 0) {
      throw UsageError(fmt::format("--vary \"{}\": unknown key \"{}\"{}; expected one of {}", shown, name,
                                   nearest_key_hint(name, true), vary_key_names()));
    }
    // NCCL's knobs go by NCCL's own names, as in scenario files and --nccl (NCCL_ALGO, not
    // nccl_algo), or by their flag's (algo for --algo).
    std::string flag = k->flag.size() > 2 ? std::string(k->flag.substr(2)) : std::string();  // "algo"
    std::string flag_underscored = flag;
    std::replace(flag_underscored.begin(), flag_underscored.end(), '-', '_');
    const std::vector<std::string_view> names = nccl_names(*k);
    if (k->nccl && std::find(names.begin(), names.end(), name) == names.end() &&
        (flag.empty() || (name != flag && name != flag_underscored))) {
      throw UsageError(
          fmt::format("--vary \"{}\": \"{}\" is not NCCL's name; NCCL reads {} (upper case, as the "
                      "environment variable)",
                      shown, name, nccl_name_as_given(*k, name)));
    }
    v.key = std::string(k->name);
  }
  std::set<std::string> seen;
  auto add = [&](json value, const std::string& item) {
    // An unset value (calibration=none) is labelled by the word that unset it.
    const std::string label = value.is_string() && value.get<std::string>().empty() ? "none" : value_text(value);
    if (!seen.insert(json_text(value)).second) {
      throw UsageError(fmt::format("--vary \"{}\": \"{}\" given twice (as {})", shown, item, label));
    }
    if (v.values.size() >= kMaxVaryValues)
      throw UsageError(fmt::format("--vary \"{}\": more than {} values", shown, kMaxVaryValues));
    v.values.push_back(std::move(value));
    v.labels.push_back(label);
  };
  for (const std::string& item : items_of(k, text.substr(eq + 1))) {
    if (item.empty()) throw UsageError(fmt::format("--vary \"{}\": an empty value", shown));
    // Blanks at a value's ends are refused, as every flag's and scenario file's value's are (a
    // blank after the comma or the =: some keys would read the value and others not).
    if (trim_blanks(item).size() != item.size()) {
      throw UsageError(fmt::format(
          "--vary \"{}\": value \"{}\" has blanks at its ends; expected it without them (no blank after = or ,)", shown,
          item));
    }
    if (k == nullptr) {
      // Any case, as --strategy takes it ("DDP"); the point keeps PyTorch's lower-case name.
      const std::string word = ascii_lower(item);
      const auto st = parse_strategy(word);
      if (!st) throw UsageError(fmt::format("--vary \"{}\": \"{}\": expected dp or ddp", shown, item));
      add(word, word);
      continue;
    }
    try {
      const bool numeric = k->kind == KeyKind::kCount || k->kind == KeyKind::kSizeMiB || k->decimal;
      const auto range = numeric ? range_of(item) : std::nullopt;
      if (range &&
          (range->multiply || k->kind == KeyKind::kCount || k->decimal || item.find("..") == std::string::npos)) {
        for (json& value : expand_range(*k, *range, item)) {
          (void)parse_key_value(*k, value_text(value));  // each value within the key's bounds
          add(std::move(value), item);
        }
      } else if (range) {
        throw ConfigError(fmt::format("range \"{}\": a size takes A:B:xF or A:B:S, not A..B", item));
      } else {
        add(parse_key_value(*k, item), item);
      }
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      // A:B without a step reads as one value: say what a range looks like.
      const std::string hint =
          list_valued(k) ? fmt::format(
                               " (in --vary a comma separates values: join one value's names with +, as "
                               "{}=ring+tree,nvls)",
                               k->name)
          : split(item, ':').size() == 2 && (k->kind == KeyKind::kCount || k->kind == KeyKind::kSizeMiB || k->decimal)
              ? fmt::format(" (a range takes a step: {}:x2 doubles, {}:+1 counts)", item, item)
              : "";
      throw UsageError(what.rfind("range \"", 0) == 0
                           ? fmt::format("--vary \"{}\": {}", shown, what)
                           : fmt::format("--vary \"{}\": \"{}\": {}{}", shown, item, what, hint));
    }
  }
  return v;
}

std::vector<GridPoint> expand_grid(const Scenario& base, std::vector<Vary> vary) {
  std::set<std::string> keys;
  std::size_t total = 1;
  for (const Vary& v : vary) {
    if (!keys.insert(v.key).second) {
      throw UsageError(fmt::format("--vary {} given twice; list every value in one --vary", v.key));
    }
    total *= v.values.size();
    if (total > kMaxGridPoints) {
      throw UsageError(
          fmt::format("sweep: the grid has more than {} points; vary fewer keys or values", kMaxGridPoints));
    }
  }
  if (!keys.count("strategy")) vary.push_back({"strategy", {"dp", "ddp"}, {"dp", "ddp"}});
  std::vector<GridPoint> points;
  std::vector<std::size_t> at(vary.size(), 0);
  for (;;) {
    GridPoint p;
    p.index = static_cast<int>(points.size());
    p.scenario = base;
    std::string label;
    for (std::size_t i = 0; i < vary.size(); ++i) {
      const Vary& v = vary[i];
      const std::string& text = v.labels[at[i]];
      if (v.key == "strategy") {
        p.strategy = *parse_strategy(text);
        label += (label.empty() ? "" : " ") + text;
      } else {
        set_key(p.scenario, scenario_key(v.key), v.values[at[i]]);
        label += (label.empty() ? "" : " ") + v.key + "=" + text;
      }
    }
    p.label = label;
    points.push_back(std::move(p));
    std::size_t i = vary.size();
    while (i > 0 && ++at[i - 1] == vary[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  return points;
}

}  // namespace gradsync
