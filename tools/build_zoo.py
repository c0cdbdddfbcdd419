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
from zoo_bert import BERT, BERT_PRETRAIN, BertForPreTraining, BertModel  # noqa: E402,F401  (tests use them from here)

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "zoo")
META = torch.device("meta")


def _numel(t):
    return math.prod(t.shape)


# ---- GPT-2 (nanoGPT model.py, GPT-2 124M training: dropout 0.0, bias, tied wte/lm_head) ------------
# PyTorch 1.13 has no F.scaled_dot_product_attention: nanoGPT's own fallback ("slow attention")
# runs, the math every eager script without SDPA runs: the T x T scores scaled, masked with the
# causal tril buffer, softmax, attn_dropout, then the product with v.
class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, self.n_head, self.n_embd = c["n_embd"], c["n_head"], c["n_embd"]
        self.c_attn = nn.Linear(C, 3 * C, device=META)
        self.c_proj = nn.Linear(C, C, device=META)
        self.attn_dropout = nn.Dropout(c["dropout"])
        self.resid_dropout = nn.Dropout(c["dropout"])
        # nanoGPT's causal mask is float32; transformers' GPT2Attention (4.x) keeps it in uint8 (bool
        # from 4.28) beside a float32 scalar masked_bias, and DDP broadcasts both with the buffers.
        hf = c.get("hf_buffers", False)
        self.register_buffer("bias", torch.tril(torch.ones(c["block"], c["block"], device=META,
                                                           dtype=torch.uint8 if hf else torch.float32))
                             .view(1, 1, c["block"], c["block"]))
        if hf:
            self.register_buffer("masked_bias", torch.tensor(-1e4, device=META))
        else:
            # nanoGPT registers its mask only without F.scaled_dot_product_attention ("if not
            # self.flash"); export_model.py marks such buffers `attention: math`.
            self.gradsync_math_attention_buffers = ("bias",)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], device=META)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], device=META)
        self.dropout = nn.Dropout(c["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], device=META)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], device=META)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab"], c["n_embd"], device=META),
            wpe=nn.Embedding(c["block"], c["n_embd"], device=META),
            drop=nn.Dropout(c["dropout"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=nn.LayerNorm(c["n_embd"], device=META)))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab"], bias=False, device=META)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT does

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


GPT2 = {"gpt2": (12, 12, 768), "gpt2-medium": (24, 16, 1024), "gpt2-large": (36, 20, 1280), "gpt2-xl": (48, 25, 1600)}


def _tokens(T):
    return (torch.zeros(1, T, dtype=torch.long, device=META), torch.zeros(1, T, dtype=torch.long, device=META))


def _export_gpt(name, vocab, dropout, description, source, dims=(12, 12, 768), hf_buffers=False):
    n_layer, n_head, n_embd = dims
    c = dict(vocab=vocab, block=1024, n_layer=n_layer, n_head=n_head, n_embd=n_embd, dropout=dropout,
             hf_buffers=hf_buffers)
    export(GPT(c), _tokens, name, _out(name), batch=16, seq_len=1024, description=description, source=source,
           input_what="token ids and targets, int64",
           output_what=f"logits (B, T, {vocab}) and the loss, computed inside forward", loss_inside=True)


def build_gpt2(name):
    n_layer, n_head, n_embd = GPT2[name]
    _export_gpt(name, 50257, 0.0,
                f"GPT-2 ({n_layer} layers, {n_head} heads, d_model {n_embd}), tied wte/lm_head, vocabulary 50257",
                "nanoGPT model.py (GPT; attention without SDPA), dropout 0.0 as its GPT-2 training configs; "
                "OpenAI's vocabulary of 50257 (Hugging Face GPT2LMHeadModel, nanoGPT's from_pretrained)",
                dims=GPT2[name])


# Hugging Face's GPT2LMHeadModel trains GPT-2 124M with its config's dropout: embd_pdrop, attn_pdrop and
# resid_pdrop 0.1 (transformers GPT2Config defaults), at the places nanoGPT's model has them (the
# embeddings' sum, the attention probabilities, after each block's two projections): the same
# products (Conv1D is addmm), with dropout kernels and their masks saved for backward.
def build_gpt2_hf(name):
    _export_gpt(name, 50257, 0.1,
                "GPT-2 124M as Hugging Face's GPT2LMHeadModel trains it: 12 layers, 12 heads, d_model 768, "
                "tied wte/lm_head, vocabulary 50257, dropout 0.1",
                "nanoGPT model.py (GPT; attention without SDPA) with dropout 0.1, the embd_pdrop, attn_pdrop and "
                "resid_pdrop of transformers' GPT2Config, and GPT2Attention's buffers (a uint8 causal mask and a "
                "float32 masked_bias per layer)", hf_buffers=True)


# nanoGPT (since commit 77e7e04, 2023-02-04) and build-nanogpt train GPT-2 124M from scratch with the
# vocabulary padded from 50257 to 50304, a multiple of 64: the lm_head's products then meet cuBLAS's
# alignment ("about 25% faster", the commit says).
def build_nanogpt(name):
    _export_gpt(name, 50304, 0.0,
                "GPT-2 124M as nanoGPT and build-nanogpt train it from scratch: 12 layers, 12 heads, d_model "
                "768, tied wte/lm_head, vocabulary padded to 50304",
                "nanoGPT model.py (GPT, GPTConfig vocab_size 50304; attention without SDPA), dropout 0.0 as its "
                "GPT-2 training configs")




