// advice_test.cpp: which changes are tried on a run (core/advice.hpp), and how they are ranked.
#include "core/advice.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gradsync {
namespace {

// resolved_8: a resolved scenario on 8 GPUs of one node, every DDP option at PyTorch's default.
Scenario resolved_8() {
  Scenario s;
  s.gpus = 8;
  s.nnodes = 1;
  s.nproc_per_node = 8;
  s.batch_per_gpu = 16;
  s.precision = "bf16";
  s.bucket_cap_mb = 25;
  return s;
}

ModelTraits traits(bool attention, bool convolution) {
  ModelTraits t;
  t.attention = attention;
  t.convolution = convolution;
  return t;
}

const Change* find(const std::vector<Change>& cs, const std::string& what) {
  const auto it = std::find_if(cs.begin(), cs.end(), [&](const Change& c) { return c.what == what; });
  return it == cs.end() ? nullptr : &*it;
}

TEST(Advice, DdpRunTriesBucketCapsAroundTheDefaultHooksAccumulationAndNccl) {
  const std::vector<Change> cs = candidate_changes(resolved_8(), Strategy::kDDP, traits(true, false));
  for (const char* cap : {"5", "10", "50", "100"}) {
    const Change* c = find(cs, std::string("bucket_cap_mb ") + cap);
    ASSERT_NE(c, nullptr) << cap;
    EXPECT_EQ(c->keys, (std::vector<std::pair<std::string, std::string>>{{"bucket_cap_mb", cap}}));
    EXPECT_EQ(c->pytorch, std::string("DDP(model, bucket_cap_mb=") + cap + ")");
    EXPECT_TRUE(c->alters.empty());
  }
  EXPECT_EQ(find(cs, "bucket_cap_mb 25"), nullptr) << "the run's own cap is not a change";
  EXPECT_EQ(find(cs, "DDP instead of DP"), nullptr);
  // Compression and a larger global batch change the maths, and say so.
  ASSERT_NE(find(cs, "comm hook bf16"), nullptr);
  EXPECT_FALSE(find(cs, "comm hook bf16")->alters.empty());
  ASSERT_NE(find(cs, "grad_accum 4 with no_sync"), nullptr);
  EXPECT_FALSE(find(cs, "grad_accum 4 with no_sync")->alters.empty());
  // A bf16 model's gradients are bf16 already: the bf16 hook averages them as they are.
  Scenario half = resolved_8();
  half.mixed_precision = "master-weights";
  half.precision = "bf16";
  const std::vector<Change> hs = candidate_changes(half, Strategy::kDDP, traits(true, false));
  EXPECT_TRUE(find(hs, "comm hook bf16")->alters.empty());
  EXPECT_EQ(find(hs, "comm hook fp16")->alters, "gradients are averaged in fp16");
  // One node: NCCL's tree does not serve allreduce there, so it is not tried.
  EXPECT_NE(find(cs, "NCCL_ALGO=Ring"), nullptr);
  EXPECT_EQ(find(cs, "NCCL_ALGO=Tree"), nullptr);
  // bf16: the flash kernel; the batch search is one change whose keys the engine fills.
  ASSERT_NE(find(cs, "flash attention"), nullptr);
  const Change* batch = find(cs, "largest batch that fits");
  ASSERT_NE(batch, nullptr);
  EXPECT_TRUE(batch->largest_batch);
  EXPECT_TRUE(batch->keys.empty());
}

TEST(Advice, DpRunTriesDdpAndOnlyWhatDataParallelHas) {
  Scenario s = resolved_8();
  s.precision = "fp32";
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDP, traits(false, true));
  ASSERT_FALSE(cs.empty());
  EXPECT_EQ(cs.front().what, "DDP instead of DP");
  ASSERT_TRUE(cs.front().strategy.has_value());
  EXPECT_EQ(*cs.front().strategy, Strategy::kDDP);
  EXPECT_NE(cs.front().pytorch.find("--nproc-per-node 8"), std::string::npos);
  for (const Change& c : cs) {
    for (const auto& [key, value] : c.keys) {
      EXPECT_NE(key, "bucket_cap_mb") << "DataParallel has no buckets";
      EXPECT_NE(key, "comm_hook") << "DataParallel has no comm hooks";
    }
  }
  EXPECT_NE(find(cs, "channels_last"), nullptr) << "a model with convolutions";
  EXPECT_EQ(find(cs, "flash attention"), nullptr) << "a model without attention";
}

