// zoo_test.cpp: the built-in zoo matches PyTorch parameter for parameter (totals from
// sum(p.numel() for p in model.parameters()) of the reference implementations).
#include <gtest/gtest.h>

#include <algorithm>

#include "models/model.hpp"

namespace gradsync {
namespace {

std::vector<std::string> names(const Model& m) {
  std::vector<std::string> n;
  for (const auto& p : m.parameters) n.push_back(p.name);
  return n;
}

// users_of_first: the layers that use the first parameter (a tied embedding's users).
std::vector<std::string> users_of_first(const Model& m) {
  std::vector<std::string> users;
  for (const auto& l : m.layers)
    if (std::find(l.params.begin(), l.params.end(), 0u) != l.params.end()) users.push_back(l.name);
  return users;
}

TEST(Zoo, ListsEveryModel) {
  EXPECT_EQ(zoo_model_names(),
            (std::vector<std::string>{"bert-base", "bert-base-pretraining", "bert-large", "bert-large-pretraining",
                                      "gpt2", "gpt2-hf", "gpt2-large", "gpt2-medium", "gpt2-xl", "llama2-7b", "nanogpt",
                                      "resnet101", "resnet18", "resnet50", "vgg16", "vit-b-16"}));
}

TEST(Zoo, TotalsMatchPyTorch) {
  const std::vector<std::pair<std::string, std::int64_t>> totals{
      {"gpt2", 124439808},
      {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},
      {"gpt2-xl", 1557611200},
      {"bert-base", 109482240},
      {"bert-large", 335141888},
      {"resnet18", 11689512},
      {"resnet50", 25557032},
      {"resnet101", 44549160},
      {"vgg16", 138357544},
      {"vit-b-16", 86567656},
      {"llama2-7b", 6738415616},
      {"nanogpt", 124475904},
      {"gpt2-hf", 124439808},
      // Hugging Face BertForPreTraining: BertModel, the masked-LM transform (h x h dense, LayerNorm), the
      // decoder's bias (its weight is the word embeddings') and the next-sentence Linear(h, 2).
      {"bert-base-pretraining", 110106428},
      {"bert-large-pretraining", 336226108}};
  for (const auto& [name, total] : totals) {
    const Model m = load_model(name);
    EXPECT_EQ(m.total_params(), total) << name;
    EXPECT_EQ(m.name, name);
  }
}

TEST(Zoo, BertPretrainingTiesTheDecoderToTheWordEmbeddings) {
  const Model m = load_model("bert-base-pretraining");
  const auto n = names(m);
  EXPECT_EQ(n[0], "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(std::count(n.begin(), n.end(), "cls.predictions.decoder.weight"), 0);  // tied: listed once
  EXPECT_EQ(std::count(n.begin(), n.end(), "cls.predictions.decoder.bias"), 1);
  EXPECT_EQ(n.back(), "cls.seq_relationship.bias");
  EXPECT_EQ(users_of_first(m),
            (std::vector<std::string>{"bert.embeddings.word_embeddings", "cls.predictions.decoder"}));
  EXPECT_EQ(m.default_batch, 32);
  EXPECT_EQ(m.default_seq_len, 128);
}

TEST(Zoo, Gpt2RegistrationOrderAndTiedEmbedding) {
  const Model m = load_model("gpt2");
  const auto n = names(m);
  ASSERT_EQ(n.size(), 148u);  // 2 embeddings + 12 blocks x 12 + ln_f weight and bias
  EXPECT_EQ(n[0], "transformer.wte.weight");
  EXPECT_EQ(n[1], "transformer.wpe.weight");
  EXPECT_EQ(
      std::vector<std::string>(n.begin() + 2, n.begin() + 14),
      (std::vector<std::string>{
          "transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight",
          "transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_proj.weight", "transformer.h.0.attn.c_proj.bias",
          "transformer.h.0.ln_2.weight", "transformer.h.0.ln_2.bias", "transformer.h.0.mlp.c_fc.weight",
          "transformer.h.0.mlp.c_fc.bias", "transformer.h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.bias"}));
  EXPECT_EQ(n.back(), "transformer.ln_f.bias");
  EXPECT_EQ(std::count(n.begin(), n.end(), "lm_head.weight"), 0);  // tied: appears once, as wte
  // The tied weight is used twice: by wte (first layer) and by lm_head (last linear).
  EXPECT_EQ(users_of_first(m), (std::vector<std::string>{"transformer.wte", "lm_head"}));
  EXPECT_EQ(m.default_batch, 16);
  EXPECT_EQ(m.default_seq_len, 1024);
  EXPECT_TRUE(m.loss_inside);
  EXPECT_EQ(m.output_elements.eval(1024), 1024 * 50257);
  EXPECT_EQ(m.input_bytes.eval(1024), 2 * 8 * 1024);  // token ids and targets (nanoGPT's forward(idx, targets))
}

TEST(Zoo, TorchvisionNamesAndBuffers) {
  const Model r = load_model("resnet50");
  const auto n = names(r);
  EXPECT_EQ(std::vector<std::string>(n.begin(), n.begin() + 4),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight"}));
  EXPECT_EQ(n.back(), "fc.bias");
  ASSERT_EQ(r.buffers.size(), 53u * 3);  // 53 BatchNorms: running_mean, running_var, num_batches_tracked
  EXPECT_EQ(r.buffers[2].name, "bn1.num_batches_tracked");
  EXPECT_EQ(r.buffers[2].dtype, DType::kInt64);
  EXPECT_EQ(r.input_bytes.eval(1), 3 * 224 * 224 * 4);
  EXPECT_FALSE(r.loss_inside);

  const auto v = names(load_model("vgg16"));
  EXPECT_EQ(v.front(), "features.0.weight");
  EXPECT_EQ(v.back(), "classifier.6.bias");
  const auto vit = names(load_model("vit-b-16"));
  EXPECT_EQ(vit[0], "class_token");
  EXPECT_EQ(vit[1], "conv_proj.weight");
  EXPECT_EQ(vit[3], "encoder.pos_embedding");
  EXPECT_EQ(vit[6], "encoder.layers.encoder_layer_0.self_attention.in_proj_weight");
}

TEST(Zoo, HuggingFaceNames) {
  const auto b = names(load_model("bert-base"));
  EXPECT_EQ(b.front(), "embeddings.word_embeddings.weight");
  EXPECT_EQ(b[5], "encoder.layer.0.attention.self.query.weight");
  EXPECT_EQ(b.back(), "pooler.dense.bias");
  const Model l = load_model("llama2-7b");
  const auto n = names(l);
  EXPECT_EQ(n.front(), "model.embed_tokens.weight");
  EXPECT_EQ(
      std::vector<std::string>(n.begin() + 1, n.begin() + 10),
      (std::vector<std::string>{"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                                "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                                "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                                "model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
                                "model.layers.0.post_attention_layernorm.weight"}));
  EXPECT_EQ(n.back(), "lm_head.weight");
  // Forward order puts the norm before attention, although it is registered after the MLP.
  const auto emb =
      std::find_if(l.layers.begin(), l.layers.end(), [](const Layer& x) { return x.name == "model.embed_tokens"; });
  ASSERT_NE(emb, l.layers.end());
  EXPECT_EQ((emb + 1)->name, "model.layers.0.input_layernorm");
}

TEST(Zoo, ModelFileByPath) {
  const Model m = load_model("models/zoo/resnet18.yaml");
  EXPECT_EQ(m.total_params(), 11689512);
  EXPECT_EQ(m.origin, "models/zoo/resnet18.yaml");
}

}  // namespace
}  // namespace gradsync
