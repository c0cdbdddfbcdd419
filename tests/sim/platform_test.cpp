// platform_test.cpp: the SimGrid platform of a topology: transfer times along routes, per-direction
// capacity, and fair sharing of a link by flows, whatever their route latency. One engine per process:
// every test here runs in its own process (gtest_discover_tests).
#include "sim/platform.hpp"

#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>

#include "core/error.hpp"
#include "sim/engine.hpp"

namespace sg4 = simgrid::s4u;

namespace gradsync::sim {
namespace {

// Two hosts of two GPUs each; GPUs reach their NIC over 50 GB/s PCIe (1 us; 38 GB/s of payload at
// NCCL's PCIe efficiency); NICs reach one switch over 25 GB/s InfiniBand (2 us, all payload). GPU
// pairs inside a host talk over 100 GB/s NVLink (80 GB/s of payload on A100s).
constexpr const char* kTwoNodes = R"(graph t {
  "a.cpu" [kind="cpu", host="a"];
  "a.gpu0" [kind="gpu", model="h100", host="a"];
  "a.gpu1" [kind="gpu", model="h100", host="a"];
  "a.nic" [kind="nic", host="a"];
  "b.cpu" [kind="cpu", host="b"];
  "b.gpu0" [kind="gpu", model="h100", host="b"];
  "b.gpu1" [kind="gpu", model="h100", host="b"];
  "b.nic" [kind="nic", host="b"];
  "sw" [kind="switch"];
  "a.cpu" -- "a.gpu0" [type="pcie", bw="20GBps", latency="1us"];
  "a.cpu" -- "a.gpu1" [type="pcie", bw="20GBps", latency="1us"];
  "a.gpu0" -- "a.gpu1" [type="nvlink", bw="25GBps", latency="100ns", links="4"];
  "a.gpu0" -- "a.nic" [type="pcie", bw="50GBps", latency="1us"];
  "a.gpu1" -- "a.nic" [type="pcie", bw="50GBps", latency="1us"];
  "b.cpu" -- "b.gpu0" [type="pcie", bw="20GBps", latency="1us"];
  "b.cpu" -- "b.gpu1" [type="pcie", bw="20GBps", latency="1us"];
  "b.gpu0" -- "b.gpu1" [type="nvlink", bw="25GBps", latency="100ns", links="4"];
  "b.gpu0" -- "b.nic" [type="pcie", bw="50GBps", latency="1us"];
  "b.gpu1" -- "b.nic" [type="pcie", bw="50GBps", latency="1us"];
  "a.nic" -- "sw" [type="infiniband", bw="25GBps", latency="2us"];
  "b.nic" -- "sw" [type="infiniband", bw="25GBps", latency="2us"];
})";

constexpr double kBytes = 100e6;

// Times of host-to-host transfers started together, each from its own actor.
std::vector<double> transfer(const std::vector<std::pair<sg4::Host*, sg4::Host*>>& flows) {
  std::vector<double> done(flows.size(), -1);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    sg4::Actor::create("flow" + std::to_string(i), flows[i].first, [&done, &flows, i] {
      sg4::Comm::sendto(flows[i].first, flows[i].second, static_cast<std::uint64_t>(kBytes));
      done[i] = sg4::Engine::get_clock();
    });
  }
  sg4::Engine::get_instance()->run();
  return done;
}

struct Fixture {
  std::unique_ptr<sg4::Engine> engine = create_engine();
  Topology topo = read_topology_dot(kTwoNodes, "two-nodes.dot");
  Routes routes{topo};
  Platform p = build_platform(topo, routes);
};

TEST(Platform, HostsAndLinksFollowTheTopology) {
  Fixture f;
  ASSERT_EQ(f.p.gpus.size(), 4u);
  EXPECT_EQ(f.p.gpus[2]->get_name(), "b.gpu0");
  EXPECT_EQ(f.p.host_memory[0]->get_name(), "mem:a.cpu");
  EXPECT_EQ(f.p.host_memory[3]->get_name(), "mem:b.cpu");
  ASSERT_EQ(f.p.links.size(), f.topo.links().size());
  // Links carry their payload rate (topologies/link_model.hpp): 4 NVLinks x NCCL's 20.6 GB/s (H100:
  // the fixture's GPUs are H100s, whose PCIe Gen5 port takes the 50 GB/s GPU-NIC links).
  EXPECT_DOUBLE_EQ(f.p.links[2]->get_bandwidth(), 4 * 20.6e9);
  EXPECT_DOUBLE_EQ(f.p.links[0]->get_bandwidth(), 20e9 * 12 / 15.75);  // PCIe
  EXPECT_DOUBLE_EQ(f.p.links[10]->get_bandwidth(), 25e9);              // InfiniBand: the line rate
}

TEST(Platform, ATransferTakesTheRouteLatencyPlusBytesOverTheBottleneck) {
  Fixture f;
  // a.gpu0 -> b.gpu0: PCIe (1 us), IB (2 us), IB (2 us), PCIe (1 us); bottleneck 25 GB/s.
  const auto t = transfer({{f.p.gpus[0], f.p.gpus[2]}});
  EXPECT_NEAR(t[0], 6e-6 + kBytes / 25e9, 1e-12);
}

