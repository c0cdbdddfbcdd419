// transport.hpp: how NCCL moves a channel's data from one GPU to the next: its transports (NVIDIA
// nccl src/transport/{p2p,shm,net}.cc) on one interface, tried in NCCL's order (P2P, then SHM,
// then NET: transport.cc selectTransport), each deciding from the topology and NCCL's knobs
// whether it can connect two GPUs and along which links the bytes then go.
//
//   const Transports t(topo, routes, {});                 // NCCL's defaults
//   const Hop h = t.hop(0, 1);                             // two GeForce GPUs: SHM via host memory
//   h.kind == TransportKind::kShm;  h.route.path_class == PathClass::kPHB;  h.name == "SHM/direct/direct"
//
// A hop's route is what its bytes cross; `wire_factor` is what each payload byte costs on it
// (6/5 through an Intel root complex, topo.h INTEL_P2P_OVERHEAD). The channel search and the
// simulator both take hops from here, so that what the search counts is what flows use.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/nccl_release.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync {

// TransportOptions: NCCL's knobs that choose transports (NCCL 2.27 defaults when unset), and the
// release whose default P2P level applies.
struct TransportOptions {
  bool p2p_disable = false;                  // NCCL_P2P_DISABLE=1: no P2P between GPUs (P2P level LOC)
  std::optional<PathClass> p2p_level{};      // NCCL_P2P_LEVEL; unset: default_p2p_level
  bool shm_disable = false;                  // NCCL_SHM_DISABLE=1: no SHM; GPUs of one host use the network
  std::optional<PathClass> net_gdr_level{};  // NCCL_NET_GDR_LEVEL; unset: PXB
  bool ib_disable = false;                   // NCCL_IB_DISABLE=1: sockets, host memory, no GPUDirect RDMA
  bool pxn_disable = false;                  // NCCL_PXN_DISABLE=1: a GPU sends only through a NIC it reaches itself
  NcclRelease nccl{};                        // the NCCL release linked (scenario key nccl_version)
};

// default_p2p_level: the farthest path NCCL's P2P transport takes without NCCL_P2P_LEVEL, in
// `release`, between GPUs of a machine of `gpus` GPUs whose CPU is AMD's (`amd`) or Intel's
// (p2p.cpp cites each release's paths.cc).
PathClass default_p2p_level(NcclRelease release, bool amd, int gpus);

enum class TransportKind { kP2P, kShm, kNet };

// Hop: how one hop of a channel moves: the transport, its name as NCCL's INFO log says it, the
// links crossed and what a payload byte costs on them.
struct Hop {
  TransportKind kind = TransportKind::kP2P;
  std::string name;  // "P2P/CUMEM", "P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/GDRDMA", "NET/IB", "NET/Socket"
  Route route;
  // wire_factor: the link bytes one payload byte costs the flows (6/5 for GPU peer traffic through
  // an Intel root complex: intel_overhead); search_factor: what NCCL's search counts it as when it
  // plans the channels' speed (search.cc followPath: 6/5 on every PHB path from a GPU through an
  // Intel CPU, SHM's too). They differ for SHM and for NET legs staged in host memory: those bytes
  // go between a GPU (or NIC) and host memory, not peer to peer through the root complex, so they
  // move at the PCIe path's own rate.
  double wire_factor = 1;
  double search_factor = 1;
  // read: the receiver's SMs load the data from the sender's memory (NCCL's P2P read mode, used
  // for the Simple protocol between two A100s over NVLink) instead of the sender storing it.
  bool read = false;
  // duplex_cap_Bps: SHM between GPUs before Ada/Hopper only: what one GPU moves each way, all its
  // channels together, while it both stores into host memory and loads from it (kShmDuplexBps);
  // infinite otherwise.
  double duplex_cap_Bps = std::numeric_limits<double>::infinity();
  // NET hops only: NCCL's path type between each end's GPU and its NIC, the worse of the two
  // (paths.cc: the route's own class with GPUDirect RDMA; through the CPU, PHB or worse, where
  // addInterStep stages the bytes in host memory), and whether the sender goes by PXN (PATH_PXN).
  // NCCL's graph keeps the worst as typeInter, which LL128's default depends on (tuning.cc).
  PathClass nic_class = PathClass::kPIX;
  bool pxn = false;
};

// kShmDuplexBps: NCCL's SHM transport (shm.cc: the sender's SMs store into a buffer in host
// memory, the receiver's SMs load it back) moves about 4 GB/s each way per GPU on GPUs before Ada
// and Hopper (compute capability below 8.9) once each GPU both sends and receives through host
// memory, whatever the PCIe generation, and some 10-11 GB/s when the traffic goes one way. NCCL's
// maintainer: "On 2 GPUs, Broadcast and Reduce are unidirectional [...] contrary to other
// operations which are bidirectional. Some components (in particular some CPUs) do not handle
// bidirectional traffic well" (NVIDIA/nccl#384, PCIe Gen3: allreduce 3.9, allgather 3.17,
// broadcast 10.31 GB/s). Alike in validation/published: two RTX 2080 Ti behind a Gen3 switch
// (4.0 / 3.2-3.8 / 11.1), two A40 on Gen4 root ports (3.6-4.0), four A100 of a DGX A100 (5.2),
// and the DDP steps of two RTX 3090 and two TITAN RTX with NCCL_P2P_DISABLE=1. Eight RTX 4090s
// on EPYC 7542 root ports (stock driver: 15 GB/s) and four H100s of a DGX H100 (24) show no such limit beyond the
// PCIe path, so it is not applied from compute capability 8.9 on. An empirical constant over
// these platforms, not a per-case fit: which part (the GPU's outstanding loads from host memory,
// the root complex ordering them behind the same GPU's posted writes) sets it is not published.
inline constexpr double kShmDuplexBps = 4.0e9;
inline constexpr int kShmDuplexUntilSm = 89;  // the limit holds below compute capability 8.9