TEST(Advice, AVocabularyOffSixtyFourIsPaddedOnce) {
  Scenario s = resolved_8();
  ModelTraits t = traits(true, false);
  t.vocabulary = 50257;  // GPT-2's
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDDP, t);
  const Change* pad = find(cs, "vocabulary padded to 50304");
  ASSERT_NE(pad, nullptr);
  ASSERT_EQ(pad->keys.size(), 1u);
  EXPECT_EQ(pad->keys.front(), (std::pair<std::string, std::string>{"pad_to_multiple_of", "64"}));
  EXPECT_NE(pad->pytorch.find("resize_token_embeddings(len(tokenizer), pad_to_multiple_of=64)"), std::string::npos);
  EXPECT_EQ(pad->alters, "47 output classes that no token uses join the softmax");
  // Already padded: in the model (nanoGPT's 50304, Llama's 32000) or by the key.
  t.vocabulary = 50304;
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "vocabulary padded to 50304"), nullptr);
  t.vocabulary = 50257;
  s.pad_to_multiple_of = 8;
  for (const Change& c : candidate_changes(s, Strategy::kDDP, t))
    EXPECT_EQ(c.what.rfind("vocabulary", 0), std::string::npos);
  // No product spans a vocabulary (a classifier, BERT's encoder): nothing to pad.
  s.pad_to_multiple_of = 1;
  t.vocabulary = 0;
  for (const Change& c : candidate_changes(s, Strategy::kDDP, t))
    EXPECT_EQ(c.what.rfind("vocabulary", 0), std::string::npos);
}

// A GPU without SDPA's flash kernel (a V100, compute capability 7.0) gets the memory-efficient
// kernel tried, as SDPA itself picks there; find_unused_parameters=True gets "off" tried (and
// static_graph, which DDP does not take with it, is not).
TEST(Advice, AGpuWithoutFlashTriesMemEfficientAndFindUnusedIsTriedOff) {
  ModelTraits v100 = traits(true, false);
  v100.flash = false;
  const std::vector<Change> cs = candidate_changes(resolved_8(), Strategy::kDDP, v100);
  EXPECT_EQ(find(cs, "flash attention"), nullptr);
  ASSERT_NE(find(cs, "mem-efficient attention"), nullptr);
  EXPECT_EQ(find(cs, "mem-efficient attention")->keys,
            (std::vector<std::pair<std::string, std::string>>{{"attention", "mem-efficient"}}));
  EXPECT_EQ(find(cs, "find_unused_parameters off"), nullptr) << "it is off already";
  Scenario s = resolved_8();
  s.find_unused_parameters = true;
  const std::vector<Change> un = candidate_changes(s, Strategy::kDDP, traits(true, false));
  ASSERT_NE(find(un, "find_unused_parameters off"), nullptr);
  EXPECT_EQ(find(un, "find_unused_parameters off")->pytorch, "DDP(model, find_unused_parameters=False)");
  EXPECT_FALSE(find(un, "find_unused_parameters off")->alters.empty());
  EXPECT_EQ(find(un, "static_graph"), nullptr);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDP, traits(true, false)), "find_unused_parameters off"), nullptr);
}

// fp16 autocast on a GPU that autocasts to bf16: bf16 without GradScaler is tried, and says the
// maths change; not where the GPU has no bf16, nor for a run already in bf16 or a 16-bit model.
TEST(Advice, Fp16AutocastTriesBf16WithoutGradScaler) {
  Scenario s = resolved_8();
  s.precision = "fp16";
  s.grad_scaler = "true";
  ModelTraits a100 = traits(false, true);
  a100.bf16 = true;
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDDP, a100);  // kept: find points into it
  const Change* c = find(cs, "bf16 autocast, no GradScaler");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->keys,
            (std::vector<std::pair<std::string, std::string>>{{"precision", "bf16"}, {"grad_scaler", "false"}}));
  EXPECT_FALSE(c->alters.empty());
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, traits(false, true)), "bf16 autocast, no GradScaler"), nullptr);
  EXPECT_EQ(find(candidate_changes(resolved_8(), Strategy::kDDP, a100), "bf16 autocast, no GradScaler"), nullptr);
  s.mixed_precision = "master-weights";
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, a100), "bf16 autocast, no GradScaler"), nullptr);
}

