// cli.cpp: the gradsync command line: global options, dispatch and the mapping of errors to exit
// codes (0 success, 1 runtime error, 2 usage error).
#include "apps/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "core/version.hpp"

namespace gradsync::apps {
namespace {

// command_path names a (sub)command as the user typed it: "gradsync models show".
std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

// launched_rank: this process's rank when mpirun (Open MPI, PMI, PMIx) or srun started it, or -1.
// Only which rank prints a command-line error depends on it.
int launched_rank() {
  const auto rank_of = [](const char* v) -> int {
    if (v == nullptr || *v == '\0') return -1;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    return (*end == '\0' && r >= 0 && r < (1L << 30)) ? static_cast<int>(r) : -1;
  };
  for (const char* key : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const int r = rank_of(std::getenv(key)); r >= 0) return r;
  if (std::getenv("SLURM_STEP_ID") != nullptr) return rank_of(std::getenv("SLURM_PROCID"));
  return -1;
}

// deepest_parsed returns the innermost subcommand the user selected (the app itself if none).
const CLI::App* deepest_parsed(const CLI::App* app) {
  for (const CLI::App* sub : app->get_subcommands()) return deepest_parsed(sub);
  return app;
}

// nearest_option: "; did you mean --x?" for a flag the command does not have, naming the option it
// most likely meant: one that the flag begins (--batch for --batch-per-gpu, --bucket-cap for
// --bucket-cap-mb), else one within a third of its length in edits (--bucket-cap-md); "" if none.
// --gpu is a GPU model, which the topology gives: said so where --topology and --gpus exist.
std::string nearest_option(const CLI::App& app, std::string_view flag) {
  const std::string_view bare = flag.substr(0, flag.find('='));
  if (bare.size() < 3 || bare.substr(0, 2) != "--") return "";
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  const auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  if (bare == "--gpu" && has("--topology") && has("--gpus"))
    return "; the GPU model is the topology's (--topology NAME or FILE; topo generate ... --gpu G writes one), and "
           "--gpus N how many of its GPUs take part";
  std::string best;
  for (const std::string& n : names)
    if (n.size() > bare.size() && n.compare(0, bare.size(), bare) == 0 && n[bare.size()] == '-' &&
        (best.empty() || n.size() < best.size()))
      best = n;
  if (best.empty()) {
    std::size_t best_d = std::max<std::size_t>(1, (bare.size() - 2) / 3) + 1;
    for (const std::string& n : names)
      if (const std::size_t d = edit_distance(bare, n); d < best_d) best_d = d, best = n;
  }
  return best.empty() ? "" : fmt::format("; did you mean {}?", best);
}

// usage_message rewrites CLI11's parse errors into gradsync's one-line form.
std::string usage_message(const CLI::ParseError& e, const CLI::App& app, std::string& hint_for) {
  const CLI::App* where = deepest_parsed(&app);
  hint_for = command_path(where);
  const auto unknown_option = [&](const std::string& flag) {
    return fmt::format("unknown option '{}' for '{}'{}", flag, hint_for, nearest_option(*where, flag));
  };
  // CLI11 checks required options before unclaimed ones: `simulate --bucket-cap=25` said only that
  // --strategy is required. A flag the command does not have is the first thing to fix: said first.
  const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
                        std::string_view(e.what()).find("subcommand") == std::string_view::npos;
  if (required) {
    for (const std::string& arg : where->remaining())
      if (arg.size() > 1 && arg[0] == '-') return unknown_option(arg);
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // The first argument nobody claimed tells what went wrong.
    std::vector<std::string> extras;
    for (const CLI::App* a = where; a != nullptr && extras.empty(); a = a->get_parent()) extras = a->remaining();
    if (!extras.empty()) {
      const std::string& bad = extras.front();
      if (!bad.empty() && bad[0] == '-') return unknown_option(bad);
      if (where == &app) return fmt::format("unknown command '{}'", bad);
      return fmt::format("unexpected argument '{}' for '{}'", bad, hint_for);
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
      std::string_view(e.what()).find("subcommand") != std::string_view::npos) {
    std::vector<std::string> subs;
    for (const CLI::App* sub : where->get_subcommands([](const CLI::App*) { return true; }))
      subs.push_back(sub->get_name());
    // A word CLI11 left unclaimed is a command that does not exist (gradsync list foo).
    std::vector<std::string> extras;
    for (const CLI::App* a = where; a != nullptr && extras.empty(); a = a->get_parent()) extras = a->remaining();
    if (!extras.empty() && !extras.front().empty() && extras.front()[0] != '-')
      return fmt::format("unknown command '{}' for '{}'; expected one of {}", extras.front(), hint_for,
                         fmt::join(subs, ", "));
    return fmt::format("'{}' needs a command: {}", hint_for, fmt::join(subs, ", "));
  }
  std::string text = e.what();
  // A flag given twice: CLI11 says "--iterations: At Most 1 required but received 2".
  if (const auto at = text.find(": At Most 1 required but received "); at != std::string::npos)
    return fmt::format("{} given {} times; give it once", text.substr(0, at),
                       text.substr(at + std::string_view(": At Most 1 required but received ").size()));
  // A value CLI11 cannot read: "Could not convert: --compile = maybe". A switch takes true or
  // false; another option says what kind of value it takes (--oversubscription = abc).
  if (const std::string_view lead = "Could not convert: "; text.rfind(lead, 0) == 0) {
    const std::string rest = text.substr(lead.size());
    if (const auto eq = rest.find(" = "); eq != std::string::npos) {
      const std::string name = rest.substr(0, eq), value = rest.substr(eq + 3);
      const CLI::Option* o = where->get_option_no_throw(name);
      if (o == nullptr || o->get_expected_max() == 0)
        return fmt::format("{}: value \"{}\" must be true or false (or the flag alone, for true)", name, value);
      const std::string type = o->get_type_name();
      return fmt::format("{}: value \"{}\" must be {}", name, value,
                         type.rfind("FLOAT", 0) == 0 ? "a number"
                         : type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0
                             ? "a whole number in decimal digits, within the option's range"
                             : fmt::format("a value of type {}", type));
    }
  }
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// A switch takes true or false, as scenario files write it, and the words CLI11 reads for them
// (1/0, yes/no, on/off); CLI11 alone also takes any integer ("--compile=2" as true, "=-3" as
// false), which hides a typo.
const CLI::Validator kSwitchValue(
    [](std::string& text) -> std::string {
      std::string t = text;
      for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const char* word : {"true", "false", "1", "0", "yes", "no", "on", "off"})
        if (t == word) return "";
      return fmt::format("value \"{}\" must be true or false (or the flag alone, for true)", text);
    },
    "");  // nothing added to --help: the flag's own help says what it switches

// kDecimalInteger: an integer flag's value in decimal digits: CLI11 alone reads "010" as octal 8
// and "0x10" as 16, where a scenario key reads 10 or refuses; a leading zero is refused rather
// than read either way.
const CLI::Validator kDecimalInteger(
    [](std::string& text) -> std::string {
      const std::string_view t = text;
      const std::string_view digits = t.substr(!t.empty() && (t[0] == '+' || t[0] == '-') ? 1 : 0);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
        return fmt::format("value \"{}\" must be a whole number in decimal digits", text);
      if (digits.size() > 1 && digits[0] == '0')
        return fmt::format(
            "value \"{}\" must be a whole number in decimal digits without a leading zero (which "
            "would read as octal)",
            text);
      return "";
    },
    "");

// check_integer_values: every integer option of `app` and its commands reads decimal digits.
void check_integer_values(CLI::App* app) {
  for (CLI::Option* o : app->get_options()) {
    const std::string type = o->get_type_name();
    if (o->get_expected_max() > 0 && (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0))
      o->check(kDecimalInteger);
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) check_integer_values(sub);
}

// check_switch_values: every switch of `app` and its commands checks its value (kSwitchValue)
// and is given at most once, as a flag with a value is ("--compile --compile=false" would
// otherwise take the last silently).
void check_switch_values(CLI::App* app) {
  for (CLI::Option* o : app->get_options())
    if (o->get_expected_max() == 0) {  // a flag: no argument of its own
      o->check(kSwitchValue);
      o->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) check_switch_values(sub);
}

// check_switch_value_after_blank: `--broadcast-buffers false` gives a switch (a flag without a
// value of its own) a value after a blank, which the parser would take for the next positional
// argument (the scenario file) or refuse as unexpected. A usage error naming the '=' form instead.
struct SwitchValueSlip {
  std::string message;
  CLI::App* command = nullptr;  // the subcommand whose help the hint names
};

// named_command: the innermost subcommand the arguments name (the app itself if none), found
// before parsing, for the help hint of an error said before the parse.
CLI::App* named_command(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* at = &app;
  for (const std::string& a : args) {
    if (a.starts_with("-")) continue;
    for (CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; }))
      if (sub->check_name(a)) {
        at = sub;
        break;
      }
  }
  return at;
}

// empty_switch_value: `--static-graph=`, a switch given an empty value, which the parser takes
// for true (an empty value where none is needed); a scenario file's `static_graph: ""` is refused.
std::optional<SwitchValueSlip> empty_switch_value(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* command = named_command(app, args);
  for (const std::string& a : args) {
    if (!a.starts_with("--") || a.size() < 4 || a.back() != '=' || a.find('=') + 1 != a.size()) continue;
    const std::string flag = a.substr(0, a.size() - 1);
    for (const CLI::App* c = command; c != nullptr; c = c->get_parent()) {
      const CLI::Option* o = c->get_option_no_throw(flag);
      if (o != nullptr && o->get_expected_max() == 0)
        return SwitchValueSlip{
            fmt::format("{}: an empty value; a switch takes true or false after '=' (or the flag alone, for true)", a),
            command};
    }
  }
  return std::nullopt;
}

std::optional<SwitchValueSlip> switch_value_after_blank(CLI::App& app, const std::vector<std::string>& args) {
  static const std::vector<std::string> kWords = {"true", "false", "yes", "no", "on", "off", "1", "0"};
  std::vector<CLI::App*> path = {&app};  // the subcommands the arguments name, outermost first
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].starts_with("-")) {
      CLI::App* named = nullptr;
      for (CLI::App* sub : path.back()->get_subcommands([](CLI::App*) { return true; }))
        if (sub->check_name(args[i])) named = sub;
      if (named != nullptr) {
        path.push_back(named);
        continue;
      }
    }
    if (i == 0 || std::find(kWords.begin(), kWords.end(), ascii_lower(args[i])) == kWords.end()) continue;
    const std::string& flag = args[i - 1];
    if (!flag.starts_with("-") || flag.find('=') != std::string::npos) continue;
    for (CLI::App* a : path) {
      const CLI::Option* o = a->get_option_no_throw(flag);
      if (o != nullptr && o->get_expected_max() == 0)
        return SwitchValueSlip{fmt::format("{} {}: a switch takes its value after '=' ({}={}); alone it is true", flag,
                                           args[i], flag, args[i]),
                               path.back()};
    }
  }
  return std::nullopt;
}

}  // namespace

