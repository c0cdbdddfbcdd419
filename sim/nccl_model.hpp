// nccl_model.hpp: NCCL's tuning model as one versioned table: which algorithm and protocol NCCL
// picks for a collective, what it predicts, and the per-protocol facts the simulated collectives
// use (hop latencies, wire overhead, pipeline chunk). Numbers: SEMANTICS.md §3, NCCL 2.27
// src/graph/tuning.cc (baseLat, hwLat, llMaxBws, perChMaxRingLL128Bws).
//
//   const CollectiveChoice c = choose_collective(Collective::kAllreduce, 64 << 20, channels, {});
//   c.algorithm == Algorithm::kRing;  c.protocol == Protocol::kSimple;  c.predicted_s
#pragma once

#include <optional>
#include <string_view>

#include "core/backend.hpp"
#include "core/units.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

enum class Algorithm { kRing, kTree };
enum class Protocol { kLL, kLL128, kSimple };
std::string_view algorithm_name(Algorithm a);
std::string_view protocol_name(Protocol p);
// parse_algorithm / parse_protocol read "ring" / "tree", "ll" / "ll128" / "simple" (case-insensitive);
// nullopt for "auto"; ConfigError otherwise.
std::optional<Algorithm> parse_algorithm(std::string_view text);
std::optional<Protocol> parse_protocol(std::string_view text);

// kNcclModelVersion: the NCCL release whose tuning constants the table holds.
inline constexpr std::string_view kNcclModelVersion = "2.27";

// HopKind: NCCL's three link families for latencies (NCCL_HW_NVLINK, _PCI, _NET).
enum class HopKind { kNvlink, kPci, kNet };
HopKind hop_kind(PathClass c);

// base_latency_s: NCCL's fixed cost of one collective (baseLat) for an algorithm and protocol.
double base_latency_s(Algorithm a, Protocol p);
// hop_latency_s: NCCL's per-step latency over one hop (hwLat).
double hop_latency_s(HopKind h, Algorithm a, Protocol p);
// wire_factor: bytes on the wire per payload byte: LL 2 (4 B of data per 8 B line), LL128
// 128/120, Simple 1.
double wire_factor(Protocol p);
// chunk_bytes: payload per pipeline chunk of one channel (Simple 2 MiB: a 4 MiB buffer in 8 steps,
// 4 steps per chunk; LL 32 KiB; LL128 576 KiB).
double chunk_bytes(Protocol p);

// CollectiveRequest: what to choose for, and the user's NCCL_ALGO / NCCL_PROTO if any.
struct CollectiveRequest {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  // strict: a forced tree where NCCL has none (not an allreduce, or one node) is an error; not
  // strict, those collectives use the ring (a step's allgathers and broadcasts under --algo tree).
  bool strict = true;
};

// CollectiveChoice: the pair NCCL would run and the time its model predicts.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double predicted_s = 0;
  double bus_bw_Bps = 0;  // the model's bus bandwidth for the pair
};

// choose_collective: among the allowed (algorithm, protocol) pairs, the one with the smallest
// predicted time = latency + bytes / algBw. Tree serves allreduce across nodes only; the rest use
// rings. `sm_version` picks the row of NCCL's per-architecture bandwidth caps (70, 80, 90, 100).
// ConfigError when the user forces tree where it cannot run.
CollectiveChoice choose_collective(Collective c, double bytes, const Channels& ch, int sm_version,
                                   const CollectiveRequest& req);

}  // namespace gradsync::sim