// A float32 run is offered the precisions its GPU and release run, first among the script's
// changes (they gain most): TF32 products and bf16 autocast on an A100, fp16 autocast under
// GradScaler on a V100 (no bf16 there); each changes the maths. A run already in bf16 gets none.
TEST(Advice, AFloat32RunTriesTf32AndAutocastFirst) {
  Scenario s = resolved_8();
  s.precision = "fp32";
  ModelTraits a100 = traits(true, false);
  a100.tf32 = a100.bf16 = a100.fp16 = true;
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDDP, a100);
  const Change* tf32 = find(cs, "TF32 products");
  const Change* bf16 = find(cs, "bf16 autocast");
  ASSERT_NE(tf32, nullptr);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(tf32->keys, (std::vector<std::pair<std::string, std::string>>{{"precision", "tf32"}}));
  EXPECT_EQ(bf16->keys,
            (std::vector<std::pair<std::string, std::string>>{{"precision", "bf16"}, {"grad_scaler", "false"}}));
  EXPECT_FALSE(tf32->alters.empty());
  EXPECT_EQ(find(cs, "fp16 autocast with GradScaler"), nullptr);  // bf16 where the GPU has it
  // Right after the batch changes: before the optimizer, input and NCCL changes.
  EXPECT_LT(tf32 - cs.data(), 4);
  ModelTraits v100 = traits(true, false);
  v100.fp16 = true;
  const std::vector<Change> vs = candidate_changes(s, Strategy::kDDP, v100);
  EXPECT_EQ(find(vs, "TF32 products"), nullptr);
  EXPECT_EQ(find(vs, "bf16 autocast"), nullptr);
  const Change* fp16 = find(vs, "fp16 autocast with GradScaler");
  ASSERT_NE(fp16, nullptr);
  EXPECT_EQ(fp16->keys,
            (std::vector<std::pair<std::string, std::string>>{{"precision", "fp16"}, {"grad_scaler", "true"}}));
  EXPECT_EQ(find(candidate_changes(resolved_8(), Strategy::kDDP, a100), "TF32 products"), nullptr);
}

// static_graph rebuilds the buckets for iteration 3: its candidate's steady mean starts there,
// not at the run's iteration 2 (which would average its constructed buckets in).
// SDPA as each attention takes it: causal (is_causal=True) and unmasked on the flash kernel; a
// padding mask goes in as attn_mask, which flash does not accept, so mem-efficient is tried.
TEST(Advice, AttentionIsTriedAsSdpaTakesItsMask) {
  ModelTraits t = traits(true, false);
  t.causal = true;
  const std::vector<Change> decoder = candidate_changes(resolved_8(), Strategy::kDDP, t);
  const Change* causal = find(decoder, "flash attention");
  ASSERT_NE(causal, nullptr);
  EXPECT_EQ(causal->pytorch, "F.scaled_dot_product_attention(q, k, v, is_causal=True)");
  t.causal = false;
  const std::vector<Change> encoder = candidate_changes(resolved_8(), Strategy::kDDP, t);
  const Change* plain = find(encoder, "flash attention");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->pytorch, "F.scaled_dot_product_attention(q, k, v)");
  t.masked = true;
  const std::vector<Change> masked = candidate_changes(resolved_8(), Strategy::kDDP, t);
  EXPECT_EQ(find(masked, "flash attention"), nullptr);
  ASSERT_NE(find(masked, "mem-efficient attention"), nullptr);
  EXPECT_EQ(find(masked, "mem-efficient attention")->pytorch,
            "F.scaled_dot_product_attention(q, k, v, attn_mask=mask)");
}

