// scenario_args.cpp: the scenario flags, the scenario they make, the header lines.
#include "apps/scenario_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/ranges.h>

#include "apps/cli.hpp"
#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/nccl_release.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"
#include "models/gpu_spread.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "reports/advice.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "topologies/gpu_spec.hpp"

extern char** environ;

namespace gradsync::apps {

using sim::Scenario;

std::string nccl_release_text(const Scenario& s) {
  const NcclRelease r = resolve_nccl_release(s.nccl_version, s.pytorch_version);
  // "PyTorch 2.11's" where it is the release that PyTorch bundles (auto resolves to it).
  const NcclRelease bundled = resolve_nccl_release("auto", s.pytorch_version);
  const std::string whose =
      r.major == bundled.major && r.minor == bundled.minor ? fmt::format("PyTorch {}'s, ", s.pytorch_version) : "";
  return fmt::format("NCCL {} ({}tuning model {})", r.text(), whose, sim::nccl_model_version(r));
}

std::string nccl_knobs_text(const Scenario& s) {
  std::vector<std::string> set;
  for (const ScenarioKey& k : scenario_table()) {
    if (!k.nccl) continue;
    const nlohmann::ordered_json v = key_value(s, k);
    // As NCCL's environment takes it: a switch is 1.
    if (v.is_null() || v == false) continue;
    std::string text = fmt::format("{}={}", k.name, v.is_boolean() ? "1" : value_text(v));
    // A channel bound above the release's MAXCHANNELS is capped by NCCL (sim/nccl_options.cpp).
    const int cap = nccl_max_channels(resolve_nccl_release(s.nccl_version, s.pytorch_version));
    if (k.adjust != nullptr || k.name == std::string_view("NCCL_MAX_CTAS"))
      if (v.is_number_integer() && v.get<std::int64_t>() > cap)
        text += fmt::format(" (NCCL {} caps it at MAXCHANNELS {})",
                            resolve_nccl_release(s.nccl_version, s.pytorch_version).text(), cap);
    set.push_back(std::move(text));
  }
  return set.empty() ? ", NCCL's defaults" : fmt::format(", {}", fmt::join(set, " "));
}

void add_scenario_options(CLI::App* cmd, ScenarioArgs& a, const std::vector<std::string>& only) {
  const auto wanted = [&](std::string_view name) {
    return only.empty() || std::find(only.begin(), only.end(), std::string(name)) != only.end();
  };
  if (only.empty())
    cmd->add_option("scenario", a.file,
                    "YAML scenario file holding the scenario's keys, those of the flags below that describe the run "
                    "(not --strategy, --out and the other output options); flags win");
  for (const ScenarioKey& k : scenario_table()) {
    const std::string name(k.name);
    if (!wanted(name) || k.flag.empty()) continue;
    if (k.kind == KeyKind::kSwitch) {
      a.given[name] = cmd->add_flag(std::string(k.flag), a.switches[name], key_help(k));
    } else {
      a.given[name] =
          cmd->add_option(std::string(k.flag), a.text[name], key_help(k))->type_name(std::string(k.value_name));
    }
  }
  if (!wanted("nccl")) return;
  cmd->add_option("--nccl", a.nccl,
                  fmt::format("NAME=VALUE: one of NCCL's knobs under its own name, repeatable: {} (README: NCCL "
                              "knobs). NCCL_* variables of the environment are read only with --nccl-from-env",
                              nccl_knob_names()))
      ->type_name("NAME=VALUE")
      ->take_all();
  cmd->add_flag("--nccl-from-env", a.nccl_from_env,
                "Read NCCL's knobs from this shell's NCCL_* variables (then the file and the flags win)");
}

std::vector<std::string> nccl_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view v(*e);
    if (v.rfind("NCCL_", 0) == 0) out.emplace_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// nccl_text_value: a knob's value as NCCL's environment gives it. NCCL reads its switches as
// integers (NCCL_P2P_DISABLE with strtol in paths.cc, the others through NCCL_PARAM's strtoll):
// "true" is 0 there, the knob left off, so it is refused rather than read as gradsync's files read
// it.
nlohmann::ordered_json nccl_text_value(const ScenarioKey& k, std::string_view text) {
  // The levels are compared as written (paths.cc ncclGetLevel: strcmp, an integer only where the
  // first character is a digit): with a blank around the name NCCL cannot interpret it, warns and
  // keeps its default. (strtoll skips leading blanks, so the integer knobs read " 1" as 1.)
  if ((k.name == "NCCL_P2P_LEVEL" || k.name == "NCCL_NET_GDR_LEVEL") && trim_blanks(text) != text &&
      !trim_blanks(text).empty()) {
    throw ConfigError(
        fmt::format("blanks around \"{}\": NCCL compares the level as written (paths.cc "
                    "ncclGetLevel), cannot interpret it and keeps its default; write {}",
                    trim_blanks(text), trim_blanks(text)));
  }
  if (k.kind == KeyKind::kSwitch || k.kind == KeyKind::kCount) {
    // NCCL_PARAM reads integers with strtoll(str, NULL, 0) (src/misc/param.cc): 0x16 is hex and a
    // leading 0 octal (010 is 8), and it stops at the first character it cannot read ("08" is 0).
    // The value is taken as NCCL reads it; text NCCL reads only a prefix of is refused, saying so.
    const std::string t(trim_blanks(text));
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 0);
    if (!t.empty() && end != t.c_str() && errno == 0) {
      if (*end != '\0') {
        throw ConfigError(fmt::format(
            "NCCL reads \"{}\" as {} (strtoll with base 0 stops at \"{}\"; a leading 0 is octal, 0x hex); write {} "
            "if that is meant",
            t, v, end, v));
      }
      return parse_key_value(k, std::to_string(v));
    }
  }
  if (k.kind == KeyKind::kSwitch) {
    const std::string t = ascii_lower(text);
    if (t == "true" || t == "yes" || t == "on") {
      throw ConfigError(
          fmt::format("expected 0 or 1: NCCL reads the variable as an integer, so \"{}\" is 0 "
                      "there and leaves the knob off; write 1 to set it",
                      text));
    }
  }
  return parse_key_value(k, text);
}

}  // namespace

