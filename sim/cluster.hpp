// cluster.hpp: the SimGrid engine behind the backend interfaces of core/backend.hpp. The same
// DdpStep, DpStep and Reducer that run on hardware run here unchanged; what they issue takes
// simulated time on a simulated cluster.
//
//   auto engine = create_engine();                  // once per process
//   SimCluster c(topo, routes, /*gpus=*/8, {});
//   for (int r = 0; r < 8; ++r)
//     c.spawn(r, [&, r] { DdpStep s(model, costs, opts, 16, c.host({r}), c.device(r), c.world_group(r)); ... });
//   c.run();                                        // rethrows the first error of any actor
//   c.trace();                                      // every event, as the recording backend names them
//
// How it maps onto SimGrid:
//   - each rank's GPU is a SimGrid host of the platform (sim/platform.hpp); ranks are the first
//     `gpus` GPUs of the topology;
//   - each (rank, stream) runs its work in order. A kernel starts when the stream, what it waits
//     for and the host that issued it are all there and lasts its cost-model time; it is placed
//     on the stream's timeline when issued, without a SimGrid activity, or (issued behind a
//     collective that has not ended yet) by the stream's actor once that end is known. A copy is
//     a flow along the route between the two GPUs (or from host memory), staged through host
//     memory where the GPUs have no peer access, run by the stream's actor at its start time;
//   - a collective runs on the comm stream of every member after that member's compute stream
//     reaches the point where it was called (the comm stream waits for the compute stream's last
//     work, as c10d's NCCL stream does), FIFO behind the previous collective;
//   - host work (HostOp, kernel launch time) is time of the calling actor, under the process's
//     GIL when it holds it; launch time is added up and slept only where the thread blocks or
//     reads the clock (work it issues meanwhile is stamped with its own time); Host::parallel
//     runs one actor per thread and joins them.
//
// Collectives are NCCL's algorithms among the members over the simulated network, at step
// fidelity (every ring step and pipeline chunk its own flow per channel, hop latencies slept
// explicitly, NCCL's base latency once) or aggregate fidelity (each phase one flow per member
// and channel; sim/collective_run.hpp):
//   ring allreduce        reduce-scatter then allgather: 2(k-1) steps of S/(k C) per channel
//   ring reduce-scatter   k-1 steps of S/(k C);  ring allgather: k-1 steps of S/C (S per rank)
//   broadcast, reduce     NCCL's pipelined ring: a chain from (to) the root along each channel's
//                         ring, chunks of the protocol's chunk size, each hop forwarding chunk j
//                         as soon as it has it and its previous send is done
//   tree allreduce        double binary tree over nodes, a chain in each node: chunks reduced up
//                         and broadcast down, both pipelined (multi-node only)
// A member's channels advance in lock step: step s of every channel before step s+1 of any.
// The algorithm and protocol are NCCL's choice (sim/nccl_model.hpp) unless forced; the protocol
// sets the bytes on the wire (LL 2x, LL128 128/120) and the hop latencies.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/calibration.hpp"
#include "core/result.hpp"
#include "core/trace.hpp"
#include "sim/collective_run.hpp"
#include "sim/nccl_model.hpp"
#include "sim/platform.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

