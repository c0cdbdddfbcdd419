// advice.hpp: what to change. The changes a PyTorch engineer would try on a training script
// (DDP instead of DP, DDP's options, comm hooks, gradient accumulation, the largest batch that
// fits, NCCL's knobs, the optimizer implementation, where the input lives, torch.compile, the
// attention kernel), each as scenario keys to set and the one line to change in the script. The
// engine simulates every change (sim/advice.hpp); nothing here predicts a gain.
//
//   const std::vector<Change> cs = candidate_changes(resolved, Strategy::kDDP, {.attention = true});
//   cs[0].what == "bucket_cap_mb 5", cs[0].keys == {{"bucket_cap_mb", "5"}},
//   cs[0].pytorch == "DDP(model, bucket_cap_mb=5)"
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/scenario.hpp"
#include "core/strategy.hpp"

namespace gradsync {

// Change: one thing to try. `keys` are scenario keys with values as their flags read them.
// kUnsetValue: a Change's value that puts its key back to the default (NCCL_MAX_NCHANNELS unset).
inline constexpr const char* kUnsetValue = "unset";

struct Change {
  std::string what;                                       // "bucket_cap_mb 50", "DDP instead of DP"
  std::vector<std::pair<std::string, std::string>> keys;  // {"bucket_cap_mb", "50"}; kUnsetValue: the default
  std::optional<Strategy> strategy;                       // set: run this strategy instead
  std::string pytorch;                                    // the line to change in the script
  // alters: empty when the change leaves the training maths as they are; else what it changes
  // ("gradients sent in bf16", "global batch 512 instead of 128").
  std::string alters;
  // largest_batch: batch_per_gpu is the largest that fits the GPU's memory, found by the engine
  // (keys are filled in then).
  bool largest_batch = false;
  // accumulate_to_fit: a run that does not fit keeps its global batch in micro-batches that do:
  // batch_per_gpu divided by the fewest k that fit, grad_accum multiplied by k (the engine fills
  // the keys; nothing is tried for a run that fits).
  bool accumulate_to_fit = false;
};

// ModelTraits: what decides which changes apply to a model.
struct ModelTraits {
  bool attention = false;  // an attention core (--attention applies)
  bool causal = false;     // its attention is causal (a decoder: is_causal=True)
  // masked: a non-causal attention that adds a mask to its scores (BERT's padding mask): SDPA
  // takes it as attn_mask, which its flash kernel does not accept (the memory-efficient one does).
  bool masked = false;
  bool convolution = false;  // convolutions (channels_last applies)
  bool batchnorm = false;    // BatchNorm: buffers that change every step (broadcast_buffers matters)
  // flash: the GPU runs SDPA's flash kernel (compute capability 8.0 from PyTorch 2.2); where it
  // does not, SDPA takes the memory-efficient kernel, and that is the change to try.
  bool flash = true;
  // bf16: the GPU autocasts to bfloat16 (Ampere and later, PyTorch 1.10 on), so an fp16 run may
  // drop its GradScaler for bf16.
  bool bf16 = false;
  // A float32 run's precision changes the GPU and release allow: tf32 (TF32 products, Ampere and
  // later, PyTorch 1.7 on; not where the release already runs float32 products as TF32), fp16
  // autocast (tensor cores from Volta, torch.cuda.amp from 1.6); bf16 above says the same of bf16.
  bool tf32 = false;
  bool fp16 = false;
  // vocabulary: the token embedding's rows when a product spans them (padding applies); else 0.
  std::int64_t vocabulary = 0;
  // measured: the model carries a step torch.profiler measured (models import-trace), whose times
  // do not change with what the script runs (compile, attention, memory format, optimizer, input,
  // precision): only the batch and the strategy's own options are tried on it.
  bool measured = false;
};

// candidate_changes: the changes to try on `resolved` (every key resolved: resolve_scenario) run
// with `strategy`, in a fixed order (the order they run and break ties in). Changes that would set
// a key to the value it has are left out.
std::vector<Change> candidate_changes(const Scenario& resolved, Strategy strategy, const ModelTraits& traits);

// ChangeResult: one change as simulated.
struct ChangeResult {
  Change change;
  // status: "ok"; "oom" (simulated, but the GPU's memory is exceeded); "failed" (the scenario
  // could not run: `error`); "budget" (not simulated within the time budget).
  std::string status;
  std::string error;
  double steady_s = 0;
  double samples_per_s = 0;
  double gain = 0;  // samples/s against the run's, minus 1 (0.10: 10% more samples per second)
  double peak_memory_bytes = 0;
  double capacity_bytes = 0;  // the memory of the GPU with that peak
};

// Advice: every change tried on one run, the best first.
struct Advice {
  Strategy strategy = Strategy::kDDP;  // the run the changes start from
  double steady_s = 0;                 // that run's steady step
  double samples_per_s = 0;
  bool oom = false;     // that run exceeds the GPU's memory
  double budget_s = 0;  // the time budget (wall clock) the changes were simulated within
  // changes: those that ran ("ok") by gain, highest first (ties in candidate order), then the
  // others in candidate order.
  std::vector<ChangeResult> changes;

  // kMinGain: the gain a change must reach to be shown as advice (1%, a tenth of the 10% that
  // gradsync's validation aims at: smaller gains are below what it can tell apart).
  static constexpr double kMinGain = 0.01;
  // kShown: how many changes stdout and the report show.
  static constexpr std::size_t kShown = 5;
};

// rank_changes sorts `a.changes` as Advice documents.
void rank_changes(Advice& a);
// advised: the changes worth showing: "ok" and gain >= kMinGain (when the run itself is out of
// memory: every "ok" change, since each makes it fit), at most kShown.
std::vector<const ChangeResult*> advised(const Advice& a);

// advice_json: the advice as result.json holds it.
nlohmann::ordered_json advice_json(const Advice& a);

}  // namespace gradsync
