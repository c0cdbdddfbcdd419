#!/usr/bin/env python3
"""build_zoo.py: regenerate models/zoo/*.yaml with tools/export_model.py.

    /usr/bin/python3 tools/build_zoo.py [--only NAME ...]     (needs Debian's python3-torch, -torchvision)

The language models are defined here with the module layout, parameter names and registration
order of their reference implementations (nanoGPT/build-nanogpt GPT for gpt2*, Hugging Face
BertModel for bert-*, Hugging Face LlamaForCausalLM for llama2-7b), built on the meta device so no
weights are allocated; the vision models are torchvision's own.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_model import export  # noqa: E402

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "zoo")
META = torch.device("meta")


def _numel(t):
    return math.prod(t.shape)


class Add(nn.Module):
    """A residual addition, visible to the exporter as an elementwise layer."""

    def forward(self, a, b):
        return a + b

    def gradsync_layers(self, inputs, output):
        return [{"kind": "elementwise", "op": "add", "elements": _numel(output)}]


class SDPA(nn.Module):
    """Scaled dot-product attention core (FlashAttention in PyTorch 2.x: is_causal=True)."""

    def __init__(self, heads, head_dim, causal, kv_heads=None):
        super().__init__()
        self.heads, self.head_dim, self.causal = heads, head_dim, causal
        self.kv_heads = kv_heads or heads

    def forward(self, q, k, v):  # (B, H, T, D)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        att = F.softmax(att, dim=-1)
        return att @ v

    def gradsync_layers(self, inputs, output):
        q = inputs[0]
        d = {"kind": "attention", "heads": self.heads, "head_dim": self.head_dim, "q_len": int(q.shape[-2])}
        if self.causal:
            d["causal"] = True
        if self.kv_heads != self.heads:
            d["kv_heads"] = self.kv_heads
        return [d]


# ---- GPT-2 (build-nanogpt train_gpt2.py layout) --------------------------------------------------
class GPTAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], device=META)
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], device=META)
        self.n_head, self.n_embd = c["n_head"], c["n_embd"]
        self.sdpa = SDPA(self.n_head, self.n_embd // self.n_head, causal=True)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = self.sdpa(q, k, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], device=META)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], device=META)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPTBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], device=META)
        self.attn = GPTAttention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], device=META)
        self.mlp = GPTMLP(c)
        self.add_1, self.add_2 = Add(), Add()

    def forward(self, x):
        x = self.add_1(x, self.attn(self.ln_1(x)))
        return self.add_2(x, self.mlp(self.ln_2(x)))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab"], c["n_embd"], device=META),
            wpe=nn.Embedding(c["block"], c["n_embd"], device=META),
            h=nn.ModuleList([GPTBlock(c) for _ in range(c["n_layer"])]),
            ln_f=nn.LayerNorm(c["n_embd"], device=META)))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab"], bias=False, device=META)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying, as build-nanogpt does
        self.add = Add()
        self.loss = CrossEntropy(c["vocab"])

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.add(self.transformer.wpe(pos).unsqueeze(0), self.transformer.wte(idx))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        self.loss(logits)
        return logits


class CrossEntropy(nn.Module):
    """The loss computed inside forward (nanoGPT's F.cross_entropy(logits, targets))."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, logits):
        return logits.sum()

    def gradsync_layers(self, inputs, output):
        return [{"kind": "loss", "elements": _numel(inputs[0])}]


GPT2 = {"gpt2": (12, 12, 768), "gpt2-medium": (24, 16, 1024), "gpt2-large": (36, 20, 1280), "gpt2-xl": (48, 25, 1600)}


def build_gpt2(name):
    n_layer, n_head, n_embd = GPT2[name]
    c = dict(vocab=50257, block=1024, n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    model = GPT(c)
    export(model, lambda T: (torch.zeros(1, T, dtype=torch.long, device=META),), name, _out(name), batch=16,
           seq_len=1024, description=f"GPT-2 ({n_layer} layers, {n_head} heads, d_model {n_embd}), tied wte/lm_head",
           source="build-nanogpt train_gpt2.py (GPT class), nanoGPT model.py",
           input_what="token ids, int64", output_what="logits (B, T, 50257); loss computed inside forward",
           loss_inside=True)


# ---- BERT (Hugging Face BertModel layout) ---------------------------------------------------------
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden"]
        self.word_embeddings = nn.Embedding(30522, H, padding_idx=0, device=META)
        self.position_embeddings = nn.Embedding(512, H, device=META)
        self.token_type_embeddings = nn.Embedding(2, H, device=META)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12, device=META)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(512, device=META).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros((1, 512), dtype=torch.long, device=META), persistent=False)
        self.add_1, self.add_2 = Add(), Add()

    def forward(self, input_ids):
        T = input_ids.size(1)
        x = self.word_embeddings(input_ids)
        x = self.add_1(x, self.token_type_embeddings(self.token_type_ids[:, :T].expand(input_ids.size(0), T)))
        x = self.add_2(x, self.position_embeddings(self.position_ids[:, :T]))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, self.h = c["hidden"], c["heads"]
        self.query = nn.Linear(H, H, device=META)
        self.key = nn.Linear(H, H, device=META)
        self.value = nn.Linear(H, H, device=META)
        self.sdpa = SDPA(self.h, H // self.h, causal=False)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = (m(x).view(B, T, self.h, H // self.h).transpose(1, 2) for m in (self.query, self.key, self.value))
        return self.sdpa(q, k, v).transpose(1, 2).reshape(B, T, H)


class BertSelfOutput(nn.Module):
    def __init__(self, c, inner):
        super().__init__()
        self.dense = nn.Linear(inner, c["hidden"], device=META)
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=1e-12, device=META)
        self.dropout = nn.Dropout(0.1)
        self.add = Add()

    def forward(self, h, residual):
        return self.LayerNorm(self.add(self.dropout(self.dense(h)), residual))


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c["hidden"])

    def forward(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden"], 4 * c["hidden"], device=META)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c, 4 * c["hidden"])

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["layers"])])

    def forward(self, x):
        for l in self.layer:
            x = l(x)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden"], c["hidden"], device=META)
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids):
        seq = self.encoder(self.embeddings(input_ids))
        return seq, self.pooler(seq)


