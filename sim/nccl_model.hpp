// nccl_model.hpp: NCCL's tuning model as one versioned table: which algorithm and protocol NCCL
// picks for a collective, what it predicts, and the per-protocol facts the simulated collectives
// use (hop latencies, wire overhead, pipeline chunk). Numbers: NCCL 2.27.7 src/graph/tuning.cc
// (baseLat, hwLat, llMaxBws, perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws,
// treeCorrectionFactor, ncclTopoTuneModel, ncclTopoGetAlgoTime), SEMANTICS.md §3.
//
//   const CollectiveChoice c = choose_collective(Collective::kAllreduce, 64 << 20, channels, {});
//   c.algorithm == Algorithm::kRing;  c.protocol == Protocol::kSimple;  c.predicted_s
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "core/nccl_release.hpp"
#include "core/units.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

// Algorithm: NCCL's algorithms gradsync models. NVLS is NVLink SHARP (the NVSwitch reduces) inside
// a node; NVLSTree is NVLS inside each node and a tree between nodes. CollNet and PAT are not.
enum class Algorithm { kRing, kTree, kNvls, kNvlsTree };
enum class Protocol { kLL, kLL128, kSimple };
std::string_view algorithm_name(Algorithm a);  // "ring", "tree", "nvls", "nvlstree"
std::string_view protocol_name(Protocol p);    // "LL", "LL128", "Simple"
// parse_algorithm / parse_protocol read one name (any case); nullopt for "auto" or ""; ConfigError
// otherwise.
std::optional<Algorithm> parse_algorithm(std::string_view text);
std::optional<Protocol> parse_protocol(std::string_view text);

// nccl_model_version: the NCCL release whose tuning model picks algorithm and protocol for release
// `r`: 2.27's constants before 2.28 (earlier releases' tables are not read), 2.28's for 2.28, 2.29's
// from 2.29 (2.30's rewrite is not read). The simulated calls spend 2.27's rates and latencies
// (CollectiveChoice::latency_s, rate_Bps).
std::string_view nccl_model_version(NcclRelease r);

// HopKind: NCCL's three link families for latencies (NCCL_HW_NVLINK, _PCI, _NET).
enum class HopKind { kNvlink, kPci, kNet };
HopKind hop_kind(PathClass c);

// kGroupLaunchPerGpuS 5.5 us: the host's time to launch one GPU's kernel of a group call that one
// thread makes for several GPUs (nccl-tests' -g N in one process, PyTorch's DataParallel). NCCL's
// group.cc doLaunches walks the group's communicators in turn on that thread: cudaSetDevice, its
// launch preparation (an event recorded on the user's stream, NCCL's stream made to wait on it),
// the kernel launch (cudaLaunchKernelEx), and the finish (an event back onto the user's stream):
// one kernel launch (about 4 us, Efficiency::launch_s) and four lighter CUDA calls. Chosen by the
// project's rule, the least median |error| over the training cases' sizes below 16 MiB of
// nccl-tests run as one process driving N GPUs (validation/published/nccl_tests.yaml,
// gpus_per_thread): 0 (no floor) 19.3 %, 5.0 us 10.8 %, 5.25 us 9.0 %, 5.5 us 7.9 %, 5.75 us 9.9 %,
// 6.0 us 12.6 % (48 sizes of 12 cases); the hold-out's 24 sizes went from 28.2 % to 6.1 % with it.
// The runs show the floor directly: one thread driving 8 H100s times an allgather of 1 to 4 MiB
// at 41-42 us, and 4 of them at 22-23 us (NCCL 2.26 and 2.29; 5.2 and 5.6 us per GPU).
inline constexpr double kGroupLaunchPerGpuS = 5.5e-6;

// base_latency_s: NCCL's fixed cost of one collective (baseLat) for an algorithm and protocol.
double base_latency_s(Algorithm a, Protocol p);
// hop_latency_s: NCCL's per-step latency over one hop (hwLat).
double hop_latency_s(HopKind h, Algorithm a, Protocol p);
// wire_factor: bytes on the wire per payload byte: LL 2 (4 B of data per 8 B line), LL128
// 128/120, Simple 1.
double wire_factor(Protocol p);
// ampere_nvlink_write_factor: wire bytes per payload byte, beyond the protocol's, of LL and LL128
// between A100s over NVLink, where NCCL's P2P transport stores into the peer's buffer. NCCL reads
// instead for Simple on exactly these pairs ("Enable P2P Read for Ampere/NVLink only", paths.cc
// ncclTopoCheckP2p; p2p.cc keeps only the Simple buffer on the sender's side for reads), because
// NVLink3 carries the SMs' remote stores less efficiently than their remote loads. NCCL's tuning
// model plans LL128 at 0.92 of the Simple rate; on A100 the stores reach less. The factor is
// 1 / 0.73: the LL128 rate between 4 and 16 MiB of the two public 8 x A100 NVSwitch tables run as
// NCCL runs under DDP, one process per GPU (validation/published/nccl_tests.yaml, cases
// a100x8-hgx-thanos-mpirun-allreduce-default and a100x8-azure-aml-ndv4-allreduce-default: 11.3 us
// per MiB against NCCL's model's 8.2), NCCL's latency for the call unchanged (their intercept,
// 45 us, is its 41). Only for a node whose every ring hop is such an NVLink; a ring with PCIe hops
// and multi-node calls keep 1.
inline constexpr double kAmpereNvlinkWriteEfficiency = 0.73;
double ampere_nvlink_write_factor(Protocol p, const Channels& ch);

