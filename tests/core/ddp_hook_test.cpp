// ddp_hook_test.cpp: DDP communication hooks (fp16/bf16 compression, quantization, PowerSGD) on
// the recording backend: what each allreduces or allgathers, and their names.
#include <gtest/gtest.h>

#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "tests/core/ddp_run.hpp"

namespace gradsync::ddp_hook_test {

using namespace ddp_test;

TEST(DdpStep, CompressionHooksHalveTheAllreducedBytes) {
  for (const char* hook : {"fp16", "bf16"}) {
    DdpStepOptions o = cap_mb(1);
    o.ddp.hook = parse_comm_hook(hook);
    DdpRun r(linear_stack(4), o);
    r.go(2);
    EXPECT_EQ(r.bytes(2, "allreduce:"), r.model.gradient_bytes() / 2) << hook;
    EXPECT_EQ(r.calls(2, "compress:").size(), 4u);
    EXPECT_EQ(r.calls(2, "decompress:").size(), 4u);
    for (const auto& c : r.calls(2, "decompress:")) EXPECT_EQ(c.stream, Stream::kComm);
  }
}

TEST(DdpStep, QuantizationHookAllgathersOneBytePerElementAndTheScales) {
  DdpStepOptions o = cap_mb(1);
  o.ddp.hook = parse_comm_hook("quantize");
  DdpRun r(linear_stack(4), o);
  r.go(2);
  EXPECT_TRUE(r.calls(2, "allreduce:bucket").empty());
  EXPECT_EQ(r.bytes(2, "allgather:"), r.model.gradient_bytes() / 4);
  EXPECT_EQ(r.bytes(2, "allgather_qparams:"), 4u * 8);
}

TEST(DdpStep, PowerSgdAllreducesPlainlyBeforeItsStartIterationThenLowRankFactors) {
  DdpStepOptions o = cap_mb(1);
  o.ddp.hook = parse_comm_hook("powersgd:rank=2,start_iter=2");
  DdpRun r(linear_stack(4), o);
  r.go(3);
  // Iterations 1 and 2 (state.iter 0 and 1 < 2): default allreduce of every gradient.
  EXPECT_EQ(r.bytes(1, "allreduce:"), r.model.gradient_bytes());
  EXPECT_EQ(r.bytes(2, "allreduce:"), r.model.gradient_bytes());
  // Iteration 3: each [256, 1020] weight compresses ((256 + 1020) * 2 * 2 < 256 * 1020) into
  // P (256 x 2) and Q (1020 x 2); biases go uncompressed. Three allreduces per bucket.
  EXPECT_EQ(r.bytes(3, "allreduce_uncompressed:"), 4u * 4 * 1024);
  EXPECT_EQ(r.bytes(3, "allreduce_p:"), 4u * 4 * 256 * 2);
  EXPECT_EQ(r.bytes(3, "allreduce_q:"), 4u * 4 * 1020 * 2);
  EXPECT_EQ(r.calls(3, "allreduce:").size(), 0u);
  // P and Q are sequential: Q's allreduce starts after P's ends, bucket by bucket.
  const auto p = r.calls(3, "allreduce_p:");
  const auto q = r.calls(3, "allreduce_q:");
  for (std::size_t b = 0; b < 4; ++b) EXPECT_GE(q[b].start_s, p[b].end_s);
}

// PowerSGDState keeps, once it compresses, an error tensor the size of each bucket and each
// compressed matrix's P (n x r) and Q (m x r), in the gradients' type; a vector and a matrix not
// worth compressing ((n + m) r 2 >= n m) only count in the error tensor.
TEST(DdpStep, PowerSgdStateIsErrorFeedbackPlusPAndQ) {
  const CommHook h = parse_comm_hook("powersgd:rank=2");
  const std::vector<std::vector<std::int64_t>> shapes = {{1024, 256, 4}, {1024}, {4, 4}};
  const double elements = 1024.0 * 1024 + 1024 + 16;
  const double factors = 1024.0 * 2 + 1024.0 * 2;  // the 1024 x 1024 view: P 1024 x 2, Q 1024 x 2
  EXPECT_DOUBLE_EQ(powersgd_state_bytes(h, shapes, DType::kFloat32), 4 * (elements + factors));
  EXPECT_DOUBLE_EQ(powersgd_state_bytes(h, shapes, DType::kBFloat16), 2 * (elements + factors));
  EXPECT_DOUBLE_EQ(powersgd_state_bytes(parse_comm_hook("fp16"), shapes, DType::kFloat32), 0.0);
}

TEST(DdpStep, CommHookNamesParseAndBadOnesAreErrors) {
  EXPECT_EQ(parse_comm_hook("none").kind, CommHookKind::kNone);
  EXPECT_EQ(comm_hook_name(parse_comm_hook("powersgd")), "powersgd:rank=1,start_iter=1000");
  EXPECT_EQ(parse_comm_hook("powersgd:rank=4").powersgd_rank, 4);
  EXPECT_THROW(parse_comm_hook("zip"), ConfigError);
  EXPECT_THROW(parse_comm_hook("fp16:rank=2"), ConfigError);
  try {
    parse_comm_hook("powersgd:start_iter=1");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "comm hook \"powersgd:start_iter=1\": start_iter \"1\" must be an integer from 2 to 2147483647; "
                 "expected none, fp16, bf16, quantize or powersgd[:rank=R,start_iter=S]");
  }
}

TEST(DdpStep, CommHookOptionsAreGivenOnceAndNoneIsEmpty) {
  const auto error = [](const char* text) {
    try {
      (void)parse_comm_hook(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("powersgd:rank=2,rank=3").find("option \"rank\" given twice"), std::string::npos);
  EXPECT_NE(error("powersgd:rank=2,").find("an empty option"), std::string::npos);
  EXPECT_NE(error("powersgd:,rank=2").find("an empty option"), std::string::npos);
  EXPECT_NE(error("powersgd:").find("no options after ':'"), std::string::npos);
  // What a scenario records is the hook as it runs, options resolved.
  EXPECT_EQ(comm_hook_name(parse_comm_hook("PowerSGD:start_iter=5,rank=3")), "powersgd:rank=3,start_iter=5");
  EXPECT_EQ(comm_hook_name(parse_comm_hook("allreduce")), "none");
}

}  // namespace gradsync::ddp_hook_test
