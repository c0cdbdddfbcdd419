// release_gates_test.cpp: what a script of one PyTorch release (and the NCCL it links) could not
// call is refused, naming the release (core/scenario_keys.cpp check_scenario_keys).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/scenario_keys.hpp"

namespace gradsync {
namespace {

TEST(ScenarioKeys, FeaturesNewerThanPytorchVersionAreRefused) {
  const auto message = [](const std::function<void(Scenario&)>& set, const std::string& version) {
    Scenario s;
    s.pytorch_version = version;
    set(s);
    try {
      check_scenario_keys(s);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message([](Scenario& s) { s.compile = true; }, "1.13"),
            "compile: torch.compile came with PyTorch 2.0; pytorch_version is 1.13");
  EXPECT_EQ(message([](Scenario& s) { s.compile = true; }, "2.0"), "accepted");
  EXPECT_EQ(message([](Scenario& s) { s.attention = "mem-efficient"; }, "1.13"),
            "attention mem-efficient: F.scaled_dot_product_attention came with PyTorch 2.0; pytorch_version is 1.13");
  EXPECT_EQ(message([](Scenario& s) { s.comm_hook = "fp16"; }, "1.7"),
            "comm_hook fp16: DDP's comm hooks (torch.distributed.algorithms.ddp_comm_hooks) came with PyTorch 1.8; "
            "pytorch_version is 1.7");
  EXPECT_EQ(message([](Scenario& s) { s.comm_hook = "fp16"; }, "1.8"), "accepted");
  EXPECT_EQ(message([](Scenario& s) { s.comm_hook = "bf16"; }, "1.9"),
            "comm_hook bf16: bf16_compress_hook came with PyTorch 1.10; pytorch_version is 1.9");
  EXPECT_EQ(message([](Scenario& s) { s.precision = "bf16"; }, "1.9"),
            "precision bf16: autocast to bfloat16 on CUDA came with PyTorch 1.10 (fp16 before it); pytorch_version is "
            "1.9");
  // TF32 came with 1.7 (allow_tf32): a 1.6 script runs float32 and cannot ask for it.
  EXPECT_EQ(message([](Scenario& s) { s.precision = "tf32"; }, "1.6"),
            "precision tf32: torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32 came with PyTorch 1.7; "
            "pytorch_version is 1.6");
  EXPECT_EQ(message([](Scenario& s) { s.precision = "tf32"; }, "1.7"), "accepted");
  // A model in bf16 (model.bfloat16(), master weights) needs no autocast.
  const auto sixteen_bit_model = [](const char* precision) {
    return [precision](Scenario& s) {
      s.precision = precision;
      s.mixed_precision = "master-weights";
    };
  };
  EXPECT_EQ(message(sixteen_bit_model("fp16"), "1.4"), "accepted");
  // Its bf16 buckets need ncclBfloat16 (NCCL 2.10), which 1.9's bundled 2.7 lacks.
  EXPECT_EQ(message(sixteen_bit_model("bf16"), "1.9"),
            "precision bf16 (mixed_precision master-weights): bfloat16 collectives need ncclBfloat16, from NCCL "
            "2.10; the run links NCCL 2.7");
  EXPECT_EQ(message(
                [](Scenario& s) {
                  s.precision = "bf16";
                  s.mixed_precision = "master-weights";
                  s.nccl_version = "2.10";
                },
                "1.9"),
            "accepted");
  EXPECT_EQ(message([](Scenario& s) { s.channels_last = true; }, "1.4"),
            "channels_last: torch.channels_last came with PyTorch 1.5; pytorch_version is 1.4");
  // fp16 autocast is torch.cuda.amp's (1.6); a 16-bit model (apex amp O2) ran before it.
  EXPECT_EQ(message([](Scenario& s) { s.precision = "fp16"; }, "1.5"),
            "precision fp16: torch.cuda.amp.autocast came with PyTorch 1.6 (before it, mixed_precision "
            "master-weights: apex amp O2); pytorch_version is 1.5");
  EXPECT_EQ(message([](Scenario& s) { s.precision = "fp16"; }, "1.6"), "accepted");
  EXPECT_EQ(message(sixteen_bit_model("fp16"), "1.5"), "accepted");
  // torch.optim's fused=True: Adam from 1.13, AdamW from 2.0.
  const auto optimizer = [](const char* opt, const char* impl) {
    return [opt, impl](Scenario& s) {
      s.optimizer = opt;
      s.optimizer_impl = impl;
    };
  };
  const auto fused = [&](const char* opt) { return optimizer(opt, "fused"); };
  EXPECT_EQ(message(fused("adamw"), "1.13"),
            "optimizer_impl fused: AdamW(fused=True) came with PyTorch 2.0; pytorch_version is 1.13");
  EXPECT_EQ(message(fused("adamw"), "2.0"), "accepted");
  EXPECT_EQ(message(fused("adam"), "1.12"),
            "optimizer_impl fused: Adam(fused=True) came with PyTorch 1.13; pytorch_version is 1.12");
  EXPECT_EQ(message(fused("adam"), "1.13"), "accepted");
  // apex.optimizers.FusedAdam is not torch.optim's: no release gate.
  EXPECT_EQ(message(optimizer("adam", "apex"), "1.4"), "accepted");
  // SGD's from 2.3 (pytorch/pytorch#116585); DDP's gradient_as_bucket_view from 1.7.
  EXPECT_EQ(message(fused("sgd-momentum"), "2.2"),
            "optimizer_impl fused: SGD(fused=True) came with PyTorch 2.3; pytorch_version is 2.2");
  EXPECT_EQ(message(fused("sgd"), "2.3"), "accepted");
  EXPECT_EQ(message([](Scenario& s) { s.gradient_as_bucket_view = true; }, "1.6"),
            "gradient_as_bucket_view: DDP(gradient_as_bucket_view=True) came with PyTorch 1.7; pytorch_version is 1.6");
  EXPECT_EQ(message([](Scenario& s) { s.gradient_as_bucket_view = true; }, "1.7"), "accepted");
  // Setting the gradients to None by hand is older than zero_grad's argument (1.7): taken.
  EXPECT_EQ(message([](Scenario& s) { s.set_to_none = "true"; }, "1.4"), "accepted");
  // The multi-tensor optimizers came with 1.7; bf16 collectives need NCCL 2.10 (PyTorch 1.10's).
  EXPECT_EQ(message([](Scenario& s) { s.optimizer_impl = "foreach"; }, "1.6"),
            "optimizer_impl foreach: torch.optim's multi-tensor optimizers (torch.optim._multi_tensor; foreach= "
            "from 1.12) came with PyTorch 1.7; pytorch_version is 1.6");
  EXPECT_EQ(message([](Scenario& s) { s.optimizer_impl = "foreach"; }, "1.7"), "accepted");
  EXPECT_EQ(message(
                [](Scenario& s) {
                  s.comm_hook = "bf16";
                  s.nccl_version = "2.7";
                },
                "2.11"),
            "comm_hook bf16: bfloat16 collectives need ncclBfloat16, from NCCL 2.10; the run links NCCL 2.7");
  EXPECT_EQ(message([](Scenario& s) { s.comm_hook = "bf16"; }, "1.10"), "accepted");
}

}  // namespace
}  // namespace gradsync
