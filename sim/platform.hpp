// platform.hpp: the SimGrid platform of a cluster topology, built with the S4U API (no XML).
//
// Every GPU becomes a SimGrid host and every CPU socket a host too (host memory, the end of
// host-to-device copies). Every topology link becomes a split-duplex SimGrid link: each
// direction has the link's total bandwidth (bw x links) and its latency, so traffic one way does
// not slow traffic the other way, as on NVLink, PCIe and InfiniBand. Switches, NVSwitches and NICs
// are not SimGrid objects: routes list the links they join. Routes follow the topology's
// (topologies/routes.hpp) and are looked up the first time a flow takes them, then kept, so the
// platform costs O(hosts + links) and what the flows use, not a table of n^2 routes. Between
// machines a GPU's traffic leaves and enters by its own NIC (Routes::nic_of) unless a route is
// pinned for the pair (a ring channel's NICs); the path among equal-latency ones (a fat-tree's
// spines) is picked by the destination, as InfiniBand's destination-based routing spreads
// traffic over the spines.
//
//   auto engine = create_engine();
//   const Platform p = build_platform(topo, routes);
//   simgrid::s4u::Comm::sendto(p.gpus[0], p.gpus[1], 1 << 20);   // inside an actor
#pragma once

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <functional>
#include <vector>

#include "topologies/routes.hpp"
#include "topologies/topology.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync::sim {

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;         // by rank: kernels, copies
  std::vector<simgrid::s4u::Host*> host_memory;  // by rank: the CPU socket nearest the GPU
  // nccl: by rank, the GPU as NCCL's endpoint: flows between two of these take NCCL's transport
  // for the pair (topologies/transports: P2P, SHM through host memory, NET), while flows between
  // `gpus` (peer copies) take the topology's route. The two differ where NCCL stages through host
  // memory (GeForce boards, NCCL_P2P_DISABLE) and between machines.
  std::vector<simgrid::s4u::Host*> nccl;
  std::vector<simgrid::s4u::Link*> links;  // by topology link index
  // pin_route makes NCCL flows from GPU `from` to GPU `to` (ranks) take `hop` instead of the
  // transports' choice: a ring channel's hop between machines goes through the channel's NICs
  // (NCCL's search picks one NIC per channel and node, the same in and out). The first hop pinned
  // (or looked up) for a pair stays; returns whether this one did.
  std::function<bool(int from, int to, const Hop& hop)> pin_route;
  // nccl_wire_factor: what a payload byte of an NCCL flow from `from` to `to` costs on its links
  // (the hop's wire factor: 6/5 through an Intel root complex).
  std::function<double(int from, int to)> nccl_wire_factor;
};

// build_platform creates the platform in the process's engine (create_engine first) and seals it.
// NCCL flows take `transports`' hops (NCCL's defaults when null; kept by reference otherwise).
Platform build_platform(const Topology& topo, const Routes& routes, const Transports* transports = nullptr);

}  // namespace gradsync::sim
