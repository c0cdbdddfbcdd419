// resolved.hpp (internal to sim/): a scenario with everything it names looked up and checked
// once: model, cluster, GPUs, precision, options, calibration. simulate.cpp runs it;
// resolve.cpp builds it (and answers resolve_scenario and largest_batch_per_gpu from it).
#pragma once

#include <cstdint>
#include <optional>
#include <set>

#include "core/bucket_plan.hpp"
#include "core/calibration.hpp"
#include "core/comm_hook.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "sim/collective_run.hpp"
#include "sim/nccl_options.hpp"
#include "sim/simulate.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

// Everything a scenario names, looked up once.
struct ResolvedScenario {
  ResolvedScenario(Scenario sc, Model m, Topology t) : s(std::move(sc)), model(std::move(m)), topo(std::move(t)) {}
  Scenario s;
  Model model;
  Topology topo;
  int gpus = 0;
  const GpuSpec* gpu = nullptr;
  Precision precision = Precision::kBF16;
  Optimizer optimizer = Optimizer::kAdamW;
  std::int64_t batch = 0;
  std::int64_t seq_len = 1;
  CommHook hook;
  NcclSettings nccl;
  Fidelity fidelity = Fidelity::kAuto;
  std::set<int> hosts;  // hosts of the GPUs used
  std::optional<Calibration> calibration;
  Scenario resolved;  // s with every default made explicit (core/scenario_keys.hpp)
};

// resolve looks up and checks everything `requested` names (ConfigError naming the key).
ResolvedScenario resolve(const Scenario& requested);
// check_ddp_run: ConfigError when a DDP run of the scenario cannot run as PyTorch runs it: its
// NCCL_ALGO/NCCL_PROTO leave DDP's allreduce over its GPUs nothing that gradsync models
// (choose_collective, strict), or static_graph meets grad_accum's no_sync().
void check_ddp_run(const ResolvedScenario& r);
// context_of: the compute context every cost of the scenario is evaluated in.
ComputeContext context_of(const ResolvedScenario& r);
// buckets_of: DDP's bucket options as the scenario sets them (simulation and closed form alike).
BucketOptions buckets_of(const Scenario& s);

}  // namespace gradsync::sim
