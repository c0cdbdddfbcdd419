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
