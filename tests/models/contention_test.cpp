// contention_test.cpp: compute kernels beside an NCCL kernel (models/contention.hpp) against
// closed forms: waves of a GEMM, SMs lost in proportion, DRAM shared, and a zoo model's load.
#include "models/contention.hpp"

#include <gtest/gtest.h>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

TEST(Contention, AGemmOfOneFullWaveBesideOneChannelTakesTwoWaves) {
  const SmSharing v100 = sm_sharing(gpu_spec("v100"));
  ASSERT_EQ(v100.sms, 80);
  EXPECT_EQ(held_sms(v100, 1), 1);
  EXPECT_DOUBLE_EQ(gemm_waves(80, 80), 1.0);
  EXPECT_DOUBLE_EQ(gemm_stretch(80, 80, 1), 2.0);          // 80 tiles on 79 SMs: two waves
  EXPECT_DOUBLE_EQ(gemm_stretch(79, 80, 1), 1.0);          // still one wave
  EXPECT_DOUBLE_EQ(gemm_stretch(160, 80, 12), 3.0 / 2.0);  // 160 tiles on 68 SMs: 3 waves, not 2
  EXPECT_DOUBLE_EQ(gemm_stretch(132, 132, 24), 2.0);       // H100: a one-wave GEMM beside 24 blocks
  EXPECT_DOUBLE_EQ(gemm_stretch(10, 80, 0), 1.0);
}

TEST(Contention, ManyWaveKernelsSlowInProportionToTheSmsLost) {
  EXPECT_DOUBLE_EQ(linear_stretch(80, 12), 80.0 / 68.0);
  EXPECT_DOUBLE_EQ(linear_stretch(132, 0), 1.0);
  // NCCL never takes every SM: a kernel keeps one.
  const SmSharing a100 = sm_sharing(gpu_spec("a100"));
  EXPECT_EQ(held_sms(a100, 64), 64);
  EXPECT_EQ(held_sms(a100, 500), a100.sms - 1);
  EXPECT_EQ(held_sms(a100, -3), 0);
}

TEST(Contention, MemoryBoundKernelsShareDram) {
  // A kernel at 0.8 of peak beside copies taking 0.2: both fit; 0.5: it gets 0.5 of 0.8 asked.
  EXPECT_DOUBLE_EQ(memory_stretch(0.8, 0.2), 1.0);
  EXPECT_DOUBLE_EQ(memory_stretch(0.8, 0.5), 1.6);
  EXPECT_DOUBLE_EQ(memory_stretch(0.8, 0.0), 1.0);
  EXPECT_NEAR(memory_stretch(0.8, 2.0), 16.0, 1e-9);  // the share is capped at 0.95
  // A ring allreduce step: receive 1, send 1, read the local operand: 3 bytes through DRAM.
  EXPECT_DOUBLE_EQ(nccl_dram_bytes(1, 1, true), 3.0);
  EXPECT_DOUBLE_EQ(nccl_dram_bytes(1, 1, false), 2.0);
}

TEST(Contention, AnOpSlowsByItsParts) {
  ComputeLoad l;
  l.gpu_s = 10;
  l.sm_s = 6;
  l.sm_held_s = 9;
  l.hbm_s = 3;
  l.hbm_demand = 0.8;
  // 1 of launch floor + 9 held + 3 x 1.6.
  EXPECT_DOUBLE_EQ(contended_time(10, l, 0.5), 1 + 9 + 3 * 1.6);
  EXPECT_DOUBLE_EQ(contended_time(10, l, 0.0), 1 + 9 + 3);
  // Host-bound: the host's 20 decide while the GPU's contended 14.8 fits under them.
  EXPECT_DOUBLE_EQ(contended_time(20, l, 0.5), 20);
  // No load: no slowdown.
  EXPECT_DOUBLE_EQ(contended_time(7, ComputeLoad{}, 0.9), 7);
}

TEST(Contention, ZooLayersCarryTheirSmAndDramParts) {
  const Model m = load_model("resnet50");
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("v100");
  ctx.precision = Precision::kFP32;
  ctx.batch = 32;
  ctx.nccl_blocks = 12;
  const ModelCost c = model_cost(m, ctx);
  double gpu = 0, sm = 0, held = 0, hbm = 0;
  for (const LayerCost& l : c.layers) {
    EXPECT_LE(l.backward.load.sm_s + l.backward.load.hbm_s, l.backward.load.gpu_s * (1 + 1e-12));
    gpu += l.backward.load.gpu_s;
    sm += l.backward.load.sm_s;
    held += l.backward.load.sm_held_s;
    hbm += l.backward.load.hbm_s;
  }
  EXPECT_GT(sm, 0.3 * gpu);   // convolutions
  EXPECT_GT(hbm, 0.1 * gpu);  // batch norms, ReLUs
  // Convolutions lose 12 of 80 SMs in proportion; the classifier's GEMM (32 x 1000: 8 tiles) in
  // whole waves, where 8 tiles fit the 68 SMs left as they fit 80.
  EXPECT_NEAR(held / sm, 80.0 / 68.0, 1e-3);
  EXPECT_LT(held / sm, 80.0 / 68.0);
  // Without NCCL beside, nothing is held.
  ctx.nccl_blocks = 0;
  const ModelCost alone = model_cost(m, ctx);
  double alone_held = 0, alone_sm = 0;
  for (const LayerCost& l : alone.layers) {
    alone_held += l.backward.load.sm_held_s;
    alone_sm += l.backward.load.sm_s;
  }
  EXPECT_DOUBLE_EQ(alone_held, alone_sm);
}

}  // namespace
}  // namespace gradsync
