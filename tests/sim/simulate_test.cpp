// simulate_test.cpp: DP and DDP steps on the SimGrid engine: the same events as the recording
// backend, overlap where compute hides communication and none where it cannot, DP's GPU0 hotspot,
// scenario files. One SimGrid engine per process: each test runs in its own process.
#include "sim/simulate.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "core/comm_hook.hpp"
#include "core/ddp_step.hpp"
#include "core/dp_step.hpp"
#include "core/error.hpp"
#include "core/nccl_knobs.hpp"
#include "core/scenario_keys.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/step_costs.hpp"
#include "reports/report.hpp"
#include "sim/engine.hpp"
#include "tests/support/small_scenario.hpp"
#include "tests/support/recording_backend.hpp"
#include "topologies/generators.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync::sim {
namespace {

using testing_support::small_scenario;

using Sequences = std::map<std::pair<int, Stream>, std::vector<std::string>>;

// Event names per (rank, stream), in order.
// sequences: per rank and stream, the event names in order; without the simulator's own "wait:"
// events (a collective's wait for its last member, which a recording backend does not time).
Sequences sequences(const Trace& t, int only_rank = -1) {
  Sequences s;
  for (const TraceEvent& e : t.events)
    if ((only_rank < 0 || e.rank == only_rank) && !is_wait_event(e.name)) s[{e.rank, e.stream}].push_back(e.name);
  return s;
}

constexpr int kIterations = 3;

// nccl-tests' bytes for a requested size (common.cu setupArgs; all_gather.cu and
// reduce_scatter.cu GetCollByteCount since nccl-tests 2.13.12): whole floats; for allgather and
// reducescatter each rank's share a whole number of 16 bytes, 0 included.
TEST(NcclTestsBytes, WholeFloatsAndSixteenBytesPerRankForShares) {
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllreduce, 7, 8), 4);
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllreduce, 3, 8), 0);
  EXPECT_EQ(nccl_tests_bytes(Collective::kBroadcast, 1 << 20, 6), 1 << 20);
  // 8 ranks: 64 B is 16 floats, 2 per rank, below 4: nothing; 128 B is 4 floats per rank.
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 64, 8), 0);
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 128, 8), 128);
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 255, 8), 128);
  // 6 ranks, 1 MiB: 262144 floats / 6 = 43690 per rank, 43688 a multiple of 4: 43688 x 6 x 4 B.
  EXPECT_EQ(nccl_tests_bytes(Collective::kReduceScatter, 1 << 20, 6), 43688.0 * 6 * 4);
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 1 << 20, 8), 1 << 20);
  // -d half: 2-byte elements, a share a multiple of 8 of them; -d double: of 2; -d int8: of 16.
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 64, 8, 2), 0);     // 32 halves, 4 per rank
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 128, 8, 2), 128);  // 8 per rank
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllgather, 200, 8, 8), 128);  // 25 doubles, 3 per rank -> 2
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllreduce, 7, 8, 1), 7);
  EXPECT_EQ(nccl_tests_bytes(Collective::kAllreduce, 7, 8, 8), 0);
}

TEST(SimulatedTrace, DdpHasTheRecordingBackendsEventsInTheSameOrderPerStream) {
  const Model m = load_model("resnet18");
  const StepModel model = to_step_model(m, Precision::kBF16, std::nullopt);
  const testing::FixedCostModel costs(model, 1e-5);
  DdpStepOptions opts;

  testing::RecordingEngine rec(1, 4);
  {
    DdpStep step(model, costs, opts, 8, rec.host(), rec.device(0), rec.ddp_group());
    step.construct();
    for (int it = 1; it <= kIterations; ++it) step.run_iteration(it);
  }

  auto engine = create_engine();
  const Topology topo = load_topology("dgx-a100");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 4, {});
  for (int r = 0; r < 4; ++r) {
    Host* host = &cluster.host({r});
    Device* dev = &cluster.device(r);
    ProcessGroup* pg = &cluster.world_group(r);
    cluster.spawn(r, [&, host, dev, pg] {
      DdpStep step(model, costs, opts, 8, *host, *dev, *pg);
      step.construct();
      for (int it = 1; it <= kIterations; ++it) step.run_iteration(it);
    });
  }
  cluster.run();
  const Sequences expected = sequences(rec.trace());
  const Sequences got = sequences(cluster.trace(), 0);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(got, expected);
  // Every rank ran the same stream sequences as rank 0.
  for (int r = 1; r < 4; ++r) {
    for (const auto& [key, names] : expected) {
      const std::pair<int, Stream> at{r, key.second};
      EXPECT_EQ(sequences(cluster.trace(), r)[at], names) << "rank " << r;
    }
  }
}

