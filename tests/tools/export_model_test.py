#!/usr/bin/env python3
"""export_model_test.py GRADSYNC: tools/export_model.py writes files gradsync loads, with
PyTorch's parameter order and totals; and the zoo's torchvision files are what the exporter
writes today. Exits 77 (ctest: skipped) when torch cannot be imported."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_support import ROOT  # noqa: E402  (exits 77 without torch)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from export_model import export  # noqa: E402

gradsync = sys.argv[1]


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.bn = nn.BatchNorm1d(32)
        self.head = nn.Linear(32, 50, bias=False)
        self.out = nn.Linear(16, 50, bias=False)
        self.out.weight = self.emb.weight  # tied, as GPT-2

    def forward(self, idx):
        x = self.norm(self.emb(idx))
        h = self.act(self.fc(x))
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)
        return self.head(h) + self.out(x)


# View calls by hand (PyTorch's dispatch below autograd): F.linear on a 2-D input is
# addmm(bias, x, weight.t()): t; then view and transpose of fc's output; narrow of a buffer is a
# slice (no grad: no backward node); contiguous() copies (a kernel) and view. Five view calls, four
# of them on tensors that require grad.
class Views(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("mask", torch.ones(8, 4))

    def forward(self, x):
        y = self.fc(x)
        z = y.view(x.shape[0], 2, 4).transpose(1, 2)
        m = self.mask.narrow(1, 0, 4)
        return z.contiguous().view(x.shape[0], 8) @ m


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    model = Tiny()
    path = os.path.join(tmp, "tiny.yaml")
    export(model, lambda T: (torch.zeros(1, T, dtype=torch.long),), "tiny", path, batch=4, seq_len=32)
    out = subprocess.run([gradsync, "models", "show", path, "--json", "--precision", "fp32"], capture_output=True, text=True)
    check(out.returncode == 0, f"gradsync loads the exported file: {out.stderr}")
    if out.returncode == 0:
        j = json.loads(out.stdout)
        expected = [(n, list(p.shape)) for n, p in model.named_parameters()]
        got = [(p["name"], p["shape"]) for p in j["parameters"]]
        check(got == expected, f"parameters in named_parameters() order: {got} vs {expected}")
        check(j["total_params"] == sum(p.numel() for p in model.parameters()), "total_params")
        check([b["name"] for b in j["buffers"]] == [n for n, _ in model.named_buffers()], "buffers")
        kinds = [l["kind"] for l in j["layers"]]
        check(kinds == ["embedding", "layernorm", "linear", "activation", "batchnorm", "linear", "linear", "ops"],
              f"layers in forward order: {kinds}")
        # The functional residual add (no module) is its own segment, named after its parent.
        check(j["layers"][-1]["name"] == "fn", f"functional segment: {j['layers'][-1]['name']}")
        # fc: 2 * T * 16 * 32 FLOPs per sample, batch 4, T 32.
        check(j["layers"][2]["forward_flops"] == 4 * 2 * 32 * 16 * 32, "linear FLOPs")

    # View calls: counted per layer as views: [calls, calls on a tensor requiring grad].
    vpath = os.path.join(tmp, "views.yaml")
    export(Views(), lambda T: (torch.zeros(1, 8),), "views", vpath, batch=4)
    import re
    counts = [tuple(map(int, v)) for v in re.findall(r"views: \[(\d+), (\d+)\]", open(vpath).read())]
    check((sum(c[0] for c in counts), sum(c[1] for c in counts)) == (5, 4),
          f"view calls by hand: 5, of them 4 on tensors requiring grad; exported {counts}")
    out = subprocess.run([gradsync, "models", "show", vpath, "--json", "--precision", "fp32"], capture_output=True,
                         text=True)
    check(out.returncode == 0, f"gradsync loads the views: {out.stderr}")

    # A forward that returns its loss (a scalar, whatever the batch) has no per-sample output; the
    # exporter says so beside elements: 0 instead of dropping it silently, and logits beside the
    # loss count per sample.
    class WithLoss(nn.Module):
        def __init__(self, logits):
            super().__init__()
            self.fc = nn.Linear(8, 3)
            self.logits = logits

        def forward(self, x):
            y = self.fc(x)
            loss = y.square().mean()
            return (y, loss) if self.logits else loss

    for logits, elements in ((False, "0"), (True, "3")):
        lpath = os.path.join(tmp, "loss.yaml")
        export(WithLoss(logits), lambda T: (torch.zeros(1, 8),), "loss", lpath, batch=4, loss_inside=True)
        line = [l for l in open(lpath).read().splitlines() if l.startswith("  elements:")][0]
        check(line == f"  elements: {elements}  # per sample; plus 1 that do not grow with the batch (a scalar loss)",
              f"output elements of a forward returning {'logits and ' if logits else ''}its loss: {line!r}")
        out = subprocess.run([gradsync, "models", "show", lpath, "--json", "--precision", "fp32"], capture_output=True,
                             text=True)
        check(out.returncode == 0, f"gradsync loads a model returning its loss: {out.stderr}")

    # A forward that returns only its loss, exported without loss_inside: written as loss: inside
    # (the file said outside and gradsync refused it, until 2026-12-02).
    spath = os.path.join(tmp, "scalar.yaml")
    export(WithLoss(False), lambda T: (torch.zeros(1, 8),), "scalar", spath, batch=4)
    check("  loss: inside" in open(spath).read().splitlines(), "a scalar-returning forward is written as loss: inside")
    out = subprocess.run([gradsync, "models", "show", spath, "--json", "--precision", "fp32"], capture_output=True,
                         text=True)
    check(out.returncode == 0, f"gradsync loads a scalar-returning export: {out.stderr}")

    # A trainable layer that forward never calls is found and listed as unused, so the file loads
    # and DDP's default (find_unused_parameters=False) is refused as PyTorch refuses it.
    class Skips(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.spare = nn.Linear(8, 8)
            self.b = nn.Linear(8, 3)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    upath = os.path.join(tmp, "skips.yaml")
    export(Skips(), lambda T: (torch.zeros(1, 8),), "skips", upath, batch=4)
    ulines = [l for l in open(upath).read().splitlines() if l.startswith("unused_parameters:")]
    check(ulines == ["unused_parameters: [spare.weight, spare.bias]"], f"unused parameters found: {ulines}")
    out = subprocess.run([gradsync, "models", "show", upath, "--json", "--precision", "fp32"], capture_output=True,
                         text=True)
    check(out.returncode == 0, f"gradsync loads a model with an unused layer: {out.stderr}")
    out = subprocess.run([gradsync, "buckets", "--model", upath], capture_output=True, text=True)
    check(out.returncode != 0 and "find_unused_parameters" in out.stderr,
          f"buckets without find_unused_parameters is PyTorch's error: rc {out.returncode} {out.stderr}")
    out = subprocess.run([gradsync, "buckets", "--model", upath, "--find-unused-parameters"], capture_output=True,
                         text=True)
    check(out.returncode == 0, f"buckets with find_unused_parameters: {out.stderr}")

    # A causal mask added to the scores (built by triu, as torch 1.13's
    # F._scaled_dot_product_attention(is_causal=True) and transformers' _make_causal_mask build it)
    # marks the attention causal, as masked_fill does; a padding mask from the input does not.
    class Attn(nn.Module):
        def __init__(self, causal):
            super().__init__()
            self.causal = causal
            self.qkv = nn.Linear(16, 48)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(x).view(B, T, 3, 2, 8).permute(2, 0, 3, 1, 4).reshape(3, B * 2, T, 8)
            scores = torch.bmm(q, k.transpose(1, 2)) / 8 ** 0.5
            if self.causal:
                scores = scores + torch.triu(torch.full((T, T), float("-inf"), device=x.device), 1)
            else:
                scores = scores + (x[:, :, :1].transpose(1, 2) * 0).repeat_interleave(2, 0)
            return torch.bmm(torch.softmax(scores, -1), v).sum()

    for causal in (True, False):
        apath = os.path.join(tmp, f"attn-{causal}.yaml")
        export(Attn(causal), lambda T: (torch.zeros(1, T, 16),), "attn", apath, batch=2, seq_len=8, loss_inside=True)
        marked = [l for l in open(apath).read().splitlines() if "attention: [" in l]
        check(len(marked) == 1 and f", {str(causal).lower()}]" in marked[0],
              f"additive mask, causal {causal}: the attention is marked {marked}")

    # A model in eval mode (as from_pretrained returns it) is traced as training runs it, with its
    # dropout, and given back in eval mode with its BatchNorm statistics untouched (until
    # 2026-12-02 it was traced in eval mode, and its running statistics moved).
    evalm = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Dropout(0.1), nn.Linear(8, 3)).eval()
    before = [b.clone() for b in evalm.buffers()]
    epath = os.path.join(tmp, "eval.yaml")
    export(evalm, lambda T: (torch.randn(1, 8) * 5 + 3,), "eval", epath, batch=4)
    check("op: native_dropout" in open(epath).read(), "a model in eval mode is exported with its dropout")
    check(not evalm.training and not any(m.training for m in evalm.modules()), "the model is left in eval mode")
    check(all(torch.equal(a, b) for a, b in zip(before, evalm.buffers())), "BatchNorm's running statistics untouched")

    # float64 layers keep 8 bytes an element whatever the run's precision (autocast never casts
    # them): the activations gradsync counts at fp32 equal the bytes of the distinct tensors that
    # saved_tensors_hooks sees in a real forward (until 2026-12-02 float64 was sized as the run's
    # precision, half of it).
    class MixDT(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(64, 128)
            self.b = nn.Linear(128, 128).double()
            self.c = nn.Linear(128, 8)

        def forward(self, x):
            h = torch.relu(self.b(torch.relu(self.a(x)).double()))
            return self.c(h.float())

    mixed = MixDT()
    mpath = os.path.join(tmp, "mixdt.yaml")
    export(mixed, lambda T: (torch.zeros(1, 64),), "mixdt", mpath, batch=4)
    params = {p.data_ptr() for p in mixed.parameters()}
    kept = {}

    def pack(t):
        if t.data_ptr() not in params:
            kept[t.data_ptr()] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        mixed(torch.randn(4, 64)).sum()
    out = subprocess.run([gradsync, "models", "show", mpath, "--json", "--precision", "fp32"], capture_output=True,
                         text=True)
    check(out.returncode == 0, f"gradsync loads the mixed-dtype export: {out.stderr}")
    if out.returncode == 0:
        got = json.loads(out.stdout)["memory"]["activations"]
        check(got == sum(kept.values()), f"float64 activations: gradsync {got} B, saved_tensors_hooks {sum(kept.values())} B")

    # Convolutions of every shape, FLOPs by hand (2 x the multiply-adds, per sample): each output
    # element of a convolution takes in/groups x kernel-taps weights, each input element of a
    # transposed one out/groups x taps. Until 2026-12-02 a ConvTranspose2d came out 4x too high (its
    # output counted as a convolution's) with its in-channels as out, a Conv3d 3x too low (the
    # kernel's depth dropped), and a Conv1d, a 1x7 kernel or padding="same" failed the export.
    conv_cases = [
        ("deconv", nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), (64, 16, 16), 2 * 64 * 16 * 16 * 32 * 16,
         [64, 16, 16, 32, 4, 4, 2, 1, 1]),
        ("grouped-deconv", nn.ConvTranspose2d(8, 16, 3, groups=4), (8, 10, 10), 2 * 8 * 10 * 10 * 4 * 9,
         [8, 10, 10, 16, 3, 3, 1, 0, 4]),
        ("conv3d", nn.Conv3d(4, 8, 3, padding=1), (4, 8, 16, 16), 2 * 8 * 8 * 16 * 16 * 4 * 27,
         [4, 128, 16, 8, 9, 3, 1, 1, 1]),
        ("conv1d", nn.Conv1d(16, 32, 5, padding=2), (16, 100), 2 * 32 * 100 * 16 * 5, [16, 1, 100, 32, 1, 5, 1, 2, 1]),
        ("1x7", nn.Conv2d(16, 16, (1, 7), padding=(0, 3)), (16, 17, 17), 2 * 16 * 17 * 17 * 16 * 7,
         [16, 17, 17, 16, 1, 7, 1, 0, 1]),
        ("same", nn.Conv2d(3, 8, 3, padding="same"), (3, 16, 16), 2 * 8 * 16 * 16 * 3 * 9, [3, 16, 16, 8, 3, 3, 1, 1, 1]),
    ]
    for cname, conv, shape, flops, record in conv_cases:
        cpath = os.path.join(tmp, f"{cname}.yaml")
        export(nn.Sequential(conv), lambda T, shape=shape: (torch.zeros(1, *shape),), cname, cpath, batch=2)
        text = open(cpath).read()
        check(f"conv: [{', '.join(map(str, record))}]" in text,
              f"{cname}: conv record {record} in {[l for l in text.splitlines() if 'conv:' in l]}")
        out = subprocess.run([gradsync, "models", "show", cpath, "--json", "--precision", "fp32"], capture_output=True,
                             text=True)
        check(out.returncode == 0, f"gradsync loads the {cname} export: {out.stderr}")
        if out.returncode == 0:
            got = sum(l["forward_flops"] for l in json.loads(out.stdout)["layers"])
            check(got == 2 * flops, f"{cname}: forward FLOPs at batch 2 {got}, by hand {2 * flops}")

    # The zoo's torchvision files are reproducible with the command-line exporter.
    regen = os.path.join(tmp, "resnet18.yaml")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_model.py"), "torchvision:resnet18", "-o", regen,
                    "--batch", "32"], check=True)

    def body(p):
        lines = open(p).read().splitlines()
        return lines[lines.index("parameters:"):]

    check(body(regen) == body(os.path.join(ROOT, "models", "zoo", "resnet18.yaml")),
          "models/zoo/resnet18.yaml matches a fresh export")

if failures:
    sys.exit(1)
print("OK")
