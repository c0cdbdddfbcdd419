#!/usr/bin/env python3
"""saved_bytes_test.py GRADSYNC [MODEL ...]: the activations gradsync says autograd keeps, against
what real PyTorch keeps.

For each zoo model, built from the zoo's reference code on the CPU in fp32 (tests/tools/zoo_modules.py),
one training forward runs under torch.autograd.graph.saved_tensors_hooks (dropout as CUDA runs it:
native_dropout, whose mask is 1 byte per element), which sees every tensor
an op saves for backward. The bytes kept are those of the distinct storages behind them (a view
shares its base's storage, an in-place op its input's), less the parameters' and the inputs'
(gradsync counts those apart). `gradsync models show MODEL --json --precision fp32` at the same
batch and sequence length must give memory.activations within 5% of that. Exits 77 (ctest:
skipped) when torch cannot be imported.
"""
import gc
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_support  # noqa: E402,F401  (exits 77 without torch; tools/ on sys.path)
import torch  # noqa: E402
import zoo_modules  # noqa: E402

gradsync = sys.argv[1]
MODELS = sys.argv[2:] or ["gpt2", "gpt2-medium", "bert-base", "bert-large", "bert-base-pretraining",
                          "bert-large-pretraining", "resnet18", "resnet50", "resnet101", "vgg16", "vit-b-16"]
BATCH, T = 2, 64
TOLERANCE = 0.05

# Dropout as on the GPU: CUDA's F.dropout is native_dropout, which keeps a bool mask (1 byte per
# element) for backward; on the CPU, torch 1.13's F.dropout multiplies by a float mask and keeps
# that (4 bytes). gradsync models the GPU, so the test runs native_dropout on the CPU too.
_cpu_dropout = torch.nn.functional.dropout


def _gpu_dropout(x, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return _cpu_dropout(x, p, training, inplace)
    return torch.native_dropout(x, p, True)[0]


torch.nn.functional.dropout = _gpu_dropout


def storage_of(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def pytorch_saved_bytes(name):
    model, run = zoo_modules.build(name, BATCH, T)
    skip = {storage_of(p)[0] for p in model.parameters()} | {storage_of(b)[0] for b in model.buffers()}
    kept = {}

    def pack(t):
        if t.device.type == "cpu" and t.numel() > 0:
            ptr, nbytes = storage_of(t)
            if ptr not in skip:
                kept[ptr] = max(kept.get(ptr, 0), nbytes)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = run(model)
    del loss
    # The batch itself (token ids, images) is the input, which gradsync counts apart.
    total = sum(kept.values())
    del model
    gc.collect()
    return total


def gradsync_saved_bytes(name):
    cmd = [gradsync, "models", "show", name, "--json", "--precision", "fp32", "--batch", str(BATCH)]
    if not name.startswith("resnet") and not name.startswith("vgg") and not name.startswith("vit"):
        cmd += ["--seq-len", str(T)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["memory"]["activations"]


torch_support.check_bytes([(name, pytorch_saved_bytes(name), gradsync_saved_bytes(name)) for name in MODELS],
                          TOLERANCE, "model")
print(f"every model within {100 * TOLERANCE:.0f}% of PyTorch's saved tensors (batch {BATCH}, T {T}, fp32)")