TEST(SimulatedTrace, DpHasTheRecordingBackendsEventsInTheSameOrderPerStream) {
  const Model m = load_model("gpt2");
  const StepModel model = to_step_model(m, Precision::kBF16, 128);
  const testing::FixedCostModel costs(model, 1e-5);
  DpStepOptions opts;
  const int n = 4;
  const std::int64_t global = 8;
  const int replicas = DpStep::replicas(global, n);

  testing::RecordingEngine rec(n, 1);
  {
    DpStep step(model, costs, opts, global, rec.host(), rec.devices(), rec.local_group(replicas));
    for (int it = 1; it <= kIterations; ++it) step.run_iteration(it);
  }

  auto engine = create_engine();
  const Topology topo = load_topology("dgx-a100");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, n, {});
  Host* host = &cluster.host({0, 1, 2, 3});
  std::vector<Device*> devices;
  for (int g = 0; g < n; ++g) devices.push_back(&cluster.device(g));
  ProcessGroup* group = &cluster.local_group(replicas);
  cluster.spawn(0, [&, host, devices, group] {
    DpStep step(model, costs, opts, global, *host, devices, *group);
    for (int it = 1; it <= kIterations; ++it) step.run_iteration(it);
  });
  cluster.run();
  EXPECT_EQ(sequences(cluster.trace()), sequences(rec.trace()));
}


// PowerSGD's state (error feedback and the factors) is in DDP's peak memory once a simulated
// iteration compresses, and only then.
TEST(Simulate, PowerSgdStateCountsOnceItCompresses) {
  Scenario s = small_scenario("resnet18", "pcie-4gpu", 2);
  s.iterations = 3;
  s.warmup = 1;
  const double plain = simulate_isolated(s, Strategy::kDDP).per_gpu[0].peak_memory_bytes;
  s.comm_hook = "powersgd:rank=1,start_iter=2";
  const double compressing = simulate_isolated(s, Strategy::kDDP).per_gpu[0].peak_memory_bytes;
  const StepModel m = to_step_model(load_model("resnet18"), Precision::kFP32, std::nullopt);
  std::vector<std::vector<std::int64_t>> shapes;
  for (std::size_t p : m.trainable()) shapes.push_back(m.params[p].shape);
  EXPECT_DOUBLE_EQ(compressing - plain, powersgd_state_bytes(parse_comm_hook(s.comm_hook), shapes, DType::kFloat32));
  EXPECT_GT(compressing - plain, static_cast<double>(m.gradient_bytes()));
  s.comm_hook = "powersgd:rank=1,start_iter=5";  // no simulated iteration compresses
  EXPECT_DOUBLE_EQ(simulate_isolated(s, Strategy::kDDP).per_gpu[0].peak_memory_bytes, plain);
}

