// scenario_basics_test.cpp: what resolving a scenario's basics does to its model and its run:
// buffers that exist only under math attention (nanoGPT's causal mask) are dropped when the run
// calls F.scaled_dot_product_attention, Adam refuses a sparse gradient, a padded vocabulary widens the per-token
// tables, and the release sets the default precision and whether convolutions run as TF32.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
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

// torch.optim.Adam and AdamW refuse a sparse gradient (nn.Embedding(sparse=True)); SGD takes it.
TEST(ScenarioBasics, AdamRefusesASparseGradient) {
  Model m = load_model("gpt2");
  m.parameters.front().sparse_grad = true;  // wte
  for (const char* optimizer : {"adam", "adamw"}) {
    Scenario s;
    s.optimizer = optimizer;
    Model copy = m;
    try {
      (void)resolve_basics(s, copy, gpu_spec("a100"));
      ADD_FAILURE() << optimizer << " took a sparse gradient";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("parameter transformer.wte.weight has a sparse gradient"), std::string::npos) << what;
      EXPECT_NE(what.find("does not support sparse gradients"), std::string::npos) << what;
    }
  }
  for (const char* optimizer : {"sgd", "sgd-momentum"}) {
    Scenario s;
    s.optimizer = optimizer;
    Model copy = m;
    EXPECT_NO_THROW((void)resolve_basics(s, copy, gpu_spec("a100"))) << optimizer;
  }
}

// resize_token_embeddings(pad_to_multiple_of=64) widens every per-token table: GPT-2's tied
// embedding (50257 -> 50304 rows of 768), Llama 2's untied embedding and output projection (32000
// -> 32768 rows of 4096 at 1024); the products are widened by the coster, which still sees the
// unpadded vocabulary.
TEST(ScenarioBasics, PaddingTheVocabularyWidensEveryPerTokenTable) {
  struct Case {
    const char* model;
    int multiple;
    std::int64_t added;  // parameters the padding adds
  };
  for (const Case c :
       {Case{"gpt2", 64, 47 * 768}, Case{"gpt2-hf", 64, 47 * 768}, Case{"llama2-7b", 1024, 2 * 768 * 4096}}) {
    Scenario s;
    s.precision = "bf16";
    Model as_is = load_model(c.model);
    (void)resolve_basics(s, as_is, gpu_spec("a100"));
    s.pad_to_multiple_of = c.multiple;
    Model padded = load_model(c.model);
    (void)resolve_basics(s, padded, gpu_spec("a100"));
    EXPECT_EQ(padded.total_params() - as_is.total_params(), c.added) << c.model;
    EXPECT_EQ(vocabulary_size(padded), vocabulary_size(as_is)) << c.model;
    EXPECT_EQ(padded.parameter_bytes() - as_is.parameter_bytes(), 4 * c.added) << c.model;  // float32 weights
  }
  // A model without a product over a vocabulary keeps its parameters (the flag is inert there, and
  // said to be): BERT's encoder without its prediction head, a ResNet.
  for (const char* name : {"bert-base", "resnet50"}) {
    Scenario s;
    s.precision = "bf16";
    s.pad_to_multiple_of = 64;
    Model m = load_model(name);
    const std::int64_t before = m.total_params();
    (void)resolve_basics(s, m, gpu_spec("a100"));
    EXPECT_EQ(m.total_params(), before) << name;
  }
}

// Float32 convolutions run as TF32 on an A100 from PyTorch 1.7 (cudnn.allow_tf32 came then and has
// defaulted to True since), in float32 before it, where there was no TF32: ResNet-50, whose time is
// mostly convolutions, takes more than twice as long in 1.6 (fp32 peak 19.5 TFLOP/s against TF32's
// 156), and 1.7 and 1.12 (matmul TF32 off again) price convolutions alike.
TEST(ComputeCost, ConvolutionsRunAsTf32OnlyFromPytorch17) {
  const GpuSpec& gpu = gpu_spec("a100");
  const auto compute_s = [&](const char* version) {
    Scenario s;
    s.pytorch_version = version;
    s.precision = "fp32";
    Model m = load_model("resnet50");
    const ScenarioBasics b = resolve_basics(s, m, gpu);
    ComputeContext ctx{&gpu, b.precision, 32, 1, {}};
    apply_framework(ctx, s);
    const ModelCost c = model_cost(m, ctx);
    return c.forward_s + c.backward_s;
  };
  EXPECT_GT(compute_s("1.6"), 2.0 * compute_s("1.7"));
  EXPECT_NEAR(compute_s("1.12"), compute_s("1.7"), 0.02 * compute_s("1.7"));  // only the fc's GEMM differs
}

// The default precision follows the release: bf16 autocast from PyTorch 1.10 where the GPU has
// bf16, fp16 autocast from 1.6 (torch.cuda.amp), float32 before it, or fp16 for a 16-bit model.
TEST(ScenarioBasics, TheDefaultPrecisionIsWhatTheReleaseCouldAutocast) {
  const auto precision = [](const char* gpu, const char* version, const char* mixed) {
    Scenario s;
    s.pytorch_version = version;
    s.mixed_precision = mixed;
    Model m = load_model("resnet18");
    return resolve_basics(s, m, gpu_spec(gpu)).precision;
  };
  EXPECT_EQ(precision("a100", "2.11", "autocast"), Precision::kBF16);
  EXPECT_EQ(precision("a100", "1.9", "autocast"), Precision::kFP16);
  EXPECT_EQ(precision("v100", "1.6", "autocast"), Precision::kFP16);
  EXPECT_EQ(precision("v100", "1.5", "autocast"), Precision::kFP32);
  EXPECT_EQ(precision("v100", "1.5", "master-weights"), Precision::kFP16);
}

}  // namespace
}  // namespace gradsync
