// links_test.cpp: the busiest links of a simulated step: average and peak utilisation, and every
// kind of link (NICs included) among those kept.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/simulate.hpp"

namespace gradsync::sim {
namespace {

Scenario two_nodes() {
  Scenario s;
  s.model = "gpt2";
  s.topology = "2x-dgx-a100-hdr";
  s.batch_per_gpu = 4;
  s.seq_len = 256;
  s.iterations = 3;
  s.warmup = 1;
  return s;
}

TEST(Links, PeakIsAtLeastTheAverageAndAtMostTheLinksRate) {
  const StrategyResult r = simulate_isolated(two_nodes(), Strategy::kDDP);
  ASSERT_EQ(r.links.size(), StrategyResult::kMaxLinks);
  for (const LinkLoad& l : r.links) {
    EXPECT_GE(l.peak_utilisation, l.utilisation) << l.name;
    // A call cannot move more over a link than its rate allows in the call's span (SimGrid's
    // sharing keeps every flow within the link's bandwidth).
    EXPECT_LE(l.peak_utilisation, 1.0 + 1e-9) << l.name;
    EXPECT_FALSE(l.peak_event.empty()) << l.name;
  }
  for (std::size_t i = 1; i < r.links.size(); ++i)
    EXPECT_GE(r.links[i - 1].utilisation, r.links[i].utilisation) << "busiest first";
  // The busiest link's peak is one of DDP's bucket allreduces, above its step average (the step
  // also computes while nothing crosses the link).
  EXPECT_EQ(r.links.front().peak_event.rfind("allreduce:bucket", 0), 0u) << r.links.front().peak_event;
  EXPECT_GT(r.links.front().peak_utilisation, 1.5 * r.links.front().utilisation);
}

TEST(Links, NicsAndNvswitchPortsAreKeptBesideTheManyAlikePcieLinks) {
  const StrategyResult r = simulate_isolated(two_nodes(), Strategy::kDDP);
  auto has = [&](const char* part) {
    return std::any_of(r.links.begin(), r.links.end(),
                       [&](const LinkLoad& l) { return l.name.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("nic")) << "a NIC's link to the leaf switch";
  EXPECT_TRUE(has("nvswitch")) << "a GPU's NVLink port";
}

}  // namespace
}  // namespace gradsync::sim