// GPT-2 at B=16, T=1024 on NVSwitch: backward takes far longer than the buckets' allreduces,
// which hide behind it.
TEST(Simulate, AComputeBoundDdpStepOverlaps) {
  const StrategyResult r = simulate(small_scenario("gpt2", "dgx-a100", 8), Strategy::kDDP);
  EXPECT_GT(r.communication_s, 0);
  EXPECT_LT(r.exposed_communication_s, 0.5 * r.communication_s);
  EXPECT_GT(r.overlap, 0.5);
  EXPECT_GT(r.compute_s, r.communication_s);
  // Iteration 1 reduces everything in one bucket after backward: no gradient communication
  // overlaps compute. (The input's host-to-device copy may overlap the flattening of nanoGPT's
  // causal-mask buffer before its broadcast; that is all the overlap there is.)
  double h2d = 0;
  for (const TraceEvent& e : r.trace.events)
    if (e.rank == 0 && e.iteration == 1 && e.name == "h2d:input") h2d += e.end_s - e.start_s;
  EXPECT_LE(r.iterations.at(0).overlap_s, h2d + 1e-12);
  for (const TraceEvent& a : r.trace.events) {
    if (a.rank != 0 || a.iteration != 1 || a.name.rfind("allreduce:", 0) != 0) continue;
    for (const TraceEvent& c : r.trace.events)
      if (c.rank == 0 && c.stream == Stream::kCompute && c.end_s > a.start_s + 1e-12 && c.start_s < a.end_s - 1e-12)
        ADD_FAILURE() << c.name << " overlaps " << a.name;
  }
  EXPECT_GT(r.iteration_1_time_s, r.steady_iteration_time_s);
  // Each rank sends and receives 2(n-1)/n of the gradients per step (ring allreduce), and at most
  // the buffers once more: DDP broadcasts nanoGPT's twelve causal-mask buffers (broadcast_buffers)
  // before each forward, down a chain where every rank but the last forwards them.
  const StepModel sm = to_step_model(load_model("gpt2"), Precision::kBF16, 1024);
  const auto grads = static_cast<double>(sm.gradient_bytes());
  const auto buffers = static_cast<double>(sm.buffer_bytes());
  ASSERT_EQ(buffers, 12.0 * 1024 * 1024 * 4);
  for (const GpuResult& g : r.per_gpu) {
    EXPECT_GE(g.bytes_out, 2.0 * 7 / 8 * grads - 1e-9 * grads) << g.rank;
    EXPECT_LE(g.bytes_out, 2.0 * 7 / 8 * grads + buffers + 1e-9 * grads) << g.rank;
  }
  EXPECT_NEAR(r.per_gpu.front().bytes_out, 2.0 * 7 / 8 * grads + buffers, 1e-9 * grads);  // the root sends all
}

// GPT-2 with tiny batches over PCIe: communication dwarfs compute and cannot hide.
TEST(Simulate, ACommunicationBoundDdpStepDoesNotOverlap) {
  Scenario s = small_scenario("gpt2", "pcie-4gpu", 4);
  s.batch_per_gpu = 1;
  s.seq_len = 32;
  const StrategyResult r = simulate(s, Strategy::kDDP);
  EXPECT_GT(r.communication_s, 2 * r.compute_s);
  EXPECT_GT(r.exposed_communication_s, 0.5 * r.communication_s);
  EXPECT_LT(r.overlap, 0.5);
}

// clip_grad_norm_ runs between the reduced gradients and the optimizer: every steady step takes
// exactly its kernels' time longer (the closed form's difference), for DDP and DP alike.
TEST(Simulate, ClipGradNormLengthensEveryStepByItsKernels) {
  Scenario s = small_scenario("gpt2", "dgx-a100", 2);
  const StrategyResult ddp0 = simulate_isolated(s, Strategy::kDDP);
  const StrategyResult dp0 = simulate_isolated(s, Strategy::kDP);
  const double plain = closed_form_ddp(s).step_s;
  s.clip_grad_norm = true;
  const StrategyResult ddp1 = simulate_isolated(s, Strategy::kDDP);
  const StrategyResult dp1 = simulate_isolated(s, Strategy::kDP);
  const double clip = closed_form_ddp(s).step_s - plain;
  EXPECT_GT(clip, 0);
  EXPECT_NEAR(ddp1.steady_iteration_time_s - ddp0.steady_iteration_time_s, clip, 1e-9);
  EXPECT_NEAR(dp1.steady_iteration_time_s - dp0.steady_iteration_time_s, clip, 1e-9);
}

// The default precision is bf16 where the GPU has it and the release's autocast takes it (1.10
// on), else fp16.
TEST(Scenario, DefaultPrecisionFollowsTheRelease) {
  Scenario s = small_scenario("resnet18", "dgx-a100", 2);
  EXPECT_EQ(resolve_scenario(s).precision, "bf16");
  s.pytorch_version = "1.9";
  EXPECT_EQ(resolve_scenario(s).precision, "fp16");
  s.pytorch_version = "1.10";
  EXPECT_EQ(resolve_scenario(s).precision, "bf16");
}

