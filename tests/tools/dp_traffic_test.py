#!/usr/bin/env python3
"""dp_traffic_test.py GRADSYNC [MODEL ...]: DataParallel's traffic through GPU0 against what
torch.nn.parallel moves, for every zoo model.

For two replicas at batch 1 per GPU (T = 16, fp32), the bytes each phase moves are computed from
the real module's tensors (built on the meta device from the zoo's reference code, torchvision
for the vision models): replicate broadcasts every parameter and buffer to replica 1; scatter
sends replica 1 its chunk of the inputs; gather brings back everything its forward returns;
reduce_add brings every gradient of a trainable parameter to GPU0. `gradsync simulate --strategy
dp` must move exactly those bytes in iteration 1 (events.csv). Exits 77 (ctest: skipped) when
torch cannot be imported.
"""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_support  # noqa: E402,F401  (exits 77 without torch; tools/ on sys.path)
import torch  # noqa: E402
import build_zoo  # noqa: E402

gradsync = sys.argv[1]
MODELS = sys.argv[2:] or (list(build_zoo.GPT2) + list(build_zoo.BERT) + ["llama2-7b"] + list(build_zoo.VISION))
T = 16
META = torch.device("meta")


def nbytes(t):
    return t.numel() * t.element_size()


def flat(x):
    """Every tensor of a forward's output (tuples, lists, dicts), as DataParallel's gather sees them."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat(v)]
    return []


def build(name):
    """The module on the meta device and one sample's inputs."""
    if name in build_zoo.GPT2:
        n_layer, n_head, n_embd = build_zoo.GPT2[name]
        m = build_zoo.GPT(dict(vocab=50257, block=1024, n_layer=n_layer, n_head=n_head, n_embd=n_embd, dropout=0.0))
        idx = torch.zeros(1, T, dtype=torch.long, device=META)
        return m, (idx, idx)
    if name in build_zoo.BERT:
        layers, heads, hidden = build_zoo.BERT[name]
        return build_zoo.BertModel(dict(layers=layers, heads=heads, hidden=hidden)), (
            torch.zeros(1, T, dtype=torch.long, device=META),)
    if name == "llama2-7b":
        idx = torch.zeros(1, T, dtype=torch.long, device=META)
        return build_zoo.LlamaForCausalLM(build_zoo.LLAMA2_7B), (idx, idx)
    import torchvision
    return getattr(torchvision.models, build_zoo.VISION[name])().to(META), (torch.zeros(1, 3, 224, 224, device=META),)


def expected(name):
    m, inputs = build(name)
    with torch.no_grad():
        out = m(*inputs)
    return {
        "dp:replicate": sum(nbytes(p) for p in m.parameters()) + sum(nbytes(b) for b in m.buffers()),
        "dp:scatter": sum(nbytes(x) for x in inputs),
        "dp:gather": sum(nbytes(t) for t in flat(out)),
        "dp:reduce": sum(nbytes(p) for p in m.parameters() if p.requires_grad),
    }


def simulated(name, tmp):
    out = os.path.join(tmp, name)
    cmd = [gradsync, "simulate", "--strategy", "dp", "--model", name, "--gpus", "2", "--batch-per-gpu", "1",
           "--precision", "fp32", "--iterations", "2", "--warmup", "1", "--out", out]
    if name not in build_zoo.VISION:
        cmd += ["--seq-len", str(T)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    # A model that does not fit (llama2-7b's fp32 replica on 80 GB) still writes its outputs, then
    # exits 1 with the out-of-memory error: its traffic is what this test reads.
    oom = r.returncode == 1 and r.stderr.startswith("error: out of memory: ")
    if r.returncode != 0 and not oom:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr}")
    got = {"dp:replicate": 0, "dp:scatter": 0, "dp:gather": 0, "dp:reduce": 0}
    with open(os.path.join(out, "events.csv")) as f:
        for e in csv.DictReader(f):
            if e["iteration"] != "1" or e["name"] not in got or not e["bytes"]:
                continue
            # Replica 1's side: what it receives (replicate), sends (gather, reduce), and GPU0's
            # copy of its input chunk (scatter, to peer 1).
            if (e["name"] == "dp:scatter" and e["rank"] == "0" and e["peer"] == "1") or \
               (e["name"] != "dp:scatter" and e["rank"] == "1"):
                got[e["name"]] += int(float(e["bytes"]))
    return got


failures = []
with tempfile.TemporaryDirectory() as tmp:
    for name in MODELS:
        want, got = expected(name), simulated(name, tmp)
        for phase in want:
            if want[phase] != got[phase]:
                failures.append(f"{name}: {phase}: torch.nn.parallel moves {want[phase]} bytes to or from replica 1, "
                                f"gradsync {got[phase]}")
                print("FAIL:", failures[-1])
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in want.items()))
if failures:
    sys.exit(1)
print("OK")
