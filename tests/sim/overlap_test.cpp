// overlap_test.cpp: a compute kernel beside an NCCL kernel in the SimGrid engine: its stream ends
// later by exactly what models/contention.hpp says the overlapped part loses.
#include <gtest/gtest.h>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/trace.hpp"
#include "models/contention.hpp"
#include "sim/cluster.hpp"
#include "sim/engine.hpp"
#include "topologies/dot_parser.hpp"

namespace gradsync::sim {
namespace {

// Two A100s on one NVSwitch (and a CPU for host memory).
constexpr const char* kPair = R"(graph pair {
  "cpu" [kind="cpu", host="h"];
  "sw" [kind="nvswitch", host="h"];
  "gpu0" [kind="gpu", model="a100-sxm4-80gb", host="h"];
  "gpu1" [kind="gpu", model="a100-sxm4-80gb", host="h"];
  "gpu0" -- "sw" [type="nvlink", bw="25GBps", links="4", latency="500ns"];
  "gpu1" -- "sw" [type="nvlink", bw="25GBps", links="4", latency="500ns"];
  "gpu0" -- "cpu" [type="pcie", bw="32GBps", latency="1us"];
  "gpu1" -- "cpu" [type="pcie", bw="32GBps", latency="1us"];
}
)";

struct Outcome {
  double kernel_end = 0;  // when the compute stream is free after the long kernel (the next op starts)
  double coll_start = 0, coll_end = 0;
  double works = 0;     // the part of the call that counts: NCCL's own time for it, ending with it
  double slowdown = 0;  // the slowdown events' time on rank 0
  double in = 0, out = 0;
};

// Each rank issues a 64 MiB allreduce, then a 10 ms kernel of `load` that overlaps it, then a
// kernel of no time that waits for the stream.
Outcome run(const ComputeLoad& load) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(kPair, "pair.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 2, {});
  Outcome out;
  for (int r = 0; r < 2; ++r) {
    ProcessGroup* pg = &cluster.world_group(r);
    Device* dev = &cluster.device(r);
    cluster.spawn(r, [pg, dev, load] {
      WorkPtr ar = pg->allreduce({"allreduce:bucket0", 64 << 20, DType::kFloat32, 0});
      ComputeOp big{"bwd:layer", OpKind::kConv, 0, 0, 1, 10e-3, 0, -1, load};
      dev->compute(big);
      // Issued once the allreduce is done (a kernel issued before keeps the place it was given).
      ar->wait();
      ComputeOp probe{"probe", OpKind::kMemory, 0, 0, 1, 0, 0, -1, {}};
      dev->compute(probe);
      dev->synchronize();
    });
  }
  cluster.run();
  for (const TraceEvent& e : cluster.trace().events) {
    if (e.rank != 0) continue;
    if (e.name == "probe") out.kernel_end = e.start_s;
    if (e.name == "allreduce:bucket0") {
      out.coll_start = e.start_s;
      out.coll_end = e.end_s;
    }
    if (e.name == slowdown_event("allreduce:bucket0")) out.slowdown += e.duration_s();
  }
  const CollectiveRecord& rec = cluster.collectives().at(0);
  out.works = std::min(out.coll_end - out.coll_start, rec.choice.predicted_s + rec.choice.sync_s);
  out.in = cluster.bytes_in(0, 0);
  out.out = cluster.bytes_out(0, 0);
  return out;
}

TEST(Overlap, SmBoundComputeBesideAllreduceLosesTheHeldSms) {
  ComputeLoad load;
  load.gpu_s = 10e-3;
  load.sm_s = 10e-3;
  load.sm_held_s = 12e-3;  // 1.2x with NCCL's blocks holding SMs
  const Outcome r = run(load);
  ASSERT_GT(r.coll_end - r.coll_start, 0);
  ASSERT_LT(r.coll_end, 10e-3);  // the whole allreduce runs beside the kernel
  EXPECT_GT(r.works, 0.95 * (r.coll_end - r.coll_start));
  const double expected = 0.2 * r.works;
  EXPECT_NEAR(r.slowdown, expected, 1e-9);
  EXPECT_NEAR(r.kernel_end, 10e-3 + expected, 1e-9);
}