// torchrun's --nnodes and --nproc-per-node: the world size they name, where it is the topology's
// first GPUs; a layout gradsync cannot place, or one that disagrees with gpus, is an error naming
// the key.
TEST(Scenario, TorchrunLayoutNamesTheWorld) {
  Scenario s = small_scenario("resnet18", "2x-dgx-a100-hdr", 0);
  s.iterations = 2;
  s.warmup = 1;
  s.nnodes = 2;
  const StrategyResult both = simulate_isolated(s, Strategy::kDDP);
  EXPECT_EQ(both.gpus, 16);
  s.nnodes = 0;
  s.nproc_per_node = 4;
  EXPECT_EQ(simulate_isolated(s, Strategy::kDDP).gpus, 4);
  auto error = [&](int nnodes, int nproc, int gpus) {
    Scenario t = s;
    t.nnodes = nnodes;
    t.nproc_per_node = nproc;
    t.gpus = gpus;
    try {
      simulate_isolated(t, Strategy::kDDP);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error(3, 0, 0), "nnodes 3: topology 2x-dgx-a100-hdr has 2 hosts");
  EXPECT_EQ(error(1, 9, 0), "nproc_per_node 9: host node0 of topology 2x-dgx-a100-hdr has 8 GPUs");
  EXPECT_EQ(error(2, 8, 12), "gpus 12 disagrees with nnodes 2 x nproc_per_node 8 = 16; give one or the other");
  EXPECT_NE(error(2, 4, 0).find("nproc_per_node 4 on 2 nodes: host node0 has 8 GPUs"), std::string::npos);
  EXPECT_EQ(error(2, 0, 12), "gpus 12 disagrees with nnodes 2: its first 2 hosts have 16 GPUs; give one or the other");
  // --nnodes alone takes every GPU of each node, as many as each has: 3 + 1 on unequal hosts.
  const std::string path = ::testing::TempDir() + "/unequal-hosts.dot";
  std::ofstream(path) << R"(graph g {
  a0 [kind="gpu", model="a100-pcie-80gb", host="a"]; a1 [kind="gpu", model="a100-pcie-80gb", host="a"];
  a2 [kind="gpu", model="a100-pcie-80gb", host="a"]; b0 [kind="gpu", model="a100-pcie-80gb", host="b"];
  ca [kind="cpu", host="a"]; cb [kind="cpu", host="b"];
  na [kind="nic", host="a"]; nb [kind="nic", host="b"]; sw [kind="switch"];
  a0 -- ca [type="pcie", bw="25GBps", latency="1us"]; a1 -- ca [type="pcie", bw="25GBps", latency="1us"];
  a2 -- ca [type="pcie", bw="25GBps", latency="1us"]; b0 -- cb [type="pcie", bw="25GBps", latency="1us"];
  na -- ca [type="pcie", bw="25GBps", latency="1us"]; nb -- cb [type="pcie", bw="25GBps", latency="1us"];
  na -- sw [type="infiniband", bw="25GBps", latency="1us"]; nb -- sw [type="infiniband", bw="25GBps", latency="1us"];
}
)";
  Scenario unequal = small_scenario("resnet18", path, 0);
  unequal.iterations = 2;
  unequal.warmup = 1;
  unequal.nnodes = 2;
  EXPECT_EQ(simulate_isolated(unequal, Strategy::kDDP).gpus, 4);
  unequal.nnodes = 1;
  EXPECT_EQ(simulate_isolated(unequal, Strategy::kDDP).gpus, 3);
}

// DataParallel funnels outputs and gradients through GPU0.
TEST(Simulate, DataParallelMakesGpu0AHotspot) {
  const StrategyResult r = simulate(small_scenario("gpt2", "dgx-a100", 4), Strategy::kDP);
  ASSERT_EQ(r.per_gpu.size(), 4u);
  for (int g = 1; g < 4; ++g) {
    EXPECT_GT(r.per_gpu[0].bytes_in, 2 * r.per_gpu[static_cast<std::size_t>(g)].bytes_in) << g;
    EXPECT_GT(r.per_gpu[0].peak_memory_bytes, r.per_gpu[static_cast<std::size_t>(g)].peak_memory_bytes) << g;
  }
  EXPECT_NEAR(r.iterations.at(0).time_s, r.iterations.at(1).time_s, 1e-9);  // every DP iteration alike
}

