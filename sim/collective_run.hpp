// collective_run.hpp: NCCL's collective algorithms as SimGrid flows among the members of one
// collective call, at step fidelity (inside sim/; SimCluster creates one per call).
//
//   CollectiveRun run(links, Collective::kAllreduce, bytes, /*root=*/-1, /*members=*/8, choice);
//   run.run(me);   // on member me's comm-stream actor; returns when me's part is done
//
// Algorithms (sim/README.md, "How a simulated step runs"): ring steps for allreduce,
// reduce-scatter and allgather; NCCL's pipelined chain along each channel's ring for broadcast
// and reduce; the double binary tree (a chain inside each node) for allreduce across nodes. Each
// member sleeps NCCL's base latency once and each hop's latency before its flow.
#pragma once

#include <simgrid/s4u/Comm.hpp>

#include <functional>
#include <memory>

#include "core/backend.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

// CollectiveLinks: what the algorithms need from the cluster.
struct CollectiveLinks {
  const Topology* topo = nullptr;
  const Channels* channels = nullptr;  // rings and trees over members 0..k-1 (= ranks)
  // send starts a flow of `wire` bytes carrying `bytes` of payload from one member to another.
  std::function<simgrid::s4u::CommPtr(int from, int to, double bytes, double wire)> send;
  // guard wraps the body of a helper actor (per-channel and tree actors) so that its errors
  // reach the cluster.
  std::function<std::function<void()>(std::function<void()>)> guard;
};

class CollectiveRun {
 public:
  CollectiveRun(CollectiveLinks links, Collective c, Bytes bytes, int root, int members, CollectiveChoice choice);
  ~CollectiveRun();
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

  // run does member `me`'s part of the collective, blocking the calling actor until it is done
  // (every chunk it sends sent, every chunk it expects arrived).
  void run(int me);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace gradsync::sim
