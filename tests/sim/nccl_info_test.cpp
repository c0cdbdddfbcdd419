// nccl_info_test.cpp: the NCCL_DEBUG=INFO lines `collectives` prints: coll channels as NCCL
// counts them (the searched rings doubled, then the channel knobs) and how many run each ring.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/nccl_info.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

// NCCL_DEBUG=INFO counts comm->nChannels: the rings the search found, doubled (connect.cc), then
// NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS (NCCL 2.27 ncclTopoPostset); the Channel lines count
// the same.
TEST(NcclInfo, CollChannelsAreTheSearchedRingsDoubledThenTheKnobs) {
  const Topology topo = load_topology("dgx-a100");
  const NcclInfo base = nccl_info(topo, 8, {});
  EXPECT_EQ(base.channels, 12);
  EXPECT_EQ(base.coll_channels, 24);
  const std::vector<std::string> lines = nccl_info_lines(base);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("NCCL INFO 24 coll channels: ring 12 x 20.0 GB/s (each ring run by 2 channels)", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1], "NCCL INFO Channel 00/24 : 0 1 2 3 4 5 6 7");
  NcclSettings knobs;
  knobs.max_channels = 16;
  EXPECT_EQ(nccl_info(topo, 8, knobs).coll_channels, 16);
  knobs.max_channels = 1;
  EXPECT_EQ(nccl_info(topo, 8, knobs).coll_channels, 1);
  knobs.max_channels = 0;
  knobs.min_channels = 32;
  EXPECT_EQ(nccl_info(topo, 8, knobs).coll_channels, 32);
  EXPECT_EQ(nccl_info(topo, 8, knobs).channels, 12);  // the extra blocks run the same rings
  EXPECT_EQ(nccl_info_lines(nccl_info(topo, 8, knobs))[0].rfind(
                "NCCL INFO 32 coll channels: ring 12 x 20.0 GB/s (each ring run by 2 or 3 channels)", 0),
            0u);
  // The bounds apply to the launched channels, not to the searched rings: 16 is below the 24
  // launched, so a minimum of 16 changes nothing, and a maximum of 16 keeps every ring.
  knobs.min_channels = 16;
  const NcclInfo min16 = nccl_info(topo, 8, knobs);
  EXPECT_EQ(min16.coll_channels, 24);
  EXPECT_EQ(min16.channels, 12);
  EXPECT_DOUBLE_EQ(min16.channel_bw_Bps, base.channel_bw_Bps);
  knobs.min_channels = 0;
  knobs.max_channels = 16;
  const NcclInfo max16 = nccl_info(topo, 8, knobs);
  EXPECT_EQ(max16.coll_channels, 16);
  EXPECT_EQ(max16.channels, 12);
  // Channel c runs ring c mod 12: rings 0-3 by two channels, the rest by one.
  EXPECT_EQ(nccl_info_lines(max16)[0].rfind(
                "NCCL INFO 16 coll channels: ring 12 x 20.0 GB/s (each ring run by 1 or 2 channels), no NVLS", 0),
            0u)
      << nccl_info_lines(max16)[0];
  knobs.max_channels = 8;
  EXPECT_EQ(nccl_info(topo, 8, knobs).channels, 8);  // channel i runs ring i: rings 8-11 idle
  // Fewer rings than found: a line says NCCL's tuning still plans with the 12 (why a larger size
  // past a protocol switch can be faster); every ring running, no such line.
  const auto says_tuning = [](const NcclInfo& i) {
    for (const std::string& l : nccl_info_lines(i))
      if (l.rfind("gradsync: ", 0) == 0 && l.find("NCCL's tuning model plans with") != std::string::npos) return l;
    return std::string();
  };
  EXPECT_EQ(says_tuning(nccl_info(topo, 8, knobs))
                .rfind("gradsync: 8 of the 12 rings NCCL's search found run, but "
                       "NCCL's tuning model plans with 12 ",
                       0),
            0u);
  EXPECT_EQ(says_tuning(max16), "");
  EXPECT_EQ(says_tuning(base), "");
  // The bounds hold however often they are applied, and NCCL's tuning keeps the 12 searched rings.
  const Routes routes(topo);
  Channels ch = build_channels(topo, routes, first_ranks(8));
  limit_channels(ch, 0, 8);
  limit_channels(ch, 0, 8);
  EXPECT_EQ(ch.rings.size(), 8u);
  EXPECT_EQ(ch.searched, 12);
  EXPECT_EQ(launched_channels(ch), 8);
  // NCCL_MIN_NCHANNELS above NCCL_MAX_NCHANNELS: connect.cc caps, then copies up to the minimum,
  // so the minimum wins.
  Scenario s;
  s.nccl_min_nchannels = 16;
  s.nccl_max_nchannels = 4;
  // bounds: ring minimum and maximum, NVLS minimum and maximum.
  const auto bounds = [](const NcclSettings& n) {
    return std::array<int, 4>{n.min_channels, n.max_channels, n.nvls_min_channels, n.nvls_max_channels};
  };
  EXPECT_EQ(bounds(nccl_settings(s)), (std::array<int, 4>{16, 4, 0, 0}));
  // minCTAs above maxCTAs: init.cc sets both to the maximum, and the CTA bounds reach NVLS too.
  Scenario c;
  c.nccl_min_ctas = 16;
  c.nccl_max_ctas = 4;
  c.nccl_max_nchannels = 8;
  EXPECT_EQ(bounds(nccl_settings(c)), (std::array<int, 4>{4, 4, 4, 4}));
}

}  // namespace
}  // namespace gradsync::sim
