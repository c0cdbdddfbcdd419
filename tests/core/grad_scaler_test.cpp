// grad_scaler_test.cpp: GradScaler's work in DDP's step (core/grad_scaler.hpp, core/ddp_step.cpp):
// the loss scaled before backward, one unscale pass over the reduced gradients, the host's wait
// for found_inf before optimizer.step() (none with a fused optimizer), the update after.
#include "core/grad_scaler.hpp"

#include <gtest/gtest.h>

#include "core/ddp_step.hpp"
#include "tests/core/ddp_run.hpp"
#include "tests/support/recording_backend.hpp"

namespace gradsync {
namespace {

using namespace ddp_test;

TEST(GradScaler, WorkIsOnePassOverTheGradientsAndItsScalars) {
  const GradScalerWork w = grad_scaler_work(4.0 * 124e6, 148);
  EXPECT_DOUBLE_EQ(w.unscale_bytes, 992e6);
  EXPECT_EQ(w.unscale_kernels, 4 + 2);  // inv_scale (3), found_inf (1), 148 tensors at 110 a launch
  EXPECT_EQ(grad_scaler_work(0, 110).unscale_kernels, 5);
  const GradScalerOptions plain{true, false}, fused{true, true}, off{};
  EXPECT_TRUE(plain.unscales(false));
  EXPECT_TRUE(plain.waits());
  EXPECT_FALSE(fused.unscales(false));  // the fused optimizer unscales inside its own kernel
  EXPECT_TRUE(fused.unscales(true));    // scaler.unscale_ before clip_grad_norm_
  EXPECT_FALSE(fused.waits());
  EXPECT_FALSE(off.unscales(true));
  EXPECT_FALSE(off.waits());
}

TEST(GradScaler, DdpScalesEachBackwardUnscalesOnceAndWaitsBeforeTheOptimizer) {
  for (bool fused : {false, true}) {
    DdpStepOptions o = cap_mb(1);
    o.grad_accum = 2;
    o.scaler = {true, fused};
    DdpRun r(linear_stack(4), o);
    r.costs.launch_s = 20e-6;
    r.go(2);
    EXPECT_EQ(r.calls(2, "grad_scaler:scale").size(), 2u) << fused;  // one per micro-step
    const auto unscale = r.calls(2, "grad_scaler:unscale");
    const auto opt = r.calls(2, "optimizer");
    const auto update = r.calls(2, "grad_scaler:update");
    ASSERT_EQ(opt.size(), 1u);
    ASSERT_EQ(update.size(), 1u);
    EXPECT_GE(update[0].start_s, opt[0].end_s);
    if (fused) {
      EXPECT_TRUE(unscale.empty());
      continue;
    }
    ASSERT_EQ(unscale.size(), 1u);
    EXPECT_EQ(unscale[0].bytes, 2 * r.model.gradient_bytes());
    for (const auto& b : r.calls(2, "allreduce:")) EXPECT_LE(b.end_s, unscale[0].start_s);
    // found_inf's .item(): the host waits for the unscale, then launches the optimizer.
    EXPECT_DOUBLE_EQ(opt[0].start_s, unscale[0].end_s + r.costs.launch_s);
  }
  DdpRun plain(linear_stack(4), cap_mb(1));
  plain.go(2);
  EXPECT_TRUE(plain.calls(2, "grad_scaler").empty());
}

}  // namespace
}  // namespace gradsync