TEST(Simulate, DataParallelAcrossHostsIsSkippedWithTheReason) {
  const StrategyResult r = simulate(small_scenario("gpt2", "2x-dgx-a100-hdr", 16), Strategy::kDP);
  EXPECT_NE(r.skipped.find("span 2 hosts (node0, node1) (use --gpus 8 or fewer)"), std::string::npos) << r.skipped;
}

// DDP's static graph fails under no_sync() (PyTorch 1.13: "expect_autograd_hooks_ INTERNAL ASSERT
// FAILED" at the first no_sync backward; pytorch/pytorch#143580), which grad_accum runs all but the
// last micro-step under: refused for DDP, not for DataParallel, nor without accumulation.
TEST(Scenario, StaticGraphWithNoSyncAccumulationIsRefusedForDdp) {
  Scenario s;
  s.model = "resnet18";
  s.gpus = 2;
  s.static_graph = true;
  s.grad_accum = 4;
  try {
    (void)resolve_scenario(s, true);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("static_graph with grad_accum 4: DDP(static_graph=True) fails on the first "
                                          "backward under no_sync()",
                                          0),
              0u)
        << e.what();
  }
  EXPECT_NO_THROW((void)resolve_scenario(s, false));
  s.grad_accum = 1;
  EXPECT_NO_THROW((void)resolve_scenario(s, true));
}

TEST(Scenario, AFileSetsKeysAndRejectsUnknownOnesWithTheLine) {
  const auto dir = std::filesystem::temp_directory_path() / "gradsync-scenario-test";
  std::filesystem::create_directories(dir);
  const auto good = dir / "good.yaml";
  std::ofstream(good) << "model: resnet50\ngpus: 4\nbucket_cap_mb: 50\nstatic_graph: true\n";
  const Scenario s = read_scenario_file(good.string());
  EXPECT_EQ(s.model, "resnet50");
  EXPECT_EQ(s.gpus, 4);
  EXPECT_EQ(s.bucket_cap_mb, 50.0);
  EXPECT_TRUE(s.static_graph);
  EXPECT_EQ(s.topology, "dgx-a100");  // untouched keys keep their defaults
  const auto bad = dir / "bad.yaml";
  std::ofstream(bad) << "model: resnet50\nbucket_size: 50\n";
  try {
    read_scenario_file(bad.string());
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown key \"bucket_size\""), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Scenario, BadValuesNameTheKey) {
  Scenario s;
  s.gpus = 9;
  EXPECT_THROW((void)resolve_scenario(s), ConfigError);
  s = {};
  s.warmup = 5;
  EXPECT_THROW((void)resolve_scenario(s), ConfigError);
  s = {};
  s.model = "nope";
  try {
    (void)resolve_scenario(s);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model \"nope\""), std::string::npos) << e.what();
  }
}

TEST(Scenario, EveryChoiceOfTheKeyTableIsOneTheEnginesRead) {
  // The table says what a user may write; the engines turn it into their enums without a second check.
  for (std::string_view c : scenario_key("precision").choices) EXPECT_NO_THROW(parse_precision(c)) << c;
  for (std::string_view c : scenario_key("optimizer").choices) EXPECT_NO_THROW(parse_optimizer(c)) << c;
  for (std::string_view c : kNcclAlgorithms) EXPECT_NO_THROW(parse_algorithm(c)) << c;
  for (std::string_view c : kNcclProtocols) EXPECT_NO_THROW(parse_protocol(c)) << c;
  for (std::string_view c : scenario_key("fidelity").choices) EXPECT_TRUE(parse_fidelity(c).has_value()) << c;
}

