// nccl_release_rules_test.cpp: what an NCCL release has and enables unasked, as its tuning.cc
// says by tag: LL128 from 2.5 and on which GPUs by default; NCCL_ALGO / NCCL_PROTO from 2.5 and
// NCCL_MIN_CTAS / NCCL_MAX_CTAS from 2.17, refused under releases that do not read them.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/scenario.hpp"
#include "sim/nccl_model.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/channels.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

constexpr double kRulesMiB = 1024.0 * 1024;

std::vector<int> rules_ranks(int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

TEST(NcclRelease, Ll128ByDefaultFollowsTheReleasesGpusAndPaths) {
  const auto on = [](int major, int minor, int sm, PathClass intra = PathClass::kNVL) {
    return ll128_by_default(NcclRelease{major, minor}, sm, intra);
  };
  // 2.4: no LL128 at all.
  for (int sm : {70, 80, 90}) EXPECT_FALSE(on(2, 4, sm)) << sm;
  // 2.5-2.6: Volta only.
  EXPECT_TRUE(on(2, 5, 70));
  EXPECT_FALSE(on(2, 6, 80));
  // 2.7-2.14: Volta and A100, not the 8.6 parts (RTX 3090, A40) nor Hopper.
  EXPECT_TRUE(on(2, 7, 80));
  EXPECT_FALSE(on(2, 14, 86));
  EXPECT_FALSE(on(2, 14, 90));
  // 2.15-2.24: and Hopper; 2.25-2.26: and Blackwell (10.0, 12.0), still not 8.6 or 8.9.
  EXPECT_TRUE(on(2, 15, 90));
  EXPECT_FALSE(on(2, 24, 100));
  EXPECT_TRUE(on(2, 25, 100));
  EXPECT_TRUE(on(2, 26, 120));
  EXPECT_FALSE(on(2, 26, 89));
  // 2.27 on: every GPU from Volta.
  EXPECT_TRUE(on(2, 27, 86));
  EXPECT_TRUE(on(2, 28, 89));
  EXPECT_FALSE(on(2, 28, 60));
  // NVLink through another GPU (PATH_NVB) only from 2.18.3 (read as 2.19); PCIe never.
  EXPECT_FALSE(on(2, 18, 80, PathClass::kNVB));
  EXPECT_TRUE(on(2, 19, 80, PathClass::kNVB));
  EXPECT_FALSE(on(2, 28, 80, PathClass::kPIX));
  // Across nodes, from 2.8: GPUs reaching their NICs within PCIe switches; not through the CPU (no
  // GPUDirect RDMA), and by PXN only on Hopper and later from 2.17.
  const auto across = [](int minor, int sm, PathClass inter, bool pxn = false) {
    return ll128_by_default(NcclRelease{2, minor}, sm, PathClass::kNVL, inter, pxn);
  };
  EXPECT_TRUE(across(27, 80, PathClass::kPXB));
  EXPECT_FALSE(across(27, 80, PathClass::kPHB));
  EXPECT_FALSE(across(27, 90, PathClass::kSYS));
  EXPECT_TRUE(across(7, 80, PathClass::kPHB));  // before 2.8 no such test
  EXPECT_FALSE(across(27, 80, PathClass::kPXB, true));
  EXPECT_FALSE(across(16, 90, PathClass::kPXB, true));
  EXPECT_TRUE(across(17, 90, PathClass::kPXB, true));
}

// Two DGX A100s: with GPUDirect RDMA their GPUs reach their NICs through PCIe switches and NCCL
// runs LL128 at megabytes; without it (NCCL_IB_DISABLE's sockets, or NCCL_NET_GDR_LEVEL nearer than
// the switches) the bytes are staged in host memory through the CPU (typeInter PHB) and NCCL does
// not (tuning.cc: typeInter <= PATH_PXB), unless NCCL_PROTO asks.
TEST(NcclRelease, NoLl128AcrossNodesWithoutGpuDirectRdma) {
  const Topology topo = load_topology("2x-dgx-a100-hdr");
  const Routes routes(topo);
  int ll128[3] = {0, 0, 0};
  int i = 0;
  for (const TransportOptions o :
       {TransportOptions{}, TransportOptions{.ib_disable = true}, TransportOptions{.net_gdr_level = PathClass::kNVL}}) {
    const Transports transports(topo, routes, o);
    const Channels ch = build_channels(topo, routes, rules_ranks(16), transports);
    if (i == 0)
      EXPECT_LE(ch.inter_class, PathClass::kPXB);
    else
      EXPECT_EQ(ch.inter_class, PathClass::kPHB) << i;
    Scenario s;
    for (double size = 64 * 1024; size <= 256 * kRulesMiB; size *= 2)
      ll128[i] +=
          choose_collective(Collective::kAllreduce, size, ch, nccl_settings(s).request).protocol == Protocol::kLL128;
    ++i;
  }
  EXPECT_GT(ll128[0], 0);
  EXPECT_EQ(ll128[1], 0);
  EXPECT_EQ(ll128[2], 0);
}

// PyTorch 1.4's NCCL 2.4 on a DGX-1 runs LL or Simple at every size; 2.5's picks LL128 where its
// model says it is fastest (megabytes on Volta over NVLink).
TEST(NcclRelease, Nccl24RunsNoLl128WhereNccl25Does) {
  const Topology topo = load_topology("dgx1-v100");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, rules_ranks(8));
  Scenario s24, s25;
  s24.nccl_version = "2.4";
  s25.nccl_version = "2.5";
  int ll128_in_25 = 0;
  for (double size = 64 * 1024; size <= 256 * kRulesMiB; size *= 2) {
    EXPECT_NE(choose_collective(Collective::kAllreduce, size, ch, nccl_settings(s24).request).protocol,
              Protocol::kLL128)
        << size;
    ll128_in_25 +=
        choose_collective(Collective::kAllreduce, size, ch, nccl_settings(s25).request).protocol == Protocol::kLL128;
  }
  EXPECT_GT(ll128_in_25, 0);
}

