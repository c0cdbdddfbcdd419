// nccl_model.cpp: NCCL 2.27's tuning constants and its algorithm/protocol choice.
#include "sim/nccl_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

constexpr std::size_t idx(Protocol p) { return static_cast<std::size_t>(p); }

// NCCL 2.27 baseLat [Tree, Ring][LL, LL128, Simple], microseconds.
constexpr std::array<std::array<double, 3>, 2> kBaseLatUs{{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}}};
// hwLat [NVLink, PCI, NET][Tree, Ring][LL, LL128, Simple], microseconds.
constexpr std::array<std::array<std::array<double, 3>, 2>, 3> kHwLatUs{{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}}},
    {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}}},
    {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}},
}};
// llMaxBws [Volta, Ampere, Hopper, Blackwell][1 node, 2 nodes, more], GB/s.
constexpr std::array<std::array<double, 3>, 4> kLlMaxBw{
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
// perChMaxRingLL128Bws [arch][nodes], GB/s per channel.
constexpr std::array<std::array<double, 3>, 4> kPerChMaxRingLL128Bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}}};

constexpr std::size_t algo_index(Algorithm a) { return a == Algorithm::kTree ? 0 : 1; }

std::size_t arch_index(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

int log2i(int n) {
  int l = 0;
  while ((1 << (l + 1)) <= n) ++l;
  return l;
}

// Steps per rank of a ring collective (ncclFuncSteps).
int ring_steps(Collective c, int k) {
  switch (c) {
    case Collective::kAllreduce:
      return 2 * (k - 1);
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return k - 1;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return k - 1;
  }
  return k - 1;
}

}  // namespace

std::string_view algorithm_name(Algorithm a) { return a == Algorithm::kTree ? "tree" : "ring"; }

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "Simple";
}

std::optional<Algorithm> parse_algorithm(std::string_view text) {
  const std::string t = lower(text);
  if (t == "auto") return std::nullopt;
  if (t == "ring") return Algorithm::kRing;
  if (t == "tree") return Algorithm::kTree;
  throw ConfigError(fmt::format("algorithm \"{}\": expected ring, tree or auto", text));
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  const std::string t = lower(text);
  if (t == "auto") return std::nullopt;
  if (t == "ll") return Protocol::kLL;
  if (t == "ll128") return Protocol::kLL128;
  if (t == "simple") return Protocol::kSimple;
  throw ConfigError(fmt::format("protocol \"{}\": expected ll, ll128, simple or auto", text));
}

HopKind hop_kind(PathClass c) {
  switch (c) {
    case PathClass::kNVL:
    case PathClass::kNVB:
      return HopKind::kNvlink;
    case PathClass::kNET:
      return HopKind::kNet;
    default:
      return HopKind::kPci;
  }
}

double base_latency_s(Algorithm a, Protocol p) { return kBaseLatUs[algo_index(a)][idx(p)] * 1e-6; }

double hop_latency_s(HopKind h, Algorithm a, Protocol p) {
  return kHwLatUs[static_cast<std::size_t>(h)][algo_index(a)][idx(p)] * 1e-6;
}

double wire_factor(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 2.0;
    case Protocol::kLL128:
      return 128.0 / 120.0;
    case Protocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

double chunk_bytes(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 32.0 * 1024;
    case Protocol::kLL128:
      return 576.0 * 1024;
    case Protocol::kSimple:
      return 2.0 * 1024 * 1024;
  }
  return 2.0 * 1024 * 1024;
}

CollectiveChoice choose_collective(Collective c, double bytes, const Channels& ch, int sm_version,
                                   const CollectiveRequest& req) {
  const int k = static_cast<int>(ch.ranks.size());
  const int nodes = std::max<int>(1, static_cast<int>(ch.hosts.size()));
  const bool tree_possible = c == Collective::kAllreduce && nodes > 1;
  std::optional<Algorithm> forced = req.algorithm;
  if (forced == Algorithm::kTree && !tree_possible && !req.strict) forced = Algorithm::kRing;
  if (forced == Algorithm::kTree && !tree_possible) {
    throw ConfigError(
        fmt::format("algorithm tree: NCCL's tree serves allreduce across nodes; this is {} over {} node{}",
                    collective_name(c), nodes, nodes == 1 ? "" : "s"));
  }
  const std::size_t arch = arch_index(sm_version);
  const std::size_t scale = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
  const double channels = static_cast<double>(std::max<std::size_t>(1, ch.rings.size()));
  const HopKind intra = hop_kind(ch.intra_class);
  const int per_node = k / nodes;

  CollectiveChoice best;
  best.predicted_s = std::numeric_limits<double>::infinity();
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
    if (a == Algorithm::kTree && !tree_possible) continue;
    if (forced && *forced != a) continue;
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      if (req.protocol && *req.protocol != p) continue;
      double bus = ch.total_bw_Bps() / 1e9;  // GB/s
      if (a == Algorithm::kTree) bus *= 0.92;
      if (p == Protocol::kLL) bus = std::min(kLlMaxBw[arch][scale], 0.5 * bus);
      if (p == Protocol::kLL128) bus = std::min(bus * 0.92, channels * kPerChMaxRingLL128Bw[arch][scale]);
      double alg = bus;
      double lat_us = kBaseLatUs[algo_index(a)][idx(p)];
      if (a == Algorithm::kRing) {
        const int steps = ring_steps(c, k);
        if (c == Collective::kAllreduce) alg = bus * k / (2.0 * (k - 1));
        if (c == Collective::kAllgather || c == Collective::kReduceScatter) alg = bus * k / (k - 1.0);
        const int inter_steps = nodes > 1 ? (c == Collective::kAllreduce ? 2 : 1) * (nodes - 1) : 0;
        lat_us += (steps - inter_steps) * kHwLatUs[static_cast<std::size_t>(intra)][1][idx(p)] +
                  inter_steps * kHwLatUs[2][1][idx(p)];
      } else {
        alg = bus * 0.5;
        lat_us += 2.0 * ((per_node - 1) * kHwLatUs[static_cast<std::size_t>(intra)][0][idx(p)] +
                         log2i(nodes) * kHwLatUs[2][0][idx(p)]);
      }
      const double t = k <= 1 ? 0.0 : lat_us * 1e-6 + bytes / (alg * 1e9);
      if (t < best.predicted_s) best = {a, p, t, bus * 1e9};
    }
  }
  return best;
}

}  // namespace gradsync::sim