TEST(Platform, EachDirectionHasTheFullBandwidth) {
  Fixture f;
  const auto t = transfer({{f.p.gpus[0], f.p.gpus[2]}, {f.p.gpus[2], f.p.gpus[0]}});
  EXPECT_NEAR(t[0], 6e-6 + kBytes / 25e9, 1e-12);
  EXPECT_NEAR(t[1], 6e-6 + kBytes / 25e9, 1e-12);
}

TEST(Platform, TwoFlowsThroughOneNicEachGetHalfOfIt) {
  Fixture f;
  // a.gpu0 -> b.gpu0 and a.gpu1 -> b.gpu1 share a.nic -- sw and sw -- b.nic (25 GB/s).
  const auto t = transfer({{f.p.gpus[0], f.p.gpus[2]}, {f.p.gpus[1], f.p.gpus[3]}});
  EXPECT_NEAR(t[0], 6e-6 + kBytes / 12.5e9, 1e-9);
  EXPECT_NEAR(t[1], 6e-6 + kBytes / 12.5e9, 1e-9);
}

// Flows of different route latency share a link equally: GPU fabrics arbitrate by credits, not
// by round trips (SimGrid's CM02 would give each a share inverse to its route's latency: 10 to 1
// here). GPU 1's PCIe link is 100 times slower to cross; once both copies move they get half of
// the switch's 15.2 GB/s uplink each, so GPU 1's copy ends as long after GPU 0's as it started.
TEST(Platform, FlowsOfDifferentLatencyShareALinkEqually) {
  std::unique_ptr<sg4::Engine> engine = create_engine();
  const Topology topo = read_topology_dot(R"(graph t {
    "a.cpu" [kind="cpu", host="a"];
    "a.sw" [kind="pcie_switch", host="a"];
    "a.gpu0" [kind="gpu", model="h100", host="a"];
    "a.gpu1" [kind="gpu", model="h100", host="a"];
    "a.cpu" -- "a.sw" [type="pcie", bw="20GBps", latency="1us"];
    "a.sw" -- "a.gpu0" [type="pcie", bw="50GBps", latency="100ns"];
    "a.sw" -- "a.gpu1" [type="pcie", bw="50GBps", latency="10us"];
  })",
                                          "shared.dot");
  const Routes routes(topo);
  const Platform p = build_platform(topo, routes);
  const auto t = transfer({{p.gpus[0], p.host_memory[0]}, {p.gpus[1], p.host_memory[1]}});
  const double rate = 20e9 * 12 / 15.75;  // the uplink's payload
  const double start0 = 1.1e-6, start1 = 11e-6;
  const double alone = rate * (start1 - start0);  // GPU 0's bytes before GPU 1's first arrives
  const double end0 = start1 + 2 * (kBytes - alone) / rate;
  EXPECT_NEAR(t[0], end0, 1e-9);
  EXPECT_NEAR(t[1], end0 + (start1 - start0), 1e-9);
}

TEST(Platform, HostToDeviceCopiesCrossTheGpusPcieLink) {
  Fixture f;
  const auto t = transfer({{f.p.host_memory[1], f.p.gpus[1]}});
  EXPECT_NEAR(t[0], 1e-6 + kBytes / (20e9 * 12 / 15.75), 1e-12);
}

TEST(Platform, AGatherIntoOneGpuIsSlowerThanTheSameBytesSpreadOut) {
  Fixture f;
  // One controller runs two phases: three transfers into a.gpu0 (DataParallel's gather), then
  // three transfers of the same size into three different GPUs.
  auto& g = f.p.gpus;
  double gather_s = -1, spread_s = -1;
  sg4::Actor::create("controller", g[0], [&] {
    auto phase = [&](const std::vector<std::pair<sg4::Host*, sg4::Host*>>& flows) {
      const double start = sg4::Engine::get_clock();
      std::vector<sg4::CommPtr> comms;
      for (const auto& [src, dst] : flows)
        comms.push_back(sg4::Comm::sendto_async(src, dst, static_cast<std::uint64_t>(kBytes)));
      for (auto& c : comms) c->wait();
      return sg4::Engine::get_clock() - start;
    };
    gather_s = phase({{g[1], g[0]}, {g[2], g[0]}, {g[3], g[0]}});
    spread_s = phase({{g[1], g[0]}, {g[2], g[1]}, {g[0], g[3]}});
  });
  sg4::Engine::get_instance()->run();
  // Gather: b's two GPUs share the IB hops into a (12.5 GB/s each). Spread: the two IB transfers
  // run in opposite directions, each at 25 GB/s.
  EXPECT_NEAR(gather_s, 6e-6 + kBytes / 12.5e9, 1e-9);
  EXPECT_NEAR(spread_s, 6e-6 + kBytes / 25e9, 1e-9);
  EXPECT_GT(gather_s, 1.9 * spread_s);
}

TEST(Platform, NeedsTheEngineFirst) {
  const Topology topo = read_topology_dot(kTwoNodes, "two-nodes.dot");
  const Routes routes(topo);
  EXPECT_THROW(build_platform(topo, routes), RuntimeError);
}

}  // namespace
}  // namespace gradsync::sim