// An H100 NVSwitch node: NCCL 2.14 (PyTorch 1.13-2.0) leaves LL128 off on Hopper, 2.15 runs it
// (both without NVLS, which came with 2.17).
TEST(NcclRelease, AnH100NodeRunsLl128FromNccl215) {
  const Topology topo = load_topology("dgx-h100");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, rules_ranks(8));
  ASSERT_EQ(ch.sm_version, 90);
  Scenario old_, new_;
  old_.nccl_version = "2.14";
  new_.nccl_version = "2.15";
  int ll128_old = 0, ll128_new = 0;
  for (double size = 64 * 1024; size <= 256 * kRulesMiB; size *= 2) {
    ll128_old +=
        choose_collective(Collective::kAllreduce, size, ch, nccl_settings(old_).request).protocol == Protocol::kLL128;
    ll128_new +=
        choose_collective(Collective::kAllreduce, size, ch, nccl_settings(new_).request).protocol == Protocol::kLL128;
  }
  EXPECT_EQ(ll128_old, 0);
  EXPECT_GT(ll128_new, 0);
}

// NCCL_ALGO=tree leaves a broadcast nothing: NCCL 2.19-2.23 run it on the ring (their ring
// backup), 2.18 and 2.24 on fail it, and so does `collectives`.
TEST(NcclRelease, OnlyNccl219To223RunTheRingForACollectiveNcclAlgoLeavesNothing) {
  const Topology topo = load_topology("dgx-a100");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, rules_ranks(8));
  Scenario s;
  s.nccl_algo = "tree";
  for (const char* v : {"2.19", "2.23"}) {
    s.nccl_version = v;
    EXPECT_EQ(choose_collective(Collective::kBroadcast, kRulesMiB, ch, nccl_settings(s).request).algorithm,
              Algorithm::kRing)
        << v;
  }
  for (const char* v : {"2.18", "2.24", "2.28"}) {
    s.nccl_version = v;
    EXPECT_THROW(choose_collective(Collective::kBroadcast, kRulesMiB, ch, nccl_settings(s).request), ConfigError) << v;
  }
}