Scenario scenario_of(const ScenarioArgs& a, bool model_defaults) {
  Scenario s;
  if (a.nccl_from_env) {
    for (const ScenarioKey& k : scenario_table()) {
      for (std::string_view name : nccl_names(k)) {
        const char* v = std::getenv(std::string(name).c_str());
        if (v == nullptr || *v == '\0') continue;
        nlohmann::ordered_json value;
        try {
          value = nccl_text_value(k, v);
        } catch (const ConfigError& e) {
          throw UsageError(fmt::format("{}=\"{}\" (the environment, --nccl-from-env): {}", name, v, e.what()));
        }
        set_key(s, k, value);
      }
    }
    // NCCL_* variables gradsync does not model (NCCL_DEBUG, NCCL_BUFFSIZE, ...) are named, as
    // without the flag: the run does not reflect them.
    std::vector<std::string> unread;
    for (const std::string& e : nccl_environment()) {
      const std::string name = e.substr(0, e.find('='));
      bool known = false;
      for (const ScenarioKey& k : scenario_table())
        for (std::string_view n : nccl_names(k)) known = known || n == name;
      if (!known) unread.push_back(e);
    }
    if (!unread.empty() && !a.quiet) {
      std::cerr << fmt::format("note: {} {} set in this shell and not modelled by gradsync; the run ignores {}\n",
                               fmt::join(unread, " "), unread.size() == 1 ? "is" : "are",
                               unread.size() == 1 ? "it" : "them");
    }
  } else if (!a.quiet) {
    const std::vector<std::string> env = nccl_environment();
    if (!env.empty()) {
      std::cerr << fmt::format(
          "note: {} {} set in this shell and not applied: gradsync reads NCCL's knobs from flags and files "
          "(--nccl NAME=VALUE), or from the environment with --nccl-from-env\n",
          fmt::join(env, " "), env.size() == 1 ? "is" : "are");
    }
  }
  // warmup unset (neither a flag nor the file gives it): 3, or iterations - 1 when fewer
  // iterations leave no steady one after 3 (--iterations 2 alone runs, as README says).
  constexpr int kWarmupUnset = -1;
  s.warmup = kWarmupUnset;
  if (!a.file.empty()) {
    // A zoo model's name where the scenario file goes (gradsync compare resnet50) is a model meant
    // for --model: say so beside the missing file.
    const auto zoo = zoo_model_names();
    if (!std::filesystem::exists(a.file) && std::find(zoo.begin(), zoo.end(), a.file) != zoo.end())
      throw UsageError(fmt::format("{}: no such scenario file; the zoo model is --model {}", a.file, a.file));
    s = sim::read_scenario_file(a.file, s);
  }
  for (const ScenarioKey& k : scenario_table()) {
    const std::string name(k.name);
    const auto o = a.given.find(name);
    if (o == a.given.end() || o->second->count() == 0) continue;
    if (k.kind == KeyKind::kSwitch) {
      set_key(s, k, a.switches.at(name));
      continue;
    }
    const std::string& text = a.text.at(name);
    try {
      set_key(s, k, parse_key_value(k, text));
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("{} \"{}\": {}", k.flag, text, e.what()));
    }
  }
  std::set<std::string> named;  // knobs --nccl set, each at most once
  for (const std::string& item : a.nccl) {
    const auto eq = item.find('=');
    const ScenarioKey* k = eq == std::string::npos ? nullptr : find_scenario_key(item.substr(0, eq));
    if (eq == std::string::npos || eq == 0) {
      throw UsageError(fmt::format("--nccl \"{}\": expected NAME=VALUE, as NCCL_P2P_DISABLE=1", item));
    }
    if (k == nullptr || !k->nccl) {
      throw UsageError(fmt::format("--nccl \"{}\": unknown knob \"{}\"; gradsync models {}", item, item.substr(0, eq),
                                   nccl_knob_names()));
    }
    const std::vector<std::string_view> names = nccl_names(*k);
    if (std::find(names.begin(), names.end(), item.substr(0, eq)) == names.end()) {
      throw UsageError(
          fmt::format("--nccl \"{}\": \"{}\" is not NCCL's name; NCCL reads {} (upper case, as the "
                      "environment variable)",
                      item, item.substr(0, eq), nccl_name_as_given(*k, item.substr(0, eq))));
    }
    if (!named.insert(std::string(k->name)).second) {
      throw UsageError(names.size() > 1 ? fmt::format("--nccl {}: given twice (or under both its names, {}); "
                                                      "give each knob once",
                                                      item.substr(0, eq), fmt::join(names, " and "))
                                        : fmt::format("--nccl {}: given twice; give each knob once", k->name));
    }
    if (const auto o = a.given.find(std::string(k->name)); o != a.given.end() && o->second->count() > 0) {
      throw UsageError(fmt::format("--nccl {} and {} both set {}; give one of them", item, k->flag, k->name));
    }
    try {
      set_key(s, *k, nccl_text_value(*k, item.substr(eq + 1)));
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("--nccl {}=\"{}\": {}", item.substr(0, eq), item.substr(eq + 1), e.what()));
    }
  }
  if (s.warmup == kWarmupUnset) s.warmup = std::clamp(s.iterations - 1, 0, Scenario{}.warmup);
  if (model_defaults) apply_model_defaults(s, a);
  return s;
}