const CLI::Validator kPositiveInteger(
    [](std::string& text) -> std::string {
      long long v = 0;
      std::size_t used = 0;
      try {
        v = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || v < 1) return fmt::format("value \"{}\" must be an integer >= 1", text);
      return "";
    },
    "INT>=1");

const CLI::Validator kNonEmptyPath(
    [](std::string& text) -> std::string {
      return text.empty() ? "value \"\" is empty; expected a file path (leave the flag out for standard output)" : "";
    },
    "");

const CLI::Validator kNonEmptyFile(
    [](std::string& text) -> std::string {
      return text.empty() ? "value \"\" is empty; expected a file path (leave the flag out to write none)" : "";
    },
    "");

const CLI::Validator kAnyCase(
    [](std::string& text) -> std::string {
      text = ascii_lower(text);
      return "";
    },
    "");

CLI::Validator finite_in(std::string_view what, double lo, double hi) {
  return CLI::Validator(
      [what = std::string(what), lo, hi](std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < lo ||
            v > hi)
          return fmt::format("value \"{}\" must be a finite number of {} from {:g} to {:g}", text, what, lo, hi);
        return "";
      },
      "");
}

CLI::Validator key_range(std::string_view key) {
  const ScenarioKey& k = scenario_key(key);
  const std::int64_t lo = k.min, hi = k.max;
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
          return fmt::format("value \"{}\" must be an integer from {} to {}", text, lo, hi);
        return "";
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

const CLI::Validator kPositiveSeconds(
    [](std::string& text) -> std::string {
      double v = 0;
      std::size_t used = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || !(v > 0) || !std::isfinite(v))
        return fmt::format("value \"{}\" must be a number of seconds > 0 (600, 0.5)", text);
      return "";
    },
    "SECONDS>0");

