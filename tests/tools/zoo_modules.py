"""zoo_modules.py: the zoo's models as real PyTorch modules, for the Python tests that compare
gradsync with PyTorch (the DDP oracle, saved-tensor bytes). Import torch_support first."""
import torch

import build_zoo


def build(name, batch=1, t=16, image=224):
    """The zoo model `name` built from the zoo's reference code (tools/build_zoo.py, torchvision), on
    the CPU in train mode, and run(module) -> a scalar loss of one iteration at `batch` and sequence
    length `t` (vision models: `image` x `image` pixels)."""
    torch.manual_seed(0)
    if name in build_zoo.GPT2:
        n_layer, n_head, n_embd = build_zoo.GPT2[name]
        m = build_zoo.GPT(dict(vocab=50257, block=1024, n_layer=n_layer, n_head=n_head, n_embd=n_embd, dropout=0.0))
        idx = torch.randint(0, 50257, (batch, t))
        run = lambda d: d(idx, idx)[1]  # noqa: E731
    elif name in build_zoo.BERT:
        layers, heads, hidden = build_zoo.BERT[name]
        m = build_zoo.BertModel(dict(layers=layers, heads=heads, hidden=hidden))
        idx = torch.randint(0, 30522, (batch, t))

        def run(d):
            seq, pooled = d(idx)
            return seq.sum() + pooled.sum()
    elif name in build_zoo.BERT_PRETRAIN:
        layers, heads, hidden = build_zoo.BERT[build_zoo.BERT_PRETRAIN[name]]
        m = build_zoo.BertForPreTraining(dict(layers=layers, heads=heads, hidden=hidden))
        idx = torch.randint(0, 30522, (batch, t))
        labels = torch.where(torch.rand(batch, t) < 0.15, idx, torch.full_like(idx, -1))
        nsp = torch.randint(0, 2, (batch,))
        run = lambda d: d(idx, labels, nsp)[2]  # noqa: E731
    else:
        import torchvision
        m = getattr(torchvision.models, build_zoo.VISION[name])()
        x = torch.randn(batch, 3, image, image)
        run = lambda d: d(x).sum()  # noqa: E731
    if any(p.is_meta for p in m.parameters()) or any(b.is_meta for b in m.buffers()):
        m = m.to_empty(device="cpu")
        if hasattr(m, "lm_head"):
            m.transformer.wte.weight = m.lm_head.weight  # to_empty makes each module its own tensor: tie again
        if hasattr(m, "cls"):
            m.cls.predictions.decoder.weight = m.bert.embeddings.word_embeddings.weight
        with torch.no_grad():
            for p in m.parameters():
                p.normal_(0, 0.02)
            for n, b in m.named_buffers():
                if n.endswith("position_ids"):
                    b.copy_(torch.arange(b.shape[-1]).expand_as(b))
                elif n.endswith("attn.bias"):
                    b.copy_(torch.tril(torch.ones_like(b)))
                else:
                    b.zero_()
    m.train()
    return m, run