struct SimOptions {
  CollectiveRequest nccl;  // NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE
  // NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE, NCCL_NET_GDR_LEVEL, NCCL_IB_DISABLE
  TransportOptions transport;
  // fidelity (sim/collective_run.hpp): step, aggregate, or auto (aggregate for calls that would
  // issue more than kAutoAggregateFlows flows at step fidelity, or that would take an
  // iteration's step-fidelity flows past kAutoIterationFlows).
  Fidelity fidelity = Fidelity::kAuto;
  int max_channels = 0;       // NCCL_MAX_NCHANNELS: use at most this many of the rings found (0: all)
  int min_channels = 0;       // NCCL_MIN_NCHANNELS: at least this many, the rings repeated (0: as found)
  int nvls_max_channels = 0;  // NCCL_MAX_CTAS: NVLS's blocks at most (0: NCCL's default)
  int nvls_min_channels = 0;  // NCCL_MIN_CTAS: NVLS's blocks at least (0: NCCL's default)
  // fluid: aggregate calls whose members span machines are solved (sim/fluid.hpp) rather than
  // run as one SimGrid flow each; false is for tests that compare the two.
  bool fluid = true;
  // calibration: measured times (core/calibration.hpp). A collective whose (operation, member
  // count) it measured starts once every member has reached it and takes the measured time; a
  // peer or host copy takes the measured copy time. Bytes are still counted per GPU (a
  // collective's as nccl-tests' bus bytes); link bytes are not, no flow runs. Not owned.
  const Calibration* calibration = nullptr;
  // mirrors: per rank, the ranks it stands for (empty for most): a DDP run whose ranks are alike
  // (sim/simulate.cpp: mirror_plan) runs one rank of each kind; the world group's calls count
  // each standing rank as itself and its mirrors, joining when it does (their calls are solved:
  // every member ends when the call does), and its copies from host memory run its mirrors'
  // copies beside it. Where a mirror's part would differ (a copy that ends later, a collective
  // that would slow its compute differently, a call that is not solved), MirrorBroken.
  std::vector<std::vector<int>> mirrors;
  // world_channels: NCCL's channels over every rank as build_channels finds them (before
  // NCCL_MIN/MAX_NCHANNELS), when the caller found them already (mirror_plan): not searched again.
  std::shared_ptr<const Channels> world_channels;
  // slowest_gpu: how much longer every device's SM-bound kernels take (ComputeLoad::sm_s) than the
  // cost model's median GPU: the pace of the slowest GPU of a synchronous job
  // (models/gpu_spread.hpp slowest_gpu_factor). DRAM-bound kernels and host time keep theirs.
  double slowest_gpu = 1.0;
};

// CollectiveRecord: one collective as it ran: first member's start to last member's end.
struct CollectiveRecord {
  std::string name;
  Collective collective = Collective::kAllreduce;
  Bytes bytes = 0;
  int members = 0;
  CollectiveChoice choice;
  double start_s = 0;
  double end_s = 0;
  int iteration = 0;
  Fidelity fidelity = Fidelity::kStep;  // how it ran: step or aggregate
};

// LinkTraffic: bytes on one direction of one link, in all and per event name (a collective call,
// a phase of copies: what the link carried for it). by_event holds each event once, in name
// order, its name a view into the cluster's own (valid while the cluster lives): a map per link
// cost 12% of a 1,024-GPU llama2-7b run (226 calls over thousands of links an iteration).
struct LinkTraffic {
  std::string name;
  double bandwidth_Bps = 0;
  double bytes = 0;
  std::vector<std::pair<std::string_view, double>> by_event;
};

class SimCluster {
 public:
  // SimCluster builds the platform of `topo` in the process's engine (create_engine first) for
  // ranks 0..gpus-1. ConfigError when the topology has fewer GPUs.
  SimCluster(const Topology& topo, const Routes& routes, int gpus, SimOptions opts = {});
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  int gpus() const;
  Device& device(int rank);
  // host: the Host of one process that drives `devices` (its iteration events go to them).
  Host& host(const std::vector<int>& devices);
  // world_group: rank's view of the group of all ranks (DDP; one process per rank).
  ProcessGroup& world_group(int rank);
  // local_group: one process's group over devices 0..m-1 (DataParallel), root = device index.
  ProcessGroup& local_group(int m);
  // channels: NCCL's rings and trees for ranks 0..m-1.
  const Channels& channels(int m);

  // spawn: a process's main thread, an actor on rank's GPU host running fn.
  void spawn(int rank, std::function<void()> fn);
  // run: runs the simulation to its end; rethrows the first exception an actor raised.
  void run();

  double now() const;
  const Trace& trace() const;
  // take_trace: the trace, moved out (trace() is then empty): a 1,024-GPU run's million events are
  // not copied.
  Trace take_trace();
  const std::vector<CollectiveRecord>& collectives() const;
  // Payload bytes of `iteration` (0: construction) that left / entered a GPU: copies and
  // collective transfers; host memory counts as outside.
  double bytes_out(int rank, int iteration) const;
  double bytes_in(int rank, int iteration) const;
  // traffic: the same by event name ("dp:gather", "allreduce:bucket3", ...).
  const std::map<std::string, Traffic>& traffic(int iteration) const;
  // link_traffic: wire bytes of `iteration` on each direction of each link that carried any
  // ("<link>_UP" is the topology link's forward direction), sorted by name.
  std::vector<LinkTraffic> link_traffic(int iteration) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradsync::sim