Model load_model_arg(const std::string& name_or_path) {
  const bool path_like = name_or_path.find('/') != std::string::npos || name_or_path.find('.') != std::string::npos;
  try {
    return load_model(name_or_path);
  } catch (const ConfigError& e) {
    if (path_like) throw;
    throw UsageError(e.what());
  }
}

double parse_size_flag(const char* flag, const std::string& text) {
  try {
    const double b = static_cast<double>(parse_size(text));
    if (b > 0) return b;
  } catch (const ConfigError&) {
  }
  throw UsageError(fmt::format("{} \"{}\": expected a size > 0 (8, 64KiB, 1GiB)", flag, text));
}

static double parse_nccl_tests_size(const char* flag, const std::string& text);

double parse_nccl_tests_size_flag(const char* flag, const std::string& text) {
  // Sizes past 1 EiB would overflow the byte counts (2^64) once doubled for a ring's traffic.
  constexpr double kMax = 1152921504606846976.0;  // 2^60
  const double b = parse_nccl_tests_size(flag, text);
  if (b > kMax) throw UsageError(fmt::format("{} \"{}\": at most 1EiB", flag, text));
  return b;
}

static double parse_nccl_tests_size(const char* flag, const std::string& text) {
  // nccl-tests' parsesize (src/common.cu): a whole number with one letter K, M or G, powers of 1024.
  static const std::string kLetters = "KkMmGg";
  const std::size_t digits = text.size() - 1;
  if (text.size() >= 2 && kLetters.find(text.back()) != std::string::npos &&
      std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(digits),
                  [](unsigned char c) { return std::isdigit(c) != 0; }) &&
      digits <= 12) {
    const int power = static_cast<int>(kLetters.find(text.back()) / 2) + 1;
    const double b = std::stod(text.substr(0, digits)) * std::pow(1024.0, power);
    if (b > 0) return b;
  }
  try {
    const double b = static_cast<double>(parse_size(text));
    if (b > 0) return b;
  } catch (const ConfigError&) {
  }
  throw UsageError(fmt::format(
      "{} \"{}\": expected a size > 0: bytes (8), a number with a unit B, kB, MB, GB, TB, PB, KiB, MiB, GiB, "
      "TiB or PiB (64KiB, 1GiB), or nccl-tests' letters K, M, G, powers of 1024, after a whole number (128M){}",
      flag, text, size_unit_case_hint(text)));
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "gradsync: how fast is PyTorch DataParallel versus DistributedDataParallel for this model on "
      "this cluster, where does the time go, and what should I change?",
      "gradsync"};
  app.set_version_flag("--version", std::string("gradsync ") + kVersion);
  app.require_subcommand(0, 1);
  app.footer("Run 'gradsync COMMAND --help' for a command's options.");
  register_list_command(app);
  register_models_command(app);
  register_buckets_command(app);
  register_topo_command(app);
  register_simulate_commands(app);
  register_collectives_command(app);
  register_sweep_command(app);
  register_real_commands(app);
  check_switch_values(&app);
  check_integer_values(&app);

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    // A value with blanks at its ends ("bf16 ", " 2") is a quoting slip, as in a scenario file; some
    // flags would read it and others not, so none does.
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (trim_blanks(a).size() == a.size()) continue;  // as the scenario file's values are checked
      const std::size_t eq = a.find('=');
      const char* expected = "expected it without them (a quote closed in the wrong place?)";
      if (a.starts_with("--") && eq != std::string::npos)
        throw UsageError(
            fmt::format("{}: value \"{}\" has blanks at its ends; {}", a.substr(0, eq), a.substr(eq + 1), expected));
      if (i > 0 && args[i - 1].starts_with("-"))
        throw UsageError(fmt::format("{}: value \"{}\" has blanks at its ends; {}", args[i - 1], a, expected));
      throw UsageError(fmt::format("argument \"{}\" has blanks at its ends; {}", a, expected));
    }
    if (const auto slip = empty_switch_value(app, args)) {
      if (launched_rank() > 0) return kExitSuccess;  // said once, by rank 0, as a parse error
      err << ("error: " + slip->message + "\nRun '" + command_path(slip->command) + " --help' for usage.\n");
      return kExitUsage;
    }
    if (const auto slip = switch_value_after_blank(app, args)) {
      if (launched_rank() > 0) return kExitSuccess;  // said once, by rank 0, as a parse error
      err << ("error: " + slip->message + "\nRun '" + command_path(slip->command) + " --help' for usage.\n");
      return kExitUsage;
    }
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      out << app.help();  // CLI11 descends into the parsed subcommands: "Usage: gradsync models show"
      return kExitSuccess;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return kExitSuccess;
    } catch (const CLI::CallForVersion&) {
      // --version stops the parse where it stands: whatever else was given is refused, not ignored.
      if (args.size() > 1)
        throw UsageError(fmt::format("--version takes nothing else; got '{}'", fmt::join(args, " ")));
      out << app.version() << '\n';
      return kExitSuccess;
    }
    if (app.get_subcommands().empty()) {
      throw UsageError("no command given");
    }
  } catch (const CLI::ParseError& e) {
    // The command line alone decides a parse error, so every rank of an mpirun or srun finds the
    // same one: rank 0 says it and exits 2, the others exit 0 without a word (once, not once per
    // rank). Not 2: a launcher kills the job at the first rank that fails, and a rank that failed
    // first killed rank 0 before it had printed (a CI run of mpirun -np 3 showed no message at
    // all); the job's status is still rank 0's 2. Each message in one write: the ranks share a
    // terminal, and std::cerr writes every << at once, so two ranks' pieces interleaved.
    std::string hint_for;
    const std::string message = usage_message(e, app, hint_for);
    if (launched_rank() > 0) return kExitSuccess;
    err << ("error: " + message + "\nRun '" + hint_for + " --help' for usage.\n");
    return kExitUsage;
  } catch (const UsageError& e) {
    if (e.every_rank() && launched_rank() > 0) return kExitSuccess;
    // Before the parse (a value with blanks at its ends) the command is the one the arguments name.
    const CLI::App* parsed = deepest_parsed(&app);
    err << ("error: " + std::string(e.what()) + "\nRun '" +
            command_path(parsed != &app ? parsed : named_command(app, args)) + " --help' for usage.\n");
    return kExitUsage;
  } catch (const Error& e) {
    if (e.every_rank() && launched_rank() > 0) return kExitSuccess;
    err << ("error: " + std::string(e.what()) + "\n");
    return e.exit_code();
  }
  return kExitSuccess;
}

}  // namespace gradsync::apps
