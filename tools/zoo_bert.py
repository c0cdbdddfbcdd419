"""zoo_bert.py: the zoo's BERT models, built on the meta device for tools/build_zoo.py (which
exports them) and the Python tests (which build them on the CPU): Hugging Face transformers'
BertModel, and BertForPreTraining with its masked-LM and next-sentence heads."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

META = torch.device("meta")


# ---- BERT (Hugging Face transformers BertModel, eager attention) -----------------------------------
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

    def forward(self, input_ids):
        B, T = input_ids.shape
        token_type_ids = self.token_type_ids[:, :T].expand(B, T)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(self.position_ids[:, :T])
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, self.h = c["hidden"], c["heads"]
        self.d = H // self.h
        self.query = nn.Linear(H, H, device=META)
        self.key = nn.Linear(H, H, device=META)
        self.value = nn.Linear(H, H, device=META)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        scores = scores + mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        B, T = ctx.shape[0], ctx.shape[1]
        return ctx.view(B, T, self.h * self.d)


class BertSelfOutput(nn.Module):
    def __init__(self, c, inner):
        super().__init__()
        self.dense = nn.Linear(inner, c["hidden"], device=META)
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=1e-12, device=META)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c["hidden"])

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


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

    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["layers"])])

    def forward(self, x, mask):
        for l in self.layer:
            x = l(x, mask)
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
        B, T = input_ids.shape
        # get_extended_attention_mask: no padding mask given, so ones, made additive.
        mask = torch.ones(B, T, device=input_ids.device)
        mask = (1.0 - mask[:, None, None, :]) * -10000.0
        seq = self.encoder(self.embeddings(input_ids), mask)
        return seq, self.pooler(seq)


BERT = {"bert-base": (12, 12, 768), "bert-large": (24, 16, 1024)}


# ---- BERT pretraining (Hugging Face transformers BertForPreTraining: the masked-LM and
# next-sentence heads on BertModel, the loss inside forward) ---------------------------------------
# cls.predictions: a dense layer, GELU and LayerNorm per token, then the decoder over the whole
# vocabulary (30522), tied to the word embeddings, with its own bias; cls.seq_relationship: two
# logits from the pooled [CLS]. The masked-LM loss is taken over every position's logits, as
# Hugging Face's and NVIDIA DeepLearningExamples' pretraining criterion do (labels of -1 at the
# unmasked positions are ignored, but their logits are computed).
class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden"]
        self.bert = BertModel(c)
        self.cls = nn.Module()
        self.cls.predictions = nn.Module()
        self.cls.predictions.transform = nn.Module()
        self.cls.predictions.transform.dense = nn.Linear(H, H, device=META)
        self.cls.predictions.transform.transform_act_fn = nn.GELU()
        self.cls.predictions.transform.LayerNorm = nn.LayerNorm(H, eps=1e-12, device=META)
        self.cls.predictions.decoder = nn.Linear(H, 30522, device=META)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tied
        self.cls.seq_relationship = nn.Linear(H, 2, device=META)

    def forward(self, input_ids, labels, next_sentence_label):
        seq, pooled = self.bert(input_ids)
        t = self.cls.predictions.transform
        scores = self.cls.predictions.decoder(t.LayerNorm(t.transform_act_fn(t.dense(seq))))
        nsp = self.cls.seq_relationship(pooled)
        mlm_loss = F.cross_entropy(scores.view(-1, scores.size(-1)), labels.view(-1), ignore_index=-1)
        return scores, nsp, mlm_loss + F.cross_entropy(nsp.view(-1, 2), next_sentence_label.view(-1))


BERT_PRETRAIN = {"bert-base-pretraining": "bert-base", "bert-large-pretraining": "bert-large"}