BERT = {"bert-base": (12, 12, 768), "bert-large": (24, 16, 1024)}


def build_bert(name):
    layers, heads, hidden = BERT[name]
    model = BertModel(dict(layers=layers, heads=heads, hidden=hidden))
    export(model, lambda T: (torch.zeros(1, T, dtype=torch.long, device=META),), name, _out(name), batch=32,
           seq_len=512, description=f"BERT ({layers} layers, {heads} heads, hidden {hidden}), no task head",
           source="Hugging Face transformers BertModel (bert-base-uncased / bert-large-uncased config)",
           input_what="token ids, int64",
           output_what="last_hidden_state (B, T, hidden) and pooler_output (B, hidden); loss outside",
           loss_inside=False)


# ---- Llama 2 7B (Hugging Face LlamaForCausalLM layout) --------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, device=META))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    def gradsync_layers(self, inputs, output):
        return [{"kind": "rmsnorm", "elements": _numel(inputs[0])}]


class Rotary(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.register_buffer("inv_freq", torch.empty(head_dim // 2, device=META), persistent=False)

    def forward(self, q, k):
        return q, k

    def gradsync_layers(self, inputs, output):
        return [{"kind": "elementwise", "op": "rotary", "elements": _numel(inputs[0]) + _numel(inputs[1])}]


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, self.h = c["hidden"], c["heads"]
        self.q_proj = nn.Linear(H, H, bias=False, device=META)
        self.k_proj = nn.Linear(H, H, bias=False, device=META)
        self.v_proj = nn.Linear(H, H, bias=False, device=META)
        self.o_proj = nn.Linear(H, H, bias=False, device=META)
        self.rotary_emb = Rotary(H // self.h)
        self.sdpa = SDPA(self.h, H // self.h, causal=True)

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = (m(x).view(B, T, self.h, H // self.h).transpose(1, 2) for m in (self.q_proj, self.k_proj, self.v_proj))
        q, k = self.rotary_emb(q, k)
        return self.o_proj(self.sdpa(q, k, v).transpose(1, 2).reshape(B, T, H))


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I = c["hidden"], c["intermediate"]
        self.gate_proj = nn.Linear(H, I, bias=False, device=META)
        self.up_proj = nn.Linear(H, I, bias=False, device=META)
        self.down_proj = nn.Linear(I, H, bias=False, device=META)
        self.act_fn = nn.SiLU()
        self.mul = Mul()

    def forward(self, x):
        return self.down_proj(self.mul(self.act_fn(self.gate_proj(x)), self.up_proj(x)))


class Mul(nn.Module):
    def forward(self, a, b):
        return a * b

    def gradsync_layers(self, inputs, output):
        return [{"kind": "elementwise", "op": "mul", "elements": _numel(output)}]


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = RMSNorm(c["hidden"])
        self.post_attention_layernorm = RMSNorm(c["hidden"])
        self.add_1, self.add_2 = Add(), Add()

    def forward(self, x):
        x = self.add_1(x, self.self_attn(self.input_layernorm(x)))
        return self.add_2(x, self.mlp(self.post_attention_layernorm(x)))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"], device=META)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"])

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for l in self.layers:
            x = l(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False, device=META)
        self.loss = CrossEntropy(c["vocab"])

    def forward(self, ids):
        logits = self.lm_head(self.model(ids))
        self.loss(logits)
        return logits


def build_llama(name):
    c = dict(vocab=32000, hidden=4096, intermediate=11008, layers=32, heads=32)
    export(LlamaForCausalLM(c), lambda T: (torch.zeros(1, T, dtype=torch.long, device=META),), name, _out(name),
           batch=1, seq_len=4096, description="Llama 2 7B (32 layers, 32 heads, hidden 4096), untied lm_head",
           source="Hugging Face transformers LlamaForCausalLM, meta-llama/Llama-2-7b-hf config",
           input_what="token ids, int64", output_what="logits (B, T, 32000); loss computed inside forward",
           loss_inside=True)


# ---- torchvision ------------------------------------------------------------------------------------
VISION = {"resnet18": "resnet18", "resnet50": "resnet50", "resnet101": "resnet101", "vgg16": "vgg16",
          "vit-b-16": "vit_b_16"}


def build_vision(name):
    import torchvision
    model = getattr(torchvision.models, VISION[name])()
    export(model, lambda T: (torch.zeros(1, 3, 224, 224),), name, _out(name), batch=32,
           description=f"torchvision.models.{VISION[name]}() (ImageNet, 1000 classes)",
           source=f"torchvision {torchvision.__version__} models.{VISION[name]}",
           input_what="image 3x224x224, float32", output_what="logits (B, 1000); loss outside", loss_inside=False)


def _out(name):
    return os.path.join(ZOO, name + ".yaml")


BUILDERS = {**{n: build_gpt2 for n in GPT2}, **{n: build_bert for n in BERT}, "llama2-7b": build_llama,
            **{n: build_vision for n in VISION}}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=list(BUILDERS))
    for n in ap.parse_args().only:
        BUILDERS[n](n)
        print("wrote", _out(n))
