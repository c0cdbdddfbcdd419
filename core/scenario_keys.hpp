// scenario_keys.hpp: every scenario key, defined once. A row gives the key's name (the YAML key,
// the result.json key, the CSV column and the --vary key), its flag, its help with the default,
// how its text is read (units, choices, bounds), which strategies it can change, and where it
// lives in Scenario. Flags, scenario files, --vary, result.json, the CSV files and the report all
// read this table, so a new knob is one row here (and its use in the engines).
//
//   const ScenarioKey& k = scenario_key("bucket_cap_mb");
//   set_key(s, k, parse_key_value(k, "25MiB"));   // s.bucket_cap_mb == 25
//   key_value(s, k);                               // 25; null while unset (an engine's default)
//   parse_key_value(k, "0")                        // ConfigError: expected a size in MiB > 0 ...
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/scenario.hpp"

namespace gradsync {

// KeyKind: how a key's text is read.
enum class KeyKind {
  kName,     // free text: a zoo name or a file (non-empty UTF-8 without control characters)
  kChoice,   // one word of `choices`, in any case; stored as the table spells it
  kSpec,     // text that `check` accepts (a comm hook with its options)
  kCount,    // a whole number in [min, max]
  kSizeMiB,  // a size in MiB: "25", "0.5", or with a unit: "25MiB", "512KiB", "1GiB"
  kSwitch,   // true or false; on the command line a flag without a value
};

// KeyReach: the strategies whose result a key can change. A sweep simulates a strategy once for
// points that differ only in keys that do not reach it (DataParallel ignores DDP's knobs).
enum class KeyReach { kEvery, kDdp };

// KeyField: the Scenario member a key sets.
using KeyField = std::variant<std::string Scenario::*, int Scenario::*, std::int64_t Scenario::*, bool Scenario::*,
                              std::optional<double> Scenario::*>;

// ScenarioKey: one row of the table.
struct ScenarioKey {
  std::string_view name = {};          // "bucket_cap_mb": YAML key, result.json key, CSV column, --vary key
  std::string_view flag = {};          // "--bucket-cap-mb"
  std::string_view value_name = {};    // what --help shows after the flag: "MiB", "N", "NAME|FILE"
  std::string_view help = {};          // what it is, in PyTorch's, torchrun's or NCCL's words
  std::string_view default_text = {};  // the default, as --help and the report say it
  KeyKind kind = KeyKind::kName;
  KeyField field = {};
  KeyReach reach = KeyReach::kEvery;
  std::vector<std::string_view> choices = {};  // kChoice: the accepted words
  std::int64_t min = 1, max = 0;               // kCount: bounds; kSizeMiB: max in MiB, min 0 takes 0 too
  // kCount: the value as its engine takes it, after the bounds (NCCL's own clamps of a channel
  // count: NCCL_MAX_NCHANNELS=0 is 1); null: as given.
  std::int64_t (*adjust)(std::int64_t value) = nullptr;
  // kSpec: the value in its one spelling; throws ConfigError with what was expected.
  std::string (*canonical)(std::string_view text) = nullptr;
  // engine_default: unset (0, empty or none) until an engine resolves it for the model, cluster or
  // machine (ScenarioFacts): the written scenario then holds the resolved value.
  bool engine_default = false;
  // nccl: one of NCCL's environment knobs (NCCL_*): set by `--nccl NAME=VALUE`, read from the
  // environment only with --nccl-from-env, and handed to NCCL in real mode.
  bool nccl = false;
  // decimal: a kSpec key whose values are decimal numbers (gpu_spread_pct): --vary takes ranges of
  // it (0:3:0.5) as it does of sizes.
  bool decimal = false;
  std::vector<std::string_view> aliases = {};  // other names the key answers to ("algo" for NCCL_ALGO)
};

// scenario_table: every key, in the order files, flags, result.json and the CSV list them.
const std::vector<ScenarioKey>& scenario_table();

// find_scenario_key: the row named "bucket_cap_mb", "bucket-cap-mb" or "--bucket-cap-mb" (NCCL's
// knobs in any case, and each row's aliases); null if none.
const ScenarioKey* find_scenario_key(std::string_view name);
// nccl_names: an NCCL knob's names as NCCL reads them from the environment: the row's name and
// its NCCL_* aliases (NCCL_MAX_NCHANNELS and NCCL 2.17's NCCL_MAX_CTAS); empty for other rows.
std::vector<std::string_view> nccl_names(const ScenarioKey& k);
// nccl_knob_names: "NCCL_ALGO, ..., NCCL_MIN_NCHANNELS (or NCCL_MIN_CTAS), ..." for help and messages.
std::string nccl_knob_names();
// nccl_name_as_given: the NCCL name `given` is, but for case ("nccl_max_ctas": NCCL_MAX_CTAS).
std::string_view nccl_name_as_given(const ScenarioKey& k, std::string_view given);
// scenario_key: the same, for a name the code knows (std::logic_error otherwise).
const ScenarioKey& scenario_key(std::string_view name);
// scenario_key_names: "model, topology, gpus, ..." for messages.
std::string scenario_key_names();
// nearest_key_hint: ' (did you mean "bucket_cap_mb"?)' for a name at most two edits from a key or
// one of its aliases (in any case, dashes as underscores; "strategy" too when `with_strategy`, as
// --vary takes it); empty when none is that near.
std::string nearest_key_hint(std::string_view name, bool with_strategy = false);

// parse_key_value reads `text` as key `k` takes it and returns the typed value (string, integer,
// number or boolean). ConfigError saying what was expected ("expected an integer from 1 to
// 1048576"), without a location: the caller names the file and line, the flag or --vary.
nlohmann::ordered_json parse_key_value(const ScenarioKey& k, std::string_view text);

// set_key stores a value of parse_key_value; key_value reads it back (null while an
// engine_default key is unset). value_text writes a value as a flag would take it ("25", "true").
void set_key(Scenario& s, const ScenarioKey& k, const nlohmann::ordered_json& value);
nlohmann::ordered_json key_value(const Scenario& s, const ScenarioKey& k);
std::string value_text(const nlohmann::ordered_json& value);

// key_help: the --help line of a key: its help and its default.
std::string key_help(const ScenarioKey& k);

// check_scenario_keys validates every key of a scenario however it was built (flags and files
// are checked as they are read; code and tests build Scenarios directly), and the rules between
// keys (warmup below iterations; the global batch within 2^53). ConfigError naming the key.
void check_scenario_keys(const Scenario& s);

// uses_grad_scaler: whether the step runs under GradScaler (core/grad_scaler.hpp): grad_scaler
// true, or auto with fp16 autocast (`precision` as resolved) and an optimizer to step.
bool uses_grad_scaler(const Scenario& s, std::string_view precision);

// ScenarioFacts: what an engine found for the engine_default keys: the GPUs it uses, the batch and
// sequence length of the model, the precision the GPU runs. seq_len is unset for a model
// without a sequence dimension.
struct ScenarioFacts {
  int gpus = 0;
  std::int64_t batch_per_gpu = 0;
  std::optional<std::int64_t> seq_len;
  std::string precision;
  int nnodes = 0;          // hosts the ranks span
  int nproc_per_node = 0;  // ranks on each of them; 0 when they differ (12 GPUs on 8-GPU nodes)
};

// apply_global_batch: a scenario's global_batch G (samples per optimizer step over every rank) as
// each rank's batch_per_gpu, G / (gpus x grad_accum), on `gpus` ranks; nothing when G is unset.
// ConfigError where that does not divide, or where a batch_per_gpu is given that disagrees.
void apply_global_batch(Scenario& s, int gpus);

// resolved_scenario: `requested` with every default made explicit: the facts, DDP's bucket caps
// (25 MiB, first bucket 1 MiB unless bucket_cap_mb is given: PyTorch >= 2.3). Simulating the
// resolved scenario gives the same result as the requested one.
Scenario resolved_scenario(const Scenario& requested, const ScenarioFacts& facts);

// requested_json: for each key whose request differs from its resolved value, what was asked
// ("default" for a key left unset); empty when they are the same.
nlohmann::ordered_json requested_json(const Scenario& requested, const Scenario& resolved);

}  // namespace gradsync
