// nccl_refusal.cpp: why a collective has no algorithm and protocol left that gradsync models,
// said in the terms of what the user can change (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, the
// release), once per algorithm the request allows.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/nccl_knobs.hpp"
#include "sim/nccl_model.hpp"

namespace gradsync::sim {

void refuse_collective(Collective c, const Channels& ch, const CollectiveRequest& req) {
  const int k = static_cast<int>(ch.ranks.size());
  const int nodes = ch.nodes();
  std::vector<std::string> set;
  if (!req.algorithms.empty()) set.push_back(fmt::format("NCCL_ALGO={}", req.algorithms));
  if (!req.protocols.empty()) set.push_back(fmt::format("NCCL_PROTO={}", req.protocols));
  if (!req.nvls && req.release.empty()) set.push_back("NCCL_NVLS_ENABLE=0");
  if (!req.release.empty())
    set.push_back(req.nvls ? fmt::format("NCCL {} (no NVLSTree before 2.18)", req.release)
                           : fmt::format("NCCL {} (no NVLS before 2.17, no NVLSTree before 2.18)", req.release));
  const std::string asked = fmt::format("{}", fmt::join(set, " "));
  // NCCL runs allgather and reducescatter with NVLS too (device/all_gather.h, reduce_scatter.h:
  // RunWorkColl<..., NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>, from 2.17) on one NVSwitch node; gradsync
  // does not model those kernels: said so, not taken for a call NCCL fails.
  const bool nvls_gather = (c == Collective::kAllgather || c == Collective::kReduceScatter) && req.nvls && ch.nvls &&
                           nodes == 1 && !req.algorithms.empty() && nccl_list_allows(req.algorithms, "nvls");
  if (nvls_gather) {
    throw ConfigError(fmt::format(
        "{}: NCCL runs {} over {} NVSwitch-connected GPUs with NVLS too (from NCCL 2.17), which gradsync does not "
        "model yet (its NVLS is allreduce's); expected NCCL_ALGO with ring for {} (or NCCL_ALGO unset: NCCL's "
        "tuning as gradsync models it, the ring)",
        asked, collective_name(c), k, collective_name(c)));
  }
  if (c != Collective::kAllreduce && !req.algorithms.empty() && !nccl_list_allows(req.algorithms, "ring")) {
    throw ConfigError(fmt::format(
        "{}: {} over {} GPU{} runs on the ring only (tree and nvlstree serve allreduce only, and NVLS needs an "
        "NVSwitch node of Hopper or later GPUs), which NCCL_ALGO "
        "leaves out; NCCL fails such a call (\"no algorithm/protocol available\"), except 2.19-2.23, which run "
        "the ring as a backup (--nccl-version 2.23)",
        asked, collective_name(c), k, k == 1 ? "" : "s"));
  }
  // Why each algorithm the request allows runs none of its protocols here, in the terms of what
  // the user can change (tune()'s rules, said once per algorithm).
  std::vector<std::string> why;
  const bool simple = nccl_list_allows(req.protocols, "simple");
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree}) {
    const std::string_view name = algorithm_name(a);
    if (!nccl_list_allows(req.algorithms, name)) continue;
    const bool is_nvls = a == Algorithm::kNvls || a == Algorithm::kNvlsTree;
    std::string reason;
    if (a != Algorithm::kRing && c != Collective::kAllreduce) {
      reason = "gradsync models it for allreduce only";
    } else if (a == Algorithm::kTree) {
      reason = nodes == 1 ? "inside one node NCCL runs it as a chain, which gradsync does not model yet"
                          : "none of NCCL_PROTO's protocols";
    } else if (is_nvls && !ch.nvls) {
      reason = "needs NVSwitch-connected Hopper or later GPUs for NVLink SHARP, which these GPUs are not";
    } else if (is_nvls && (!req.nvls || (a == Algorithm::kNvlsTree && !req.nvls_tree))) {
      reason = req.release.empty() ? "off by NCCL_NVLS_ENABLE=0" : fmt::format("not in NCCL {}", req.release);
    } else if (a == Algorithm::kNvls && nodes > 1) {
      reason = "one node only, while across nodes NCCL runs nvlstree";
    } else if (a == Algorithm::kNvlsTree && nodes == 1) {
      reason = "across nodes only, while on one node NCCL runs nvls";
    } else if (is_nvls && !simple) {
      reason = "Simple only, which NCCL_PROTO leaves out";
    } else if (is_nvls) {
      reason = "fewer than 2 NVLS channels, NCCL_MAX_CTAS too low";
    } else {
      reason = "none of NCCL_PROTO's protocols in this NCCL release";
    }
    why.push_back(fmt::format("{}: {}", name, reason));
  }
  throw ConfigError(
      fmt::format("{}: {} over {} GPU{} on {} node{} has no algorithm and protocol left that gradsync "
                  "models ({}); expected an NCCL_ALGO and NCCL_PROTO that leave one (ring runs everywhere)",
                  asked, collective_name(c), k, k == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", fmt::join(why, "; ")));
}

}  // namespace gradsync::sim
