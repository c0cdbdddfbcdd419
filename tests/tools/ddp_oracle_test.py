#!/usr/bin/env python3
"""ddp_oracle_test.py GRADSYNC [MODEL ...]: real PyTorch as the oracle of DDP's bucket plans.

For each zoo model built from the same reference code as the zoo (tools/build_zoo.py; torchvision
for the vision models), it wraps the module in real torch.nn.parallel.DistributedDataParallel on
the CPU (gloo, world size 1: the plan is rank 0's, so one rank gives the same plan as two), runs
iterations 1-3 at batch 1 with a short sequence, and records every bucket a communication hook
sees (index, parameter names from bucket.parameters(), bytes). `gradsync buckets --json` with the
same settings and --pytorch-version torch.__version__ (the rules of the PyTorch imported here)
must give the same buckets in the same order
with the same parameters. Every difference is reported with the model, the setting, the
iteration and the first differing bucket. Exits 77 (ctest: skipped) when torch cannot be imported.
"""
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_support  # noqa: E402,F401  (exits 77 without torch; tools/ on sys.path)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
import zoo_modules  # noqa: E402

gradsync = sys.argv[1]
# Every zoo model that a 24 GiB machine trains on the CPU (gpt2-large peaks at 12.3 GB); gpt2-xl and
# llama2-7b (6 and 27 GB of fp32 parameters, twice as much again in gradients and bucket copies) do
# not fit.
MODELS = sys.argv[2:] or ["gpt2", "gpt2-medium", "gpt2-large", "bert-base", "bert-large", "bert-base-pretraining", "resnet18", "resnet50",
                          "resnet101", "vgg16", "vit-b-16"]
# 1, 25 (DDP's default) and 50 MiB: the plans of PyTorch 2.11 for the default cap, 1 and 25 are checked
# besides from a GPU recording (tools/ddp_plans_torch2.11); 5 MiB left out to keep CI's run under 40 minutes.
CAPS = [1, 25, 50]
# The non-default modes also set gradient_as_bucket_view=True: the Reducer then skips copying every
# gradient into its bucket (a third of the time here), and it changes no plan (reducer.cpp builds and
# rebuilds buckets from the parameters' sizes and ready order alone). The default mode is DDP's defaults.
MODES = [("default", {}), ("find_unused_parameters", {"find_unused_parameters": True, "gradient_as_bucket_view": True}),
         ("static_graph", {"static_graph": True, "gradient_as_bucket_view": True})]
# The large models (each combination costs them 4-25 s, against 1-6 s for the others) check every cap
# and every mode once, not every pair: DDP's default cap in its default mode, 1 MiB with
# find_unused_parameters, 50 MiB with static_graph. The bucketing rules do not depend on the model, and
# the six smaller models check every pair; what the large ones add is more parameters per bucket and
# more buckets. The full cross product on them took 9.1 of CI's 23 test-minutes.
# bert-base-pretraining's masked-LM logits over the vocabulary make each of its combinations cost about 9 s:
# it checks the diagonal too (its decoder tied to the word embeddings, which DDP buckets once).
# gpt2, vgg16 and resnet101 check the diagonal too since 2026-12-02 (CI's run was 49 minutes on a slow
# day): their full cross products took 88, 45 and 41 s of it, and bert-base, resnet18 and resnet50 (one
# of each family) still check every pair.
LARGE = {"gpt2-medium", "gpt2-large", "bert-large", "vit-b-16", "bert-base-pretraining", "gpt2", "vgg16", "resnet101"}
DIAGONAL = [(25, MODES[0]), (1, MODES[1]), (50, MODES[2])]
# gpt2-large is gpt2-medium's block, 1280 wide instead of 1024, 36 times instead of 24 (the same
# parameters in the same order): it checks DDP's defaults only, where its 774M parameters make the most
# buckets. Each combination costs it 50-95 s, so CI leaves it out (tests/CMakeLists.txt); run it with
# tests/tools/run_torch_test.sh ddp_oracle_test.py build/default/apps/gradsync gpt2-large.
LARGEST = {"gpt2-large": [(25, MODES[0])]}


# unused-net: four Linear layers, one never called in forward (a head a script left in place). With
# static_graph the Reducer records the parameters without a gradient last, in registration order, when
# it rebuilds (its end-of-backward callback); gradsync put them first until 2026-12-01 (a new user's
# report). DDP's default mode refuses the model in iteration 2 ("Expected to have finished reduction"),
# so it checks the other modes, and static_graph with find_unused_parameters.
UNUSED_MODES = MODES[1:] + [("static_graph+find_unused_parameters",
                             {"static_graph": True, "find_unused_parameters": True, "gradient_as_bucket_view": True})]


class UnusedNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(512, 512)
        self.unused = torch.nn.Linear(512, 1024)
        self.b = torch.nn.Linear(512, 512)
        self.c = torch.nn.Linear(512, 10)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def build(name, tmp):
    """(module, run, the --model argument gradsync takes for it)."""
    if name != "unused-net":
        model, run = zoo_modules.build(name, 1, T, IMAGE.get(name, 224))
        return model, run, name
    from export_model import export  # tools/, on sys.path through torch_support
    torch.manual_seed(0)
    model = UnusedNet()
    path = os.path.join(tmp, "unused-net.yaml")
    export(model, lambda _t: (torch.zeros(1, 512),), name="unused-net", path=path, batch=4)
    x = torch.randn(4, 512)
    return model, lambda d: d(x).sum(), path


def combinations(name):
    if name == "unused-net":
        return [(cap, mode) for cap in (1, 0) for mode in UNUSED_MODES]
    if name in LARGEST:
        return LARGEST[name]
    if name in LARGE:
        return DIAGONAL
    # DDP(bucket_cap_mb=0), one bucket per gradient, on two small models (it only adds buckets).
    return [(cap, mode) for cap in CAPS + ([0] if name in ("resnet18", "gpt2") else []) for mode in MODES]
T = 16
# The plans depend on the parameters and on the order autograd makes their gradients ready, not on the
# input's size: the ResNets and VGG16 end in an adaptive average pool, so they run at 64x64 pixels
# (the time goes into the convolutions). ViT-B/16's position embedding fixes its input at 224x224.
IMAGE = {"resnet18": 64, "resnet50": 64, "resnet101": 64, "vgg16": 64}
# One thread: ctest runs two of these side by side on two cores, and the work is memory-bound.
torch.set_num_threads(1)


def pytorch_plans(model, run, cap, kwargs):
    names = {id(p): n for n, p in model.named_parameters()}
    seen = {}
    it = [0]

    def hook(state, bucket):
        params = [names[id(p)] for p in bucket.parameters()]
        seen.setdefault(it[0], {})[bucket.index()] = (params, bucket.buffer().numel() * bucket.buffer().element_size())
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut

    ddp = DDP(model, bucket_cap_mb=cap, **kwargs)
    ddp.register_comm_hook(None, hook)
    for i in (1, 2, 3):
        it[0] = i
        model.zero_grad(set_to_none=True)
        run(ddp).backward()
    del ddp
    gc.collect()
    return {i: [seen[i][b] for b in sorted(seen[i])] for i in sorted(seen)}


def gradsync_plans(model_arg, cap, kwargs):
    cmd = [gradsync, "buckets", "--model", model_arg, "--json", "--bucket-cap-mb", str(cap), "--pytorch-version",
           torch.__version__]
    if kwargs.get("find_unused_parameters"):
        cmd.append("--find-unused-parameters")
    if kwargs.get("static_graph"):
        cmd.append("--static-graph")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr}")
    j = json.loads(out.stdout)
    plans = {}
    for it in j["iterations"]:
        plans[it["iteration"]] = [(b["params"], b["bytes"]) for b in it["buckets"]]
    return plans, j


def first_difference(want, got):
    for k in range(max(len(want), len(got))):
        if k >= len(want) or k >= len(got) or want[k] != got[k]:
            w = want[k] if k < len(want) else None
            g = got[k] if k < len(got) else None
            return k, w, g
    return None


failures = []
with tempfile.TemporaryDirectory() as tmp:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0, world_size=1)
    for name in MODELS:
        start = time.time()
        model, run, model_arg = build(name, tmp)
        compared = 0
        for cap, (mode, kwargs) in combinations(name):
            want = pytorch_plans(model, run, cap, kwargs)
            got, j = gradsync_plans(model_arg, cap, kwargs)
            for i in (1, 2, 3):
                g = got.get(i, got[max(got)])  # gradsync lists iterations until the plan is steady
                d = first_difference(want[i], g)
                compared += 1
                if d:
                    k, w, gg = d
                    msg = (f"{name}, bucket_cap_mb {cap}, {mode}, iteration {i}: bucket {k} differs: PyTorch "
                           f"{(w[1], w[0][:4], len(w[0])) if w else None} (bytes, first params, count), gradsync "
                           f"{(gg[1], gg[0][:4], len(gg[0])) if gg else None}; PyTorch {len(want[i])} buckets, "
                           f"gradsync {len(g)}")
                    failures.append(msg)
                    print("FAIL:", msg)
        del model
        gc.collect()
        print(f"{name}: {compared} plans compared in {time.time() - start:.1f} s")
    dist.destroy_process_group()

if failures:
    sys.exit(1)
print(f"OK (torch {torch.__version__})")