// The host issues the whole backward at once, far ahead of the GPU: the time the first kernel
// loses beside the allreduce lands right after it, before the second, which (and the gradient
// that a later bucket waits for) it delays, not after the last kernel of the step.
TEST(Overlap, TheLostTimeDelaysTheNextKernelNotTheEndOfTheQueue) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(kPair, "pair.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 2, {});
  ComputeLoad load;
  load.gpu_s = 10e-3;
  load.sm_s = 10e-3;
  load.sm_held_s = 12e-3;
  for (int r = 0; r < 2; ++r) {
    ProcessGroup* pg = &cluster.world_group(r);
    Device* dev = &cluster.device(r);
    cluster.spawn(r, [pg, dev, load] {
      WorkPtr ar = pg->allreduce({"allreduce:bucket0", 64 << 20, DType::kFloat32, 0});
      for (const char* name : {"bwd:first", "bwd:second", "bwd:third"})
        dev->compute({name, OpKind::kConv, 0, 0, 1, 10e-3, 0, -1, load});
      ar->wait();
      dev->synchronize();
    });
  }
  cluster.run();
  double first_end = 0, second_start = 0, third_end = 0, slowdown_start = -1, slowdown = 0, coll = 0;
  for (const TraceEvent& e : cluster.trace().events) {
    if (e.rank != 0) continue;
    if (e.name == "bwd:first") first_end = e.end_s;
    if (e.name == "bwd:second") second_start = e.start_s;
    if (e.name == "bwd:third") third_end = e.end_s;
    if (e.name == "allreduce:bucket0") coll = e.end_s - e.start_s;
    if (e.name == slowdown_event("allreduce:bucket0")) {
      slowdown_start = e.start_s;
      slowdown += e.duration_s();
    }
  }
  const CollectiveRecord& rec = cluster.collectives().at(0);
  const double works = std::min(coll, rec.choice.predicted_s + rec.choice.sync_s);
  ASSERT_GT(works, 0);
  EXPECT_NEAR(slowdown, 0.2 * works, 1e-9);
  EXPECT_NEAR(slowdown_start, first_end, 1e-12);
  EXPECT_NEAR(second_start, first_end + slowdown, 1e-12);
  EXPECT_NEAR(third_end, 30e-3 + slowdown, 1e-9);
}

TEST(Overlap, MemoryBoundComputeSharesDramWithNcclsCopies) {
  ComputeLoad load;
  load.gpu_s = 10e-3;
  load.hbm_s = 10e-3;
  load.hbm_demand = 0.99;
  const Outcome r = run(load);
  const double d = r.works;
  const double share = nccl_dram_bytes(r.in, r.out, true) / (d * gpu_spec("a100-sxm4-80gb").memory_bandwidth_Bps);
  ASSERT_GT(share, 0.02);
  const double expected = d * (memory_stretch(0.99, share) - 1);
  EXPECT_GT(expected, 0);
  EXPECT_NEAR(r.slowdown, expected, 1e-9);
  EXPECT_NEAR(r.kernel_end, 10e-3 + expected, 1e-9);
}

TEST(Overlap, ComputeWithoutALoadDoesNotSlow) {
  const Outcome r = run(ComputeLoad{});
  EXPECT_EQ(r.slowdown, 0);
  EXPECT_NEAR(r.kernel_end, 10e-3, 1e-12);
}

