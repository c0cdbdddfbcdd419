// launch_queue_test.cpp: CUDA's asynchronous launches against closed forms.
#include "core/launch_queue.hpp"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(LaunchQueue, GpuBoundWorkEndsItsGpuTimeAfterItsFirstLaunch) {
  LaunchQueue q;
  q.issue(1e-3, 10e-3, 10);  // first kernel issued at 0.1 ms
  EXPECT_DOUBLE_EQ(q.end(), 0.1e-3 + 10e-3);
  EXPECT_DOUBLE_EQ(q.host(), 1e-3);
}

TEST(LaunchQueue, HostBoundWorkEndsWithItsLastLaunchAndLastKernel) {
  LaunchQueue q;
  q.issue(10e-3, 1e-3, 100);  // the last kernel issued at 10 ms runs 10 us
  EXPECT_DOUBLE_EQ(q.end(), 10e-3 + 1e-3 / 100);
}

TEST(LaunchQueue, TheHostRunsAheadWhileTheGpuIsBehind) {
  // A host-bound optimizer after a GPU-bound backward costs only its GPU time: the host issued
  // it while the GPU still ran backward. Each op at the longer of its two times would be 15 ms.
  LaunchQueue q;
  q.issue(1e-3, 10e-3, 10);
  q.issue(5e-3, 1e-3, 100);
  EXPECT_DOUBLE_EQ(q.end(), 0.1e-3 + 10e-3 + 1e-3);
}

TEST(LaunchQueue, TheGpuWaitsForAHostThatFellBehind) {
  // Host-bound first (the GPU idles between launches), then GPU-bound work starts at its first
  // launch: 10 ms of host, then 0.1 ms to issue the next op's first kernel, then its 10 ms.
  LaunchQueue q;
  q.issue(10e-3, 1e-3, 100);
  q.issue(1e-3, 10e-3, 10);
  EXPECT_DOUBLE_EQ(q.end(), 10e-3 + 0.1e-3 + 10e-3);
}

TEST(LaunchQueue, WorkWithoutHostTimeIsTheGpusAlone) {
  LaunchQueue q;
  q.issue(0, 2e-3, 0);
  q.issue(0, 3e-3, 4);
  EXPECT_DOUBLE_EQ(q.end(), 5e-3);
  EXPECT_DOUBLE_EQ(q.host(), 0);
}

}  // namespace
}  // namespace gradsync