// chunk_bytes: payload per pipeline chunk of one channel (Simple 2 MiB: a 4 MiB buffer in 8 steps,
// 4 steps per chunk; LL 32 KiB; LL128 576 KiB).
double chunk_bytes(Protocol p);

// CollectiveRequest: what the user allows: NCCL_ALGO and NCCL_PROTO as canonical lists
// (core/nccl_knobs.hpp; empty: every one), NCCL_NVLS_ENABLE.
struct CollectiveRequest {
  std::string algorithms;
  std::string protocols;
  bool nvls = true;
  // release: the NCCL release the run links, where it lacks an algorithm: NVLS came with 2.17 and
  // NVLSTree with 2.18 (NCCL_ALGO_NVLS, NCCL_ALGO_NVLS_TREE in src/include/devcomm.h); empty: any.
  std::string release;
  bool nvls_tree = true;  // false before NCCL 2.18
  // nccl: the release, for the protocols it has and enables unasked (ll128_by_default); NCCL's
  // newest rules when not set.
  NcclRelease nccl{};
  // strict: an algorithm list that leaves a collective nothing to run with is an error; not
  // strict, such collectives use the ring (a step's allgathers and broadcasts under NCCL_ALGO=tree).
  bool strict = true;
  // ring_backup: NCCL 2.19-2.23 run the ring (with the protocols allowed) for a collective NCCL_ALGO
  // leaves nothing for, even when strict (tuning.cc ringbdw, enqueue.cc backupAlgo); earlier and
  // later releases fail the call ("no algorithm/protocol available").
  bool ring_backup = false;
  // only: a request allowing one algorithm and/or protocol.
  static CollectiveRequest only(std::optional<Algorithm> a, std::optional<Protocol> p);
};

// refuse_collective: ConfigError saying why collective `c` over `ch` has no algorithm and
// protocol left that gradsync models under `req` (each algorithm the request allows, with its
// reason: nvls on GPUs without NVLink SHARP, across nodes, without Simple, off or too old a release;
// tree inside one node; NVLS allgather and reducescatter, which gradsync does not model).
[[noreturn]] void refuse_collective(Collective c, const Channels& ch, const CollectiveRequest& req);

// CollectiveChoice: the pair NCCL would run and what its model says of it.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double predicted_s = 0;
  double bus_bw_Bps = 0;  // the model's bus bandwidth for the pair
  double alg_bw_Bps = 0;  // the model's algorithm bandwidth: predicted_s = latency + bytes / alg_bw
  // latency_s: the model's latency, what the simulated call spends; from NCCL 2.28 on, 2.27's model's
  // for the chosen pair (nccl_model.cpp kPhysical), while predicted_s is the release's own.
  double latency_s = 0;
  // sync_s: what the run costs beyond NCCL's model: the handshakes NCCL's chunking puts on the
  // critical path that its tuning model leaves out (pipeline_sync_s). A simulated collective takes
  // latency_s + sync_s + its bytes at the links' shared rates.
  double sync_s = 0;
  // write_factor: what a payload byte of this call costs on its links beyond the protocol's own
  // wire_factor: NVLink's write mode between A100s for LL and LL128 (ampere_nvlink_write_factor),
  // else 1. wire_bytes_per_byte is the product, what the simulated flows carry.
  double write_factor = 1;
  double wire_bytes_per_byte() const { return wire_factor(protocol) * write_factor; }
  // rate_Bps: the algorithm bandwidth a simulated NVLS or NVLSTree call moves its data at inside a
  // node, NCCL 2.27's estimate whatever the release (2.28 estimates NVLS lower for its choice, the
  // hardware unchanged: nccl_model.cpp); alg_bw_Bps for the other algorithms.
  double rate_Bps = 0;
};