std::string knob_refusal(const Scenario& s) {
  try {
    (void)nccl_settings(s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(NcclRelease, KnobsTheReleaseDoesNotReadAreRefusedNamingIt) {
  Scenario s;
  s.nccl_version = "2.4";
  s.nccl_proto = "ll128";
  EXPECT_EQ(knob_refusal(s),
            "NCCL_PROTO=ll128: NCCL 2.4 does not read NCCL_PROTO (it came with NCCL 2.5); unset it, or set "
            "nccl_version (--nccl-version) to 2.5 or later");
  s.nccl_proto.clear();
  s.nccl_algo = "ring";
  EXPECT_NE(knob_refusal(s).find("NCCL_ALGO=ring: NCCL 2.4 does not read NCCL_ALGO"), std::string::npos);
  s.nccl_version = "2.5";
  EXPECT_EQ(knob_refusal(s), "");
  s.nccl_version = "2.14";
  s.nccl_max_ctas = 4;
  EXPECT_EQ(knob_refusal(s),
            "NCCL_MAX_CTAS=4: NCCL 2.14 does not read NCCL_MAX_CTAS (it came with NCCL 2.17); unset it, or set "
            "nccl_version (--nccl-version) to 2.17 or later");
  s.nccl_version = "2.17";
  EXPECT_EQ(knob_refusal(s), "");
  Scenario nvls;
  nvls.nccl_version = "2.16";
  nvls.nccl_nvls_enable = "0";
  EXPECT_NE(knob_refusal(nvls).find("NCCL_NVLS_ENABLE=0: NCCL 2.16 does not read NCCL_NVLS_ENABLE (it came with "
                                    "NCCL 2.17)"),
            std::string::npos);
  // PXN came with NCCL 2.12: before it there is nothing to disable.
  Scenario pxn;
  pxn.nccl_version = "2.11";
  pxn.nccl_pxn_disable = true;
  EXPECT_NE(knob_refusal(pxn).find("NCCL_PXN_DISABLE=1: NCCL 2.11 does not read NCCL_PXN_DISABLE (it came with "
                                   "NCCL 2.12)"),
            std::string::npos);
  pxn.nccl_version = "2.12";
  EXPECT_EQ(knob_refusal(pxn), "");
  EXPECT_TRUE(nccl_settings(pxn).transport.pxn_disable);
}

// NCCL_ALGO that leaves an allgather nothing: NVLS on an H100 node is a kernel NCCL has (2.17 on)
// and gradsync does not model, said so; the tree serves allreduce only, and NCCL fails the call.
TEST(NcclRelease, AnAllgatherNcclAlgoLeavesNothingIsNamedForWhatItIs) {
  const auto message = [](const char* topology, const char* algorithms) {
    const Topology topo = load_topology(topology);
    const Routes routes(topo);
    const Channels ch = build_channels(topo, routes, rules_ranks(8));
    CollectiveRequest req;
    req.algorithms = algorithms;
    try {
      (void)choose_collective(Collective::kAllgather, 1024 * kRulesMiB, ch, req);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("dgx-h100", "nvls")
                .rfind("NCCL_ALGO=nvls: NCCL runs allgather over 8 NVSwitch-connected GPUs "
                       "with NVLS too (from NCCL 2.17), which gradsync does not model yet",
                       0),
            0u);
  EXPECT_EQ(message("dgx-h100", "tree").rfind("NCCL_ALGO=tree: allgather over 8 GPUs runs on the ring only", 0), 0u);
  EXPECT_NE(message("dgx-a100", "nvls").find("NCCL fails such a call"), std::string::npos);
  EXPECT_EQ(message("dgx-h100", "nvls,ring"), "accepted");
}

}  // namespace
}  // namespace gradsync::sim