Scenario resolve_args(const ScenarioArgs& a, const Scenario& requested, bool ddp) {
  return resolve_located(a, [&] { return sim::resolve_scenario(requested, ddp); });
}

void finish_run(const reports::Report& rep, OutputFolder& out, bool explain) {
  for (const std::string& p : out.removed())
    std::cerr << fmt::format("note: removed {}, left by a run into {} that was killed\n", p, out.final_path());
  const std::vector<std::string> written = reports::write_outputs(out.path(), rep);
  out.commit();
  if (!out.left_behind().empty()) std::cerr << "note: " << out.left_behind() << '\n';
  reports::print_summary(rep, std::cout);
  reports::print_confidence(rep, std::cout);
  if (rep.advice) reports::print_advice(*rep.advice, std::cout);
  if (explain) {
    std::cout << "#\n";
    reports::print_explain(rep, std::cout);
  }
  if (!rep.validation.empty()) {
    std::cout << "#\n";
    reports::print_validation(rep.validation, std::cout);
  }
  std::vector<std::string> names;
  for (const std::string& p : written) names.push_back(std::filesystem::path(p).filename().string());
  // Long runs write long traces and event lists: say how to make them smaller.
  constexpr std::uintmax_t kLarge = std::uintmax_t{100} << 20;
  for (const std::string& name : names) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(std::filesystem::path(out.final_path()) / name, ec);
    if (ec || size < kLarge) continue;
    // Up to 16 GPUs every rank is traced and --trace-ranks only adds ranks: compression or fewer
    // iterations make the files smaller, whatever the GPU count.
    const std::string how =
        name.ends_with(".gz")
            ? "fewer --iterations make it smaller"
            : fmt::format("--trace-format json.gz (compressed: {}) or fewer --iterations make it smaller",
                          name.starts_with("events") ? "events.csv.gz" : "trace-<strategy>.json.gz");
    std::cerr << fmt::format("note: {}/{} is {:.0f} MiB; {}\n", out.final_path(), name,
                             static_cast<double>(size) / (1 << 20), how);
  }
  std::cout << fmt::format("# wrote {} files to {}/: {} (open the trace in ui.perfetto.dev)\n", written.size(),
                           out.final_path(), fmt::join(names, ", "));
  // A run that fits under no strategy is an impossible request (exit 1), though its outputs, and
  // the advice on what would make it fit, are written first.
  std::vector<std::string> over;
  bool fits = false;
  for (const StrategyResult& r : rep.strategies) {
    if (!r.skipped.empty()) continue;
    const std::string o = reports::oom_text(r);
    if (o.empty())
      fits = true;
    else
      over.push_back(o);
  }
  if (!fits && !over.empty()) {
    // The advice names what would make it fit only when one of its changes does.
    const bool advice_fits = rep.advice && !advised(*rep.advice).empty();
    throw RuntimeError(fmt::format("out of memory: {}{}", fmt::join(over, "; "),
                                   advice_fits  ? " (the advice above names what would make it fit)"
                                   : rep.advice ? " (none of the changes the advice simulated makes it fit)"
                                                : " (gradsync advise names what would make it fit)"));
  }
}