// torch.compile is not tried for DataParallel on several GPUs: it does not compile through DP's
// replica threads (pytorch/pytorch#94636), so it would gain nothing; on one GPU, or under DDP, it is.
TEST(Advice, TorchCompileIsNotTriedForDataParallelOnSeveralGpus) {
  Scenario s = resolved_8();
  const ModelTraits t = traits(true, true);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDP, t), "torch.compile"), nullptr);
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "torch.compile"), nullptr);
  s.gpus = 1;
  EXPECT_NE(find(candidate_changes(s, Strategy::kDP, t), "torch.compile"), nullptr);
}

// Only what the script's PyTorch release can call is tried: no torch.compile, SDPA, comm hooks or
// fused AdamW on 1.7, no bf16 hook before 1.10, no channels_last on 1.4.
TEST(Advice, OnlyWhatTheReleaseHasIsTried) {
  Scenario s = resolved_8();
  s.pytorch_version = "1.7";
  s.optimizer = "adamw";
  ModelTraits t = traits(true, true);
  const std::vector<Change> old = candidate_changes(s, Strategy::kDDP, t);
  for (const char* what : {"torch.compile", "flash attention", "mem-efficient attention", "comm hook bf16",
                           "comm hook fp16", "fused optimizer"})
    EXPECT_EQ(find(old, what), nullptr) << what;
  EXPECT_NE(find(old, "channels_last"), nullptr);
  s.pytorch_version = "1.9";
  const std::vector<Change> hooks = candidate_changes(s, Strategy::kDDP, t);
  EXPECT_NE(find(hooks, "comm hook fp16"), nullptr);
  EXPECT_EQ(find(hooks, "comm hook bf16"), nullptr);
  s.pytorch_version = "1.4";
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "channels_last"), nullptr);
  // NCCL 2.4 (PyTorch 1.4's) reads neither NCCL_ALGO nor NCCL_PROTO; 2.5 does.
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_ALGO=Ring"), nullptr);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_PROTO=Simple"), nullptr);
  s.nccl_version = "2.5";
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_ALGO=Ring"), nullptr);
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_PROTO=Simple"), nullptr);
  s.nccl_version = "auto";
  // Each channel count where it is not set: NCCL caps the rings at the maximum, then copies them
  // up to the minimum, so a minimum beside a maximum set still changes the run.
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_MIN_NCHANNELS=32"), nullptr);
  s.nccl_max_nchannels = 1;
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_MIN_NCHANNELS=32"), nullptr);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_MAX_NCHANNELS=4"), nullptr);
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "NCCL_MAX_NCHANNELS unset"), nullptr);
  s.nccl_max_nchannels = 0;
  // DDP's static_graph (1.9) and gradient_as_bucket_view (1.7); zero_grad's set_to_none (1.7),
  // which a script before it writes by hand.
  s.pytorch_version = "1.8";
  s.set_to_none = "false";
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "static_graph"), nullptr);
  EXPECT_NE(find(candidate_changes(s, Strategy::kDDP, t), "gradient_as_bucket_view"), nullptr);
  s.pytorch_version = "1.6";
  const std::vector<Change> v16 = candidate_changes(s, Strategy::kDDP, t);
  EXPECT_EQ(find(v16, "gradient_as_bucket_view"), nullptr);
  ASSERT_NE(find(v16, "zero_grad set_to_none"), nullptr);
  EXPECT_EQ(find(v16, "zero_grad set_to_none")->pytorch.rfind("for p in model.parameters(): p.grad = None", 0), 0u);
  s.zero_grad = false;  // a loop that never calls zero_grad: nothing for set_to_none to change
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "zero_grad set_to_none"), nullptr);
  s.zero_grad = true;
  // 1.9 and 1.10 turn it on with the private call; the constructor takes it from 1.11.
  s.pytorch_version = "1.10";
  ASSERT_NE(find(candidate_changes(s, Strategy::kDDP, t), "static_graph"), nullptr);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "static_graph")->pytorch,
            "ddp_model._set_static_graph() after DDP(model)");
  s.pytorch_version = "1.11";
  ASSERT_NE(find(candidate_changes(s, Strategy::kDDP, t), "static_graph"), nullptr);
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "static_graph")->pytorch, "DDP(model, static_graph=True)");
}