// ll128_by_default: whether NCCL release `r` runs LL128 without being asked (NCCL_PROTO unset) for
// GPUs of compute capability `sm` (x10, all alike) whose hops inside a node are of class `intra`
// (tuning.cc ncclTopoTuneModel, by tag: "Enable LL128 by default only on ... +NVLink. Other cases
// are not tested and may cause silent data corruption"):
//   2.4        none: LL128 came with 2.5 (v2.4.8-1 has LL and Simple only)
//   2.5-2.6    sm 70 (Volta)
//   2.7-2.14   sm 70, 80 (Volta, Ampere A100; not 8.6/8.9 parts)
//   2.15-2.24  sm 70, 80, 90
//   2.25-2.26  sm 70, 80, 90, 100, 120
//   2.27-      every sm from 70
// with every hop inside a node NVLink (PATH_NVL), or from 2.18.3 (read here as 2.19) NVLink through
// a GPU (PATH_NVB) too. Across nodes, from 2.8, also only where every GPU reaches its NIC no
// farther than a PCIe switch (`inter`, the graph's typeInter, <= PATH_PXB): not through the CPU,
// which is where a GPU without GPUDirect RDMA (NCCL_NET_GDR_LEVEL, NCCL_IB_DISABLE, a NIC on the
// CPU's root port) stages its bytes in host memory; and not by PXN (`pxn`) but on Hopper and later
// from 2.17 ("Enable LL128 by default only on Hopper/Blackwell for all connections up to P2C and
// PXN"). On one node `inter` is PIX.
bool ll128_by_default(NcclRelease r, int sm, PathClass intra, PathClass inter = PathClass::kPIX, bool pxn = false);

// choose_collective: among the allowed (algorithm, protocol) pairs, the one with the smallest
// predicted time (ncclTopoGetAlgoTime). Ring serves every collective; tree allreduce across
// nodes; NVLS allreduce on one node of NVSwitch-connected Hopper or later GPUs (more than two);
// NVLSTree allreduce across such nodes. ConfigError when the request leaves nothing (strict).
// `bytes` is CollectiveOp::bytes (an allgather's per-rank part; NCCL tunes on the whole output).
CollectiveChoice choose_collective(Collective c, double bytes, const Channels& ch, const CollectiveRequest& req);

// launched_blocks: the thread blocks of one NCCL kernel of algorithm `a` on `ch`: one per
// launched channel: the searched rings doubled for ring and tree (connect.cc: nChannels*2, at most
// MAXCHANNELS 64), NVLS's own counts (nvls.cc NVLS_NCHANNELS_SM90 16; SM100 24 in one NVLink
// domain, 32 across nodes). 0 for a single rank (NCCL launches no kernel).
int launched_blocks(Algorithm a, const Channels& ch);

// tuning_bytes: NCCL's nBytes for a call of CollectiveOp::bytes `bytes` over k ranks
// (enqueue.cc: elementSize * ncclFuncMaxSendRecvCount): an allgather's whole output, else `bytes`.
double tuning_bytes(Collective c, double bytes, int k);

// ring_steps: steps per rank of a ring collective over k ranks (tuning.cc nsteps): 2 (k - 1) for
// an allreduce, k - 1 for allgather and reducescatter, k for broadcast and reduce.
int ring_steps(Collective c, int k);

// pipeline_sync_s: the handshakes of a run that NCCL's tuning model does not count, from how
// NCCL cuts the bytes (enqueue.cc calcCollChunking, prims_simple.h) and NCCL's own per-step
// latency for the hop (hwLat, ring, Simple):
//  - P2P read (Simple over NVLink between A100s, p2p.cc; one node whose every ring hop is such an
//    NVLink, a ring also crossing PCIe or the network being paced by those hops, whose latency
//    NCCL's model counts, x1.4 across nodes): the receiver pulls each slice from the
//    sender's buffer and must hand the buffer back before the sender refills it: one more
//    handshake per slice (2 per chunk step; loops of 2 MiB per rank and channel, 2x the searched
//    channels launched, connect.cc).
//  - NVLS and NVLSTree: every chunk round (16 launched NVLS channels x the node's GPUs, each a
//    chunk) synchronises the ranks' scatter, switch-reduce and gather; NCCL's NVLS bandwidth is
//    that of its default 128 KiB chunk, and a call NCCL cuts into 64, 32 or 16 KiB chunks pays one
//    handshake per extra round (over NVLink; NVLSTree's cross the network: NCCL's network step
//    latency). The pipeline's fill costs one round: its bytes at `alg_Bps` and its handshake.
// nbytes is tuning_bytes; alg_Bps the model's algorithm bandwidth.
double pipeline_sync_s(Collective c, double nbytes, const Channels& ch, Algorithm a, Protocol p, double alg_Bps);

}  // namespace gradsync::sim
