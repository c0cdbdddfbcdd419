// sweep_test.cpp: which sweep points share a simulation.
#include "sweep/sweep.hpp"

#include <gtest/gtest.h>

namespace gradsync::sweep {
namespace {

TEST(SweepIdentity, DataParallelIgnoresDdpKnobsAndDdpDoesNot) {
  Scenario a;
  a.gpus = 8;
  a.bucket_cap_mb = 5;
  a.first_bucket_mb = 5;
  Scenario b = a;
  b.bucket_cap_mb = 25;
  b.first_bucket_mb = 25;
  b.comm_hook = "bf16";
  b.static_graph = true;
  EXPECT_EQ(simulation_identity(a, Strategy::kDP), simulation_identity(b, Strategy::kDP));
  EXPECT_NE(simulation_identity(a, Strategy::kDDP), simulation_identity(b, Strategy::kDDP));
  EXPECT_NE(simulation_identity(a, Strategy::kDP), simulation_identity(a, Strategy::kDDP));
  // Keys every strategy sees keep points apart.
  Scenario c = a;
  c.gpus = 4;
  EXPECT_NE(simulation_identity(a, Strategy::kDP), simulation_identity(c, Strategy::kDP));
  c = a;
  c.grad_accum = 2;
  EXPECT_NE(simulation_identity(a, Strategy::kDP), simulation_identity(c, Strategy::kDP));
  c = a;
  c.nccl_proto = "ll";
  EXPECT_NE(simulation_identity(a, Strategy::kDP), simulation_identity(c, Strategy::kDP));
}

TEST(SweepIdentity, GpuSpreadMattersOnlyAboveOneGpu) {
  Scenario a;
  a.gpus = 2;
  a.gpu_spread_pct = std::string{"0"};  // not = "0": GCC 12 -O3 warns falsely (-Wrestrict) on it
  Scenario b = a;
  b.gpu_spread_pct = std::string{"3"};
  EXPECT_NE(simulation_identity(a, Strategy::kDDP), simulation_identity(b, Strategy::kDDP));
  a.gpus = b.gpus = 1;  // one GPU is its own slowest
  EXPECT_EQ(simulation_identity(a, Strategy::kDDP), simulation_identity(b, Strategy::kDDP));
  EXPECT_EQ(simulation_identity(a, Strategy::kDP), simulation_identity(b, Strategy::kDP));
}

}  // namespace
}  // namespace gradsync::sweep
