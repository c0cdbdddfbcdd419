// published.hpp: gradsync against published nccl-tests measurements. Each case of a table
// (validation/published/nccl_tests.yaml, compiled in) names its hardware, its NCCL settings and
// the busbw nccl-tests printed per size; gradsync builds the cluster the case describes, simulates
// the collective at those sizes and compares.
//
//   const auto cases = read_published(builtin_published_text(), "validation/published/nccl_tests.yaml");
//   const PublishedResult r = simulate_published(cases[0]);   // in this process: one engine
//   r.points[0].simulated_GBps / r.points[0].published_GBps - 1   // the error
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

// PublishedCase: one published table, as the file holds it.
struct PublishedCase {
  std::string id;
  std::string split;  // "train" or "holdout", decided when the case was added
  std::string source;
  std::string hardware;
  std::string nccl_version;
  Collective collective = Collective::kAllreduce;
  std::string algo;  // what the source says NCCL ran: default, ring, tree, nvls, ...
  int nodes = 1;
  int gpus_per_node = 1;
  // gpus_per_thread: GPUs one thread drove (nccl-tests' -g N in one process, as the source shows
  // it); 1, the default, for one process per GPU or where the source does not say.
  int gpus_per_thread = 1;
  std::map<std::string, std::string> env;        // NCCL_* the source says were set
  std::vector<std::pair<double, double>> busbw;  // (bytes, GB/s), by size
  nlohmann::ordered_json simulate;               // the cluster: {topology: NAME} or {generate: KIND, ...}
  // simulate.nccl: NCCL knobs the simulation sets beyond env, each for a reason given in
  // simulate.note (NCCL_NVLS_ENABLE=0 for a run with NCCL older than 2.17, which had no NVLS).
  std::map<std::string, std::string> sim_env;
  std::string sim_note;
  std::string unsupported;  // why gradsync cannot model it (then not simulated)
  std::string excluded;     // why it is not scored (a known-bad measurement)
  int line = 0;
};

// read_published: the cases of a table. ConfigError naming origin:line and the field for a
// malformed case (a missing field, an unknown collective, a size without a unit, a duplicate id).
std::vector<PublishedCase> read_published(std::string_view text, const std::string& origin);

// builtin_published_text: validation/published/nccl_tests.yaml as compiled into gradsync.
std::string_view builtin_published_text();

// published_topology: the cluster a case describes (a built-in or file, or a generator's).
Topology published_topology(const PublishedCase& c);

// PublishedPoint: one size: what was published, what gradsync simulates, and what it ran.
struct PublishedPoint {
  double bytes = 0;
  double published_GBps = 0;
  double simulated_GBps = 0;
  std::string algorithm, protocol;
  double error() const { return simulated_GBps / published_GBps - 1; }
};

// PublishedResult: a case simulated. `cls` is its validation class: "NVLink node" (one machine,
// every ring hop over NVLink), "PCIe" (one machine, PCIe or host memory), "multi-node".
struct PublishedResult {
  std::string cls;
  std::vector<PublishedPoint> points;
  std::vector<std::string> ignored_env;  // NCCL_* settings gradsync does not model
};

// simulate_published simulates one case in this process's engine (one per process).
PublishedResult simulate_published(const PublishedCase& c);

// published_json / published_from_json: a result through a child process's pipe.
nlohmann::ordered_json published_json(const PublishedResult& r);
PublishedResult published_from_json(const nlohmann::ordered_json& j);

}  // namespace gradsync::sim