def build_bert_pretraining(name):
    layers, heads, hidden = BERT[BERT_PRETRAIN[name]]
    model = BertForPreTraining(dict(layers=layers, heads=heads, hidden=hidden))
    export(model, lambda T: (torch.zeros(1, T, dtype=torch.long, device=META),
                             torch.zeros(1, T, dtype=torch.long, device=META),
                             torch.zeros(1, dtype=torch.long, device=META)),
           name, _out(name), batch=32, seq_len=128,
           description=f"BERT pretraining ({layers} layers, {heads} heads, hidden {hidden}): masked-LM head over "
                       "every position (vocabulary 30522, tied to the word embeddings) and next-sentence head, "
                       "loss inside",
           source="Hugging Face transformers BertForPreTraining (bert-base-uncased / bert-large-uncased config), "
                  "eager attention",
           input_what="token ids, masked-LM labels (int64, per token) and the next-sentence label (int64)",
           output_what="masked-LM logits (B, T, 30522), next-sentence logits (B, 2) and the loss, computed "
                       "inside forward",
           loss_inside=True)


def build_bert(name):
    layers, heads, hidden = BERT[name]
    model = BertModel(dict(layers=layers, heads=heads, hidden=hidden))
    export(model, lambda T: (torch.zeros(1, T, dtype=torch.long, device=META),), name, _out(name), batch=32,
           seq_len=512, description=f"BERT ({layers} layers, {heads} heads, hidden {hidden}), no task head",
           source="Hugging Face transformers BertModel (bert-base-uncased / bert-large-uncased config), eager attention",
           input_what="token ids, int64",
           output_what="last_hidden_state (B, T, hidden) and pooler_output (B, hidden); loss outside",
           loss_inside=False)


# ---- Llama 2 7B (Hugging Face transformers LlamaForCausalLM, eager attention) ----------------------
class LlamaRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, device=META))

    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + 1e-5)).to(x.dtype)


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_pos=4096):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=META).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_pos, device=META, dtype=torch.float32)
        emb = torch.cat((torch.outer(t, inv_freq),) * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None], persistent=False)

    def forward(self, T):
        return self.cos_cached[:, :, :T], self.sin_cached[:, :, :T]


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, self.h = c["hidden"], c["heads"]
        self.d = H // self.h
        self.q_proj = nn.Linear(H, H, bias=False, device=META)
        self.k_proj = nn.Linear(H, H, bias=False, device=META)
        self.v_proj = nn.Linear(H, H, bias=False, device=META)
        self.o_proj = nn.Linear(H, H, bias=False, device=META)
        self.rotary_emb = LlamaRotaryEmbedding(self.d)

    def forward(self, x, mask):
        B, T, H = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        cos, sin = self.rotary_emb(T)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(B, T, H)
        return self.o_proj(out)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I = c["hidden"], c["intermediate"]
        self.gate_proj = nn.Linear(H, I, bias=False, device=META)
        self.up_proj = nn.Linear(H, I, bias=False, device=META)
        self.down_proj = nn.Linear(I, H, bias=False, device=META)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c["hidden"])
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden"])

    def forward(self, x, mask):
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"], device=META)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["layers"])])
        self.norm = LlamaRMSNorm(c["hidden"])

    def forward(self, ids):
        B, T = ids.shape
        # _make_causal_mask: an additive (T, T) mask, broadcast over batch and heads.
        mask = torch.full((T, T), float("-inf"), device=ids.device).triu(1)[None, None]
        x = self.embed_tokens(ids)
        for l in self.layers:
            x = l(x, mask)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False, device=META)

    def forward(self, ids, labels):
        logits = self.lm_head(self.model(ids)).float()
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return logits, loss


LLAMA2_7B = dict(vocab=32000, hidden=4096, intermediate=11008, layers=32, heads=32)


def build_llama(name):
    export(LlamaForCausalLM(LLAMA2_7B), _tokens, name, _out(name),
           batch=1, seq_len=4096, description="Llama 2 7B (32 layers, 32 heads, hidden 4096), untied lm_head",
           source="Hugging Face transformers LlamaForCausalLM (eager attention), meta-llama/Llama-2-7b-hf config",
           input_what="token ids and labels, int64",
           output_what="logits (B, T, 32000) and the loss, computed inside forward", loss_inside=True)


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


BUILDERS = {**{n: build_gpt2 for n in GPT2}, "gpt2-hf": build_gpt2_hf, "nanogpt": build_nanogpt, **{n: build_bert for n in BERT},
            **{n: build_bert_pretraining for n in BERT_PRETRAIN}, "llama2-7b": build_llama,
            **{n: build_vision for n in VISION}}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=list(BUILDERS))
    for n in ap.parse_args().only:
        BUILDERS[n](n)
        print("wrote", _out(n))