// A setting the run made that may hurt is tried undone: an NCCL knob (back to NCCL's own choice),
// the allreduce after backward (DDP's overlap), a pre-2.0 loop over the parameters (foreach).
TEST(Advice, SettingsTheRunMadeAreTriedUndone) {
  Scenario s = resolved_8();
  s.nccl_max_nchannels = 1;
  s.nccl_p2p_disable = true;
  s.allreduce_after_backward = true;
  s.optimizer = "adamw";
  s.optimizer_impl = "for-loop";
  s.pytorch_version = "1.12";
  const ModelTraits t{};
  const std::vector<Change> c = candidate_changes(s, Strategy::kDDP, t);
  const Change* max = find(c, "NCCL_MAX_NCHANNELS unset");
  ASSERT_NE(max, nullptr);
  EXPECT_EQ(max->keys, (std::vector<std::pair<std::string, std::string>>{{"NCCL_MAX_NCHANNELS", kUnsetValue}}));
  EXPECT_NE(find(c, "NCCL_P2P_DISABLE unset"), nullptr);
  EXPECT_EQ(find(c, "NCCL_ALGO unset"), nullptr);  // not set: nothing to undo
  ASSERT_NE(find(c, "allreduce overlapping backward"), nullptr);
  ASSERT_NE(find(c, "foreach optimizer"), nullptr);
  EXPECT_EQ(find(c, "foreach optimizer")->pytorch, "torch.optim.AdamW(model.parameters(), foreach=True)");
  s.pytorch_version = "1.8";
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "foreach optimizer")->pytorch,
            "torch.optim._multi_tensor.AdamW(model.parameters())");
  s.pytorch_version = "1.6";
  EXPECT_EQ(find(candidate_changes(s, Strategy::kDDP, t), "foreach optimizer"), nullptr);
}

TEST(Advice, AMeasuredStepTriesOnlyTheBatchAndTheStrategysOptions) {
  Scenario s = resolved_8();
  s.optimizer = "adamw";
  s.optimizer_impl = "foreach";
  s.input = "pageable";
  s.set_to_none = "false";
  ModelTraits t = traits(true, true);
  t.vocabulary = 50257;
  const std::vector<Change> roofline = candidate_changes(s, Strategy::kDDP, t);
  t.measured = true;
  const std::vector<Change> measured = candidate_changes(s, Strategy::kDDP, t);
  for (const char* what : {"torch.compile", "flash attention", "channels_last", "fused optimizer", "pinned input",
                           "zero_grad set_to_none", "vocabulary padded to 50304"}) {
    EXPECT_NE(find(roofline, what), nullptr) << what;
    EXPECT_EQ(find(measured, what), nullptr) << what;
  }
  for (const char* what : {"largest batch that fits", "bucket_cap_mb 50", "static_graph", "comm hook bf16"})
    EXPECT_NE(find(measured, what), nullptr) << what;
}

TEST(Advice, StaticGraphIsSimulatedToItsRebuiltBuckets) {
  Scenario s = resolved_8();
  s.iterations = 2;
  s.warmup = 1;
  const Change* sg = nullptr;
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDDP, traits(true, false));
  sg = find(cs, "static_graph");
  ASSERT_NE(sg, nullptr);
  EXPECT_EQ(sg->keys, (std::vector<std::pair<std::string, std::string>>{
                          {"static_graph", "true"}, {"warmup", "2"}, {"iterations", "3"}}));
  // PowerSGD (start_iter 2) compresses from iteration 3 as well.
  const Change* psgd = find(cs, "comm hook PowerSGD rank 1 (after its warm-up)");
  ASSERT_NE(psgd, nullptr);
  EXPECT_EQ(psgd->keys, (std::vector<std::pair<std::string, std::string>>{
                            {"comm_hook", "powersgd:rank=1,start_iter=2"}, {"warmup", "2"}, {"iterations", "3"}}));
  // The script's line says that a real run compresses only from start_powerSGD_iter on.
  EXPECT_NE(psgd->pytorch.find("start_powerSGD_iter=1000"), std::string::npos) << psgd->pytorch;
  EXPECT_NE(psgd->pytorch.find("the gain is from then on"), std::string::npos) << psgd->pytorch;
  s.iterations = 5;
  s.warmup = 3;
  const std::vector<Change> later = candidate_changes(s, Strategy::kDDP, traits(true, false));
  EXPECT_EQ(find(later, "static_graph")->keys,
            (std::vector<std::pair<std::string, std::string>>{{"static_graph", "true"}}));
}