// MachineIndex: per host, the communicator's GPUs on it; per vertex, its CPU (Routes::host_cpu, filled on use).
struct MachineIndex {
  std::unordered_map<std::string, int> gpus;
  mutable std::unordered_map<VertexId, VertexId> cpu_of;
};

// TransportContext: what a transport decides from.
struct TransportContext {
  const Topology& topo;
  const Routes& routes;
  const TransportOptions& options;
  const MachineIndex& machines;
  int gpus_in_machine(int rank) const;
  // cpu_of: the CPU socket whose root complex a GPU (or NIC) sits under: its host memory
  // (Routes::host_cpu; ConfigError when its host has none it reaches); has_cpu: whether it has one.
  VertexId cpu_of(VertexId v) const;
  bool has_cpu(VertexId v) const { return machines.cpu_of.contains(v) || routes.host_cpu(v).has_value(); }
  // via_cpu: a -> the CPU socket of a -> b, the path of data staged in a's host memory.
  Route via_cpu(VertexId a, VertexId b) const;
  // intel_overhead: 6/5 when a route is of class PHB through an Intel CPU (NCCL counts a GPU's
  // PCIe traffic through an Intel root complex at 6/5: 64 B TLPs), else 1.
  double intel_overhead(const Route& r) const;
};

// Transport: one of NCCL's transports.
class Transport {
 public:
  virtual ~Transport() = default;
  // connect: the hop from GPU `from` to GPU `to` (ranks) if this transport can carry it.
  virtual std::optional<Hop> connect(const TransportContext& ctx, int from, int to) const = 0;
};

// The three transports, one per file (p2p.cpp, shm.cpp, net.cpp).
std::unique_ptr<Transport> make_p2p_transport();
std::unique_ptr<Transport> make_shm_transport();
std::unique_ptr<Transport> make_net_transport();

// NicLeg: the leg between a GPU and a NIC of its host as NCCL's NET transport takes it: directly
// with GPUDirect RDMA (`gdr`: the path no farther than NCCL_NET_GDR_LEVEL, PXB by default, and
// NCCL_IB_DISABLE unset), else staged in the GPU's host memory through its CPU (net.cpp). A GPU
// that sends through a NIC behind its CPU may go by PXN instead (`pxn`): over NVLink into the
// memory of the NIC's own GPU, which the NIC reads by GPUDirect RDMA (paths.cc, NCCL 2.12 on).
struct NicLeg {
  Route route;
  bool gdr = false;
  bool pxn = false;
};

// Transports: NCCL's transports for one topology and set of knobs, tried in order.
class Transports {
 public:
  // ranks: the communicator's ranks, the topology's first GPUs (0: all of them). NCCL's system
  // holds only the communicator's GPUs of each machine (ncclTopoGetSystem adds a peer's GPU when it
  // shares the host), so rules that count a machine's GPUs (default_p2p_level) count those.
  Transports(const Topology& topo, const Routes& routes, TransportOptions options, int ranks = 0);
  ~Transports();
  Transports(const Transports&) = delete;
  Transports& operator=(const Transports&) = delete;

  const TransportOptions& options() const { return options_; }
  // hop: how GPU `from` sends to GPU `to`: the first transport that connects them. Between
  // machines the NET transport goes through each GPU's own NIC (Routes::nic_of).
  Hop hop(int from, int to) const;
  // net_hop: between machines through the given NICs (a ring channel's), the fabric leg ECMP by
  // `flow`.
  Hop net_hop(int from, int to, VertexId nic_from, VertexId nic_to, std::uint64_t flow) const;
  // nic_leg: GPU `rank` to `nic` (out) or back, as the NET transport carries it (NicLeg).
  NicLeg nic_leg(int rank, VertexId nic, bool out) const;

 private:
  const Topology& topo_;
  const Routes& routes_;
  TransportOptions options_;
  MachineIndex machines_;
  std::vector<std::unique_ptr<Transport>> order_;  // P2P, SHM, NET
};

// nic_leg: GPU `rank` to `nic` (out) or back (in).
NicLeg nic_leg(const TransportContext& ctx, int rank, VertexId nic, bool out);

// net_hop_through: the NET transport's hop through given NICs (net.cpp).
Hop net_hop_through(const TransportContext& ctx, int from, int to, VertexId nic_from, VertexId nic_to,
                    std::uint64_t flow);

// transport_kind_name: "P2P", "SHM", "NET".
std::string_view transport_kind_name(TransportKind k);

}  // namespace gradsync