// --help names the built-ins in the model and topology keys' help: every one, so that the text
// cannot fall behind the zoo or the compiled-in clusters.
TEST(Scenario, HelpNamesEveryBuiltInModelAndCluster) {
  const std::string model_help(scenario_key("model").help);
  for (const std::string& m : zoo_model_names())
    EXPECT_TRUE(model_help.find(m + ",") != std::string::npos || model_help.find(m + ";") != std::string::npos)
        << m << " missing from: " << model_help;
  const std::string topo_help(scenario_key("topology").help);
  for (const std::string& t : builtin_topology_names())
    EXPECT_NE(topo_help.find(t), std::string::npos) << t << " missing from: " << topo_help;
}

TEST(Scenario, ResolvedForItsModelAndCluster) {
  Scenario s;
  s.model = "resnet50";
  const Scenario r = resolve_scenario(s);
  EXPECT_EQ(r.gpus, 8);            // every GPU of dgx-a100
  EXPECT_EQ(r.precision, "bf16");  // A100 has bf16
  EXPECT_GT(r.batch_per_gpu, 0);   // the model's default
  EXPECT_EQ(r.seq_len, 0);         // resnet50 has no T
  EXPECT_EQ(r.bucket_cap_mb, 25.0);
  EXPECT_EQ(r.first_bucket_mb, 1.0);
  s.topology = "dgx1-v100";
  EXPECT_EQ(resolve_scenario(s).precision, "fp16");  // V100 has no bf16
}

}  // namespace
}  // namespace gradsync::sim

namespace gradsync::sim {
namespace {

// pair_of_geforce: two RTX 3090s behind one PCIe switch, written to a temporary file; p2p "on"
// is a driver that enables peer-to-peer (tinygrad's), "auto" GeForce's own: none.
std::string pair_of_geforce(const std::string& p2p) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gradsync-geforce-" + p2p + "-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << write_topology_dot(
      generate_pcie({.gpu = "rtx-3090", .gpus = 2, .sockets = 1, .gpus_per_switch = 2, .p2p = p2p}));
  return path.string();
}

StrategyResult ddp_in_child(Scenario s) {
  IsolatedSimulation child(s, Strategy::kDDP, false);
  return child.finish();
}

// NCCL_P2P_DISABLE=1 on two GeForce GPUs whose driver allows P2P: the buckets' allreduces leave
// the PCIe switch (P2P, PIX) for host memory (SHM through the CPU, PHB), whose rate is the
// switch's uplink shared by both directions of the ring: DDP's exposed communication grows. On
// GeForce's own driver (no P2P) NCCL already uses SHM: the knob changes nothing.
TEST(Simulate, P2pDisableMovesDdpsBucketsToHostMemory) {
  Scenario s = small_scenario("gpt2", pair_of_geforce("on"), 2);
  s.batch_per_gpu = 4;
  const StrategyResult p2p = ddp_in_child(s);
  s.nccl_p2p_disable = true;
  const StrategyResult shm = ddp_in_child(s);
  EXPECT_EQ(p2p.transports, "P2P/CUMEM over PIX");
  EXPECT_EQ(shm.transports, "SHM/direct/direct over PHB");
  EXPECT_EQ(p2p.shm_duplex_Bps, 0);
  EXPECT_DOUBLE_EQ(shm.shm_duplex_Bps, kShmDuplexBps);  // an Ampere pair: SHM's duplex limit, said too
  EXPECT_GT(shm.communication_s, 2 * p2p.communication_s);
  EXPECT_GT(shm.exposed_communication_s, p2p.exposed_communication_s);
  EXPECT_GT(shm.steady_iteration_time_s, p2p.steady_iteration_time_s);

  Scenario g = small_scenario("gpt2", pair_of_geforce("auto"), 2);
  g.batch_per_gpu = 4;
  const StrategyResult plain = ddp_in_child(g);
  g.nccl_p2p_disable = true;
  const StrategyResult disabled = ddp_in_child(g);
  EXPECT_EQ(plain.transports, "SHM/direct/direct over PHB");
  EXPECT_DOUBLE_EQ(plain.steady_iteration_time_s, disabled.steady_iteration_time_s);
  EXPECT_DOUBLE_EQ(plain.exposed_communication_s, disabled.exposed_communication_s);
}

}  // namespace
}  // namespace gradsync::sim