// compute_run (DDP's no_sync micro-steps): the ops as one event that ends, with the host, exactly
// when issuing them one by one does (core/launch_queue.hpp); a host-bound op included.
TEST(ComputeRun, EndsWhereTheOpsOneByOneEnd) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(kPair, "pair.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 2, {});
  std::vector<ComputeOp> ops;
  for (int i = 0; i < 5; ++i) {
    ComputeOp op{"fwd:layer" + std::to_string(i), OpKind::kMemory, 0, 1e6 * (i + 1), 2, 1e-3 * (i + 1), 0, -1, {}};
    op.host_s = i == 2 ? op.time_s : 2e-4;  // the third is host-bound: its launches take all its time
    op.load.gpu_s = i == 2 ? op.time_s / 4 : op.time_s;
    ops.push_back(op);
  }
  double host_done[2] = {0, 0};
  for (int r = 0; r < 2; ++r) {
    Device* dev = &cluster.device(r);
    cluster.spawn(r, [dev, r, &ops, &host_done] {
      if (r == 0) {
        for (const ComputeOp& op : ops) dev->compute(op);
      } else {
        dev->compute_run(ops, "fwd:micro-step 1 of 2 (no_sync)");
      }
      dev->synchronize();
      host_done[r] = simgrid::s4u::Engine::get_clock();
    });
  }
  cluster.run();
  double one_by_one_end = 0, sum = 0;
  int merged = 0;
  for (const TraceEvent& e : cluster.trace().events) {
    if (e.rank == 0 && e.stream == Stream::kCompute) {
      one_by_one_end = std::max(one_by_one_end, e.end_s);
      sum += e.duration_s();
    }
  }
  for (const TraceEvent& e : cluster.trace().events) {
    if (e.rank == 1 && e.stream == Stream::kCompute) {
      ++merged;
      EXPECT_EQ(e.name, "fwd:micro-step 1 of 2 (no_sync)");
      EXPECT_NEAR(e.end_s, one_by_one_end, 1e-12);
      EXPECT_NEAR(e.duration_s(), sum, 1e-12);
      EXPECT_EQ(e.bytes, 15000000u);
    }
  }
  EXPECT_EQ(merged, 1);
  // Launched by a host 0.2 ms per op (3 ms for the third): the first starts at its first kernel's
  // launch (0.1 ms); the third's 0.75 ms of GPU waits for no launch (its last, at 0.4 + 3 ms, may
  // end at 3.775 ms, before the GPU's 3.1 + 0.75), so the GPU never idles: 1 + 2 + 0.75 + 4 + 5.
  EXPECT_NEAR(sum, 12.75e-3, 1e-12);
  EXPECT_NEAR(one_by_one_end, 0.1e-3 + 12.75e-3, 1e-12);
  EXPECT_NEAR(host_done[1], host_done[0], 1e-12);
}

// The slowest of the job's GPUs (SimOptions::slowest_gpu): its SM-bound kernels take that much
// longer, DRAM-bound ones and the host's time do not, and an op without a load (a measured time)
// keeps its time.
TEST(SlowestGpu, StretchesOnlyTheSmBoundPartOfAKernel) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(kPair, "pair.dot");
  const Routes routes(topo);
  SimOptions so;
  so.slowest_gpu = 1.1;
  SimCluster cluster(topo, routes, 2, so);
  for (int r = 0; r < 2; ++r) {
    Device* dev = &cluster.device(r);
    cluster.spawn(r, [dev] {
      ComputeLoad mixed;  // 4 ms SM-bound, 6 ms DRAM-bound
      mixed.gpu_s = 10e-3;
      mixed.sm_s = 4e-3;
      mixed.sm_held_s = 4e-3;
      mixed.hbm_s = 6e-3;
      mixed.hbm_demand = 0.8;
      dev->compute({"mixed", OpKind::kConv, 0, 0, 1, 10e-3, 0, -1, mixed});
      ComputeLoad light;  // host-bound: 5 ms of GPU under 12 ms of launches
      light.gpu_s = 5e-3;
      light.sm_s = 5e-3;
      light.sm_held_s = 5e-3;
      dev->compute({"hostbound", OpKind::kMatmul, 0, 0, 100, 12e-3, 12e-3, -1, light});
      dev->compute({"measured", OpKind::kConv, 0, 0, 1, 3e-3, 0, -1, {}});
      dev->synchronize();
    });
  }
  cluster.run();
  std::map<std::string, double> took;
  for (const TraceEvent& e : cluster.trace().events)
    if (e.rank == 0) took[e.name] = e.duration_s();
  EXPECT_NEAR(took.at("mixed"), 10e-3 + 0.1 * 4e-3, 1e-12);  // 10.4 ms
  EXPECT_NEAR(took.at("measured"), 3e-3, 1e-12);
  // 5.5 ms of GPU work still fits under the host's 12 ms: the op ends with its last launch.
  EXPECT_LE(took.at("hostbound"), 12e-3 + 1e-12);
}

}  // namespace
}  // namespace gradsync::sim
