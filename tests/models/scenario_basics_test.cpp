// scenario_basics_test.cpp: what resolving a scenario's basics does to its model: buffers that
// exist only under math attention (nanoGPT's causal mask) are dropped when the run calls
// F.scaled_dot_product_attention.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/scenario.hpp"
#include "models/model.hpp"
#include "models/scenario_basics.hpp"
#include "models/step_costs.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

int registered(const Model& m) {
  return static_cast<int>(
      std::count_if(m.buffers.begin(), m.buffers.end(), [](const Buffer& b) { return b.registered; }));
}

TEST(ScenarioBasics, FlashAttentionDropsNanoGptsMaskAndNotHuggingFacesOwn) {
  for (const char* attention : {"math", "flash", "mem-efficient"}) {
    Scenario s;
    s.attention = attention;
    s.precision = "bf16";
    Model nano = load_model("nanogpt");
    const ScenarioBasics b = resolve_basics(s, nano, gpu_spec("a100"));
    const bool math = std::string(attention) == "math";
    EXPECT_EQ(registered(nano), math ? 12 : 0) << attention;
    EXPECT_EQ(nano.buffer_bytes(), math ? 12 * 1024 * 1024 * 4 : 0) << attention;
    // DDP broadcasts and DP replicates what the step model lists.
    EXPECT_EQ(to_step_model(nano, b.precision, b.seq_len).buffers.size(), math ? 12u : 0u) << attention;
    // transformers' GPT2Attention registers its mask and masked_bias whatever runs.
    Model hf = load_model("gpt2-hf");
    (void)resolve_basics(s, hf, gpu_spec("a100"));
    EXPECT_EQ(registered(hf), 24) << attention;
  }
}

}  // namespace
}  // namespace gradsync
