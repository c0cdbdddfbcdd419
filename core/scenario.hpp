// scenario.hpp: what one run of a training step is: model, cluster, batch, precision, DDP options,
// iterations, NCCL settings. The simulator and the real engine read the same keys, from flags
// or from a YAML scenario file.
//
//   Scenario s;                                   // GPT-2, B=16, T=1024, bf16, AdamW, dgx-a100
//   s = read_scenario_file("run.yaml");           // the same keys as the command line
//   scenario_json(s)["bucket_cap_mb"]             // null: DDP's default 25 MiB, until resolved
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/yaml_reader.hpp"

namespace gradsync {

// Scenario: what a run asks for: every key of `simulate`, `compare`, `sweep` and `bench`, from
// flags and the YAML scenario file alike. The keys (names, flags, parsing, defaults) are the rows
// of core/scenario_keys.hpp. Zero, empty or unset means an engine's default (gpus, batch_per_gpu,
// seq_len, precision, bucket caps, calibration), resolved for the model and cluster
// (resolved_scenario).
struct Scenario {
  std::string model = "gpt2";
  std::string topology = "dgx-a100";
  int gpus = 0;                              // 0: every GPU of the topology
  int nnodes = 0;                            // torchrun --nnodes; 0: unset (gpus decides)
  int nproc_per_node = 0;                    // torchrun --nproc-per-node; 0: unset
  std::int64_t batch_per_gpu = 0;            // 0: the model's default batch
  std::int64_t global_batch = 0;             // samples per optimizer step over all GPUs; 0: unset
  std::int64_t seq_len = 0;                  // 0: the model's default
  std::string precision;                     // empty: bf16 where the GPU has it, else fp16
  std::string mixed_precision = "autocast";  // autocast, or master-weights (the model in 16 bits)
  std::string optimizer = "adamw";
  std::string optimizer_impl = "auto";    // auto (the release's default), foreach, fused, for-loop
  std::string set_to_none = "auto";       // optimizer.zero_grad(set_to_none=...): auto (True from 2.0)
  bool zero_grad = true;                  // the loop calls zero_grad each step; false: gradients accumulate
  bool compile = false;                   // torch.compile(model)
  std::string attention = "math";         // math, flash, mem-efficient
  bool channels_last = false;             // model.to(memory_format=torch.channels_last)
  int pad_to_multiple_of = 1;             // the vocabulary padded to a multiple of this (1: as the model)
  std::string input = "pageable";         // where each batch starts: pageable, pinned, device
  std::string pytorch_version = "2.11";   // the release whose rules apply (core/pytorch_version.hpp)
  std::string nccl_version = "auto";      // the NCCL release linked; auto: PyTorch's (core/nccl_release.hpp)
  std::optional<double> bucket_cap_mb;    // unset: 25 MiB
  std::optional<double> first_bucket_mb;  // unset: 1 MiB without bucket_cap_mb, else bucket_cap_mb
  int grad_accum = 1;
  std::string comm_hook = "none";
  bool find_unused_parameters = false;
  bool static_graph = false;
  bool gradient_as_bucket_view = false;
  bool broadcast_buffers = true;          // DDP(broadcast_buffers=...): rank 0's buffers before each forward
  bool allreduce_after_backward = false;  // the buckets reduced after backward (apex delay_allreduce)
  bool clip_grad_norm = false;            // torch.nn.utils.clip_grad_norm_ before every optimizer step
  std::string grad_scaler = "auto";       // torch.cuda.amp.GradScaler: auto (with fp16 autocast), true, false
  int iterations = 5;                     // optimizer steps simulated
  int warmup = 3;                         // leading steps left out of the steady-state mean
  std::string fidelity = "auto";          // step, aggregate, auto (sim/collective_run.hpp)
  std::string calibration;                // calibration.yaml of `gradsync calibrate`; empty: the roofline model
  std::string gpu_spread_pct = "1.5";     // GPUs' spread in percent (models/gpu_spread.hpp kGpuSpread)
  // NCCL's knobs under NCCL's names (core/nccl_knobs.hpp); empty, 0 or false: unset, NCCL's default.
  std::string nccl_algo;           // NCCL_ALGO: ring, tree, nvls, nvlstree as a list, ^ to exclude
  std::string nccl_proto;          // NCCL_PROTO: ll, ll128, simple as a list, ^ to exclude
  bool nccl_p2p_disable = false;   // NCCL_P2P_DISABLE
  std::string nccl_p2p_level;      // NCCL_P2P_LEVEL: LOC NVL NVB PIX PXB PHB SYS
  bool nccl_shm_disable = false;   // NCCL_SHM_DISABLE
  std::string nccl_nvls_enable;    // NCCL_NVLS_ENABLE: 0, 1, 2
  int nccl_min_nchannels = 0;      // NCCL_MIN_NCHANNELS
  int nccl_max_nchannels = 0;      // NCCL_MAX_NCHANNELS
  int nccl_min_ctas = 0;           // NCCL_MIN_CTAS (NCCL 2.17)
  int nccl_max_ctas = 0;           // NCCL_MAX_CTAS (NCCL 2.17)
  std::string nccl_net_gdr_level;  // NCCL_NET_GDR_LEVEL: LOC NVL NVB PIX PXB PHB SYS
  bool nccl_ib_disable = false;    // NCCL_IB_DISABLE
  bool nccl_pxn_disable = false;   // NCCL_PXN_DISABLE (NCCL 2.12)
};

// input_location: the `input` key as the steps take it (a checked choice of the key table).
InputLocation input_location(const Scenario& s);

// ScenarioLines: the line (1-based) of each key a scenario file set, by the key's name.
using ScenarioLines = std::map<std::string, int, std::less<>>;

// read_scenario_file reads a YAML mapping of scenario keys into `base`. Each value is read as the
// key's flag reads it (units, choices, bounds). ConfigError at file:line naming the key for an
// unknown key, a key given twice, a value that is empty (null), a list or a mapping, or a bad value.
// A model, topology or calibration given as a relative path (one holding a '/' or a '.'; a
// built-in name holds neither) is relative to the file's folder, as compose files and CMake
// read theirs. `lines`, when given, receives the line of every key the file set.
Scenario read_scenario_file(const std::string& path, Scenario base = {}, ScenarioLines* lines = nullptr);
// parse_scenario: the same from a file's text; `origin` names it in errors (its paths are taken
// as they are written).
Scenario parse_scenario(std::string_view text, const std::string& origin, Scenario base = {});

// scenario_from_node: parse_scenario's reading of a mapping already loaded by `r` (a scenario
// inside another file: validation/published/ddp_steps.yaml); ConfigError at its lines. Relative
// paths are joined to `folder` when it is not empty; `lines` as read_scenario_file's.
Scenario scenario_from_node(const YamlReader& r, const YAML::Node& root, Scenario base = {},
                            const std::string& folder = {}, ScenarioLines* lines = nullptr);

// located_scenario_error: `message` (a ConfigError about a resolved scenario, which names its key
// first: "gpus 9: ...", "warmup \"50\": ...") with "file:line: " before it when that key is one
// of `lines`, i.e. the scenario file set it; `message` unchanged otherwise.
std::string located_scenario_error(std::string_view message, const std::string& file, const ScenarioLines& lines);

// scenario_json: every key and its value, in the table's order (null for an engine default left
// unset).
nlohmann::ordered_json scenario_json(const Scenario& s);

}  // namespace gradsync