TEST(Advice, ChangesAlreadyMadeAreNotTriedAgain) {
  Scenario s = resolved_8();
  s.static_graph = true;
  s.gradient_as_bucket_view = true;
  s.broadcast_buffers = false;
  s.comm_hook = "bf16";
  s.grad_accum = 2;
  s.compile = true;
  s.input = "pinned";
  s.optimizer_impl = "fused";
  s.nccl_algo = "ring";
  s.nccl_proto = "simple";
  s.nccl_max_nchannels = 8;
  s.attention = "flash";
  const std::vector<Change> cs = candidate_changes(s, Strategy::kDDP, traits(true, false));
  for (const char* what : {"static_graph", "gradient_as_bucket_view", "broadcast_buffers off", "comm hook fp16",
                           "grad_accum 4 with no_sync", "torch.compile", "pinned input", "fused optimizer",
                           "NCCL_ALGO=Ring", "NCCL_PROTO=Simple", "NCCL_MAX_NCHANNELS=4", "flash attention"}) {
    EXPECT_EQ(find(cs, what), nullptr) << what;
  }
  // apex's FusedAdam is already a fused optimizer.
  Scenario apex = resolved_8();
  apex.optimizer_impl = "apex";
  EXPECT_EQ(find(candidate_changes(apex, Strategy::kDDP, traits(true, false)), "fused optimizer"), nullptr);
  // One GPU: nothing to communicate, so no DDP or NCCL change.
  Scenario one = resolved_8();
  one.gpus = 1;
  for (const Change& c : candidate_changes(one, Strategy::kDDP, traits(false, false)))
    EXPECT_TRUE(c.keys.empty() ||
                (c.keys.front().first.rfind("NCCL", 0) != 0 && c.keys.front().first != "bucket_cap_mb"))
        << c.what;
}

TEST(Advice, RankedByGainThenTheOthersAndOnlyGainsOfOnePercentAreAdvised) {
  Advice a;
  auto add = [&](const std::string& what, const std::string& status, double gain) {
    ChangeResult c;
    c.change.what = what;
    c.status = status;
    c.gain = gain;
    a.changes.push_back(std::move(c));
  };
  add("small", "ok", 0.005);
  add("failed", "failed", 0);
  add("big", "ok", 0.30);
  add("oom", "oom", 0.50);
  add("mid", "ok", 0.02);
  add("late", "budget", 0);
  add("worse", "ok", -0.1);
  rank_changes(a);
  std::vector<std::string> order;
  for (const ChangeResult& c : a.changes) order.push_back(c.change.what);
  EXPECT_EQ(order, (std::vector<std::string>{"big", "mid", "small", "worse", "failed", "oom", "late"}));
  const std::vector<const ChangeResult*> best = advised(a);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0]->change.what, "big");
  EXPECT_EQ(best[1]->change.what, "mid");
  const nlohmann::ordered_json j = advice_json(a);
  EXPECT_TRUE(j["changes"][0]["advised"].get<bool>());
  EXPECT_FALSE(j["changes"][2]["advised"].get<bool>());
  EXPECT_FALSE(j["changes"][4].contains("advised")) << "a failed change has no numbers";
  EXPECT_EQ(j["changes"][6]["status"], "budget");
}

TEST(Advice, AtMostFiveAreAdvised) {
  Advice a;
  for (int i = 0; i < 8; ++i) {
    ChangeResult c;
    c.change.what = std::to_string(i);
    c.status = std::string("ok");  // not = "ok": GCC 12 warns maybe-uninitialized on that in a unity build
    c.gain = 0.1 * (i + 1);
    a.changes.push_back(std::move(c));
  }
  rank_changes(a);
  EXPECT_EQ(advised(a).size(), Advice::kShown);
  EXPECT_EQ(advised(a).front()->change.what, "7");
}

}  // namespace
}  // namespace gradsync
