// group_launch_test.cpp: nccl-tests run as one process driving N GPUs (-g N): its thread launches
// each GPU's kernel of a call in turn (NCCL's group.cc doLaunches), so a call takes at least
// N x kGroupLaunchPerGpuS. Each simulation runs in a forked child (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "tests/support/in_child.hpp"
#include "topologies/generators.hpp"

namespace gradsync::sim {
namespace {

using testing_support::in_child;

struct Row {
  double time_s;
  bool host_bound;
};

std::vector<Row> rows(const CollectiveSweep& sw) {
  // in_child hands back doubles: each row as its time and 1 where the host bound it.
  const std::vector<double> flat = in_child([sw] {
    std::vector<double> out;
    for (const CollectivePoint& p : simulate_collectives(sw)) {
      out.push_back(p.time_s);
      out.push_back(p.host_bound ? 1.0 : 0.0);
    }
    return out;
  });
  std::vector<Row> out;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out.push_back({flat[i], flat[i + 1] != 0});
  return out;
}

// refusal: which of `expected` the ConfigError of simulate_collectives(sw) contains (1 each), or
// an empty vector where it ran.
std::vector<double> refusal(const CollectiveSweep& sw, std::vector<std::string> expected) {
  return in_child([sw, expected] {
    std::vector<double> found;
    try {
      (void)simulate_collectives(sw);
    } catch (const ConfigError& e) {
      for (const std::string& x : expected) found.push_back(std::string(e.what()).find(x) != std::string::npos);
    }
    return found;
  });
}

CollectiveSweep h100_allgather(int gpus_per_thread) {
  CollectiveSweep sw;
  sw.topology = "dgx-h100";
  sw.gpus = 8;
  sw.op = Collective::kAllgather;
  sw.sizes = {1 << 20, 1 << 30};
  sw.gpus_per_thread = gpus_per_thread;
  return sw;
}

TEST(GroupLaunch, OneThreadDrivingEightGpusTakesEightLaunchesForASmallCall) {
  const std::vector<Row> alone = rows(h100_allgather(1));
  const std::vector<Row> one_thread = rows(h100_allgather(8));
  ASSERT_EQ(alone.size(), 2u);
  ASSERT_EQ(one_thread.size(), 2u);
  // 1 MiB: the GPUs finish sooner than eight launches; the host sets the time, exactly.
  ASSERT_LT(alone[0].time_s, 8 * kGroupLaunchPerGpuS);
  EXPECT_FALSE(alone[0].host_bound);
  EXPECT_DOUBLE_EQ(one_thread[0].time_s, 8 * kGroupLaunchPerGpuS);
  EXPECT_TRUE(one_thread[0].host_bound);
  // 1 GiB: the GPUs take far longer than the launches; the thread changes nothing.
  EXPECT_DOUBLE_EQ(one_thread[1].time_s, alone[1].time_s);
  EXPECT_FALSE(one_thread[1].host_bound);
}

TEST(GroupLaunch, TheFloorGrowsWithTheGpusOfAThread) {
  const std::vector<Row> four = rows(h100_allgather(4));
  const std::vector<Row> two = rows(h100_allgather(2));
  ASSERT_EQ(four.size(), 2u);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_DOUBLE_EQ(four[0].time_s, std::max(4 * kGroupLaunchPerGpuS, rows(h100_allgather(1))[0].time_s));
  EXPECT_GE(four[0].time_s, two[0].time_s);
}

TEST(GroupLaunch, ACountThatDoesNotDivideTheGpusIsRefused) {
  EXPECT_EQ(refusal(h100_allgather(3), {"gpus-per-thread 3", "divides the 8 GPUs"}),
            (std::vector<double>{1, 1}));
}

TEST(GroupLaunch, AThreadCannotDriveTheGpusOfTwoNodes) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gradsync-group-launch-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << write_topology_dot(generate_fat_tree({.nodes = 2, .node = "dgx-h100"}));
  CollectiveSweep sw;
  sw.topology = path.string();
  sw.gpus = 16;
  sw.sizes = {1 << 20};
  sw.gpus_per_thread = 16;
  const std::vector<double> found = refusal(sw, {"GPUs 0 and 8 of one thread are on different nodes"});
  std::filesystem::remove(path);
  EXPECT_EQ(found, (std::vector<double>{1}));
}

}  // namespace
}  // namespace gradsync::sim