// ddp_only_settings: the DistributedDataParallel settings a scenario gives (not at their
// defaults): the keys that reach DDP only (DataParallel has no buckets, comm hooks,
// unused-parameter search, static graph or buffer broadcast). Each as its flag, or, with `args`,
// as the scenario file's key where the file set it (bucket_cap_mb 5, its line in `from_file` for
// the first such, after the others: comm_hook fp16 (d1.yaml:4)); with `as_keys`, as a key (a flag
// or a file gives it alike: bucket_cap_mb 50).
std::vector<std::string> ddp_only_settings(const Scenario& s, bool as_keys, const ScenarioArgs* args,
                                           std::string* from_file) {
  std::vector<std::string> given;
  for (const ScenarioKey& k : scenario_table()) {
    if (k.reach != KeyReach::kDdp) continue;
    const auto v = key_value(s, k);
    if (v == key_value(Scenario{}, k)) continue;
    const bool flag_alone = k.kind == KeyKind::kSwitch && v == true;
    const int line = args ? file_line_of(*args, k.name).value_or(0) : 0;
    if (as_keys || line > 0) {
      given.push_back(flag_alone ? std::string(k.name) : fmt::format("{} {}", k.name, value_text(v)));
      if (line > 0 && !as_keys) {
        if (from_file && from_file->empty()) *from_file = fmt::format("{}:{}", args->file, line);
        if (given.size() > 1) given.back() += fmt::format(" ({}:{})", args->file, line);
      }
    } else {
      given.push_back(flag_alone ? std::string(k.flag) : fmt::format("{}={}", k.flag, value_text(v)));
    }
  }
  return given;
}

}  // namespace gradsync::apps
