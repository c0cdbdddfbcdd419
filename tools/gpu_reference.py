#!/usr/bin/env python3
"""gpu_reference.py: real PyTorch training steps on one GPU, the reference gradsync's single-GPU
predictions are checked against (issue "Real mode on a GPU", item 4), and DDP's real bucket plans.

    python3 tools/gpu_reference.py --out DIR [--steps 20] [--warmup 3] [--only CASE ...] [--skip CASE ...]
                                   [--no-buckets | --buckets-only]

Each case builds a zoo model from the zoo's own reference code (tools/build_zoo.py, torchvision),
puts it on the GPU, and times whole training steps (forward, loss, backward, optimizer step,
zero_grad) with the batch already on the GPU: the median of --steps steps after --warmup, each
step the time between CUDA events recorded at consecutive step starts (so host-bound steps count
their host time). One more step runs under torch.profiler. Written to DIR:
  reference.json  the machine (GPU, driver, torch, CUDA, cuDNN, NCCL) and per case: settings, median
                  and quartile step times, peak memory allocated and reserved
  profile.json    per case: the profiled step's CUDA kernels by name (count, total us) and the aten
                  ops by name and input shapes (count, self device us, host us)
  trace_CASE.json.gz  the profiled step as a Chrome trace, for the cases named in TRACE_CASES
  buckets.json    DDP's bucket plans (world size 1, NCCL, iterations 1-3; the index, parameter names and
                  bytes of each bucket a comm hook sees) for the zoo models, default and explicit caps
Cases that fail are recorded with their error and the others go on.
"""
import argparse
import gc
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import build_zoo  # noqa: E402

# name: model, batch, seq_len or image, precision, attention, compile, channels_last, optimizer, cudnn benchmark
# precision: fp32 = no TF32 anywhere (torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32 False);
# fp32-default = PyTorch's defaults (matmul TF32 off, cuDNN's convolutions TF32 on); tf32 = both on;
# bf16 / fp16 = torch.autocast over forward and loss, fp32 weights, defaults otherwise.
CASES = [
    dict(name="gpt2-fp32-math", model="nanogpt", batch=16, t=1024, precision="fp32", attention="math"),
    dict(name="gpt2-tf32-math", model="nanogpt", batch=16, t=1024, precision="tf32", attention="math"),
    dict(name="gpt2-bf16-math", model="nanogpt", batch=16, t=1024, precision="bf16", attention="math"),
    dict(name="gpt2v50257-bf16-math", model="gpt2", batch=16, t=1024, precision="bf16", attention="math"),
    dict(name="gpt2-bf16-sdpa", model="nanogpt", batch=16, t=1024, precision="bf16", attention="sdpa"),
    dict(name="gpt2-tf32-sdpa", model="nanogpt", batch=16, t=1024, precision="tf32", attention="sdpa"),
    dict(name="resnet50-fp32", model="resnet50", batch=128, image=224, precision="fp32", optimizer="sgd-momentum"),
    dict(name="resnet50-fp32-default", model="resnet50", batch=128, image=224, precision="fp32-default",
         optimizer="sgd-momentum"),
    dict(name="resnet50-tf32", model="resnet50", batch=128, image=224, precision="tf32", optimizer="sgd-momentum"),
    dict(name="resnet50-fp16", model="resnet50", batch=128, image=224, precision="fp16", optimizer="sgd-momentum"),
    dict(name="resnet50-bf16", model="resnet50", batch=128, image=224, precision="bf16", optimizer="sgd-momentum"),
    dict(name="resnet50-bf16-cl", model="resnet50", batch=128, image=224, precision="bf16", channels_last=True,
         optimizer="sgd-momentum"),
    dict(name="resnet50-fp16-bench", model="resnet50", batch=128, image=224, precision="fp16", benchmark=True,
         optimizer="sgd-momentum"),
    dict(name="bert-large-bf16", model="bert-large", batch=32, t=384, precision="bf16"),
    dict(name="bert-large-tf32", model="bert-large", batch=32, t=384, precision="tf32"),
    dict(name="bert-large-fp16", model="bert-large", batch=32, t=384, precision="fp16"),
    # Small steps, where the host's launches decide the time.
    dict(name="gpt2-bf16-math-t128", model="nanogpt", batch=16, t=128, precision="bf16", attention="math"),
    dict(name="resnet50-fp32-default-b1", model="resnet50", batch=1, image=224, precision="fp32-default",
         optimizer="sgd-momentum"),
    dict(name="resnet50-fp32-default-b4", model="resnet50", batch=4, image=224, precision="fp32-default",
         optimizer="sgd-momentum"),
    dict(name="resnet50-fp32-default-b32", model="resnet50", batch=32, image=224, precision="fp32-default",
         optimizer="sgd-momentum"),
    dict(name="gpt2-bf16-sdpa-compile", model="nanogpt", batch=16, t=1024, precision="bf16", attention="sdpa",
         compile=True),
]
TRACE_CASES = ("gpt2-bf16-math", "resnet50-fp16")
BUCKET_MODELS = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "bert-base", "bert-large", "resnet18", "resnet50",
                 "resnet101", "vgg16", "vit-b-16", "llama2-7b"]


def machine():
    m = dict(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    try:
        m["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as e:  # noqa: BLE001
        m["nccl"] = f"unknown ({e})"
    p = torch.cuda.get_device_properties(0)
    m.update(gpu=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory,
             l2_bytes=getattr(p, "L2_cache_size", None), capability=f"{p.major}.{p.minor}")
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        m["nvidia_smi"] = q.stdout.strip()
    except Exception as e:  # noqa: BLE001
        m["nvidia_smi"] = f"unavailable ({e})"
    m["date"] = time.strftime("%Y-%m-%d")
    return m


def set_precision(p, benchmark):
    torch.backends.cuda.matmul.allow_tf32 = p == "tf32"
    torch.backends.cudnn.allow_tf32 = p in ("tf32", "fp32-default", "bf16", "fp16")  # PyTorch's default: True
    torch.backends.cudnn.benchmark = benchmark


def sdpa_forward(self, x):
    """nanoGPT's attention with its flash branch: F.scaled_dot_product_attention(is_causal=True)."""
    B, T, C = x.size()
    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
    q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
    v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.transpose(1, 2).contiguous().view(B, T, C)
    return self.resid_dropout(self.c_proj(y))


def materialise(m, device):
    """A module built on the meta device (the zoo's reference code), on `device`, initialised."""
    if any(p.is_meta for p in m.parameters()) or any(b.is_meta for b in m.buffers()):
        m = m.to_empty(device=device)
        if hasattr(m, "lm_head") and hasattr(m, "transformer"):
            m.transformer.wte.weight = m.lm_head.weight  # to_empty unties: tie again
        with torch.no_grad():
            for p in m.parameters():
                p.normal_(0, 0.02)
            for n, b in m.named_buffers():
                if n.endswith("position_ids"):
                    b.copy_(torch.arange(b.shape[-1], device=device).expand_as(b))
                elif n.endswith("attn.bias"):
                    b.copy_(torch.tril(torch.ones_like(b)))
                elif "inv_freq" in n:
                    d = b.shape[-1] * 2
                    b.copy_(1.0 / (10000 ** (torch.arange(0, d, 2, device=device).float() / d)))
                else:
                    b.zero_()
    return m.to(device)


def build(name, batch, t, image, device):
    """(module, inputs(), loss(module, inputs)) for a zoo model on `device`."""
    torch.manual_seed(0)
    if name in build_zoo.GPT2 or name == "nanogpt":
        n_layer, n_head, n_embd = build_zoo.GPT2.get(name, (12, 12, 768))
        vocab = 50304 if name == "nanogpt" else 50257
        m = materialise(build_zoo.GPT(dict(vocab=vocab, block=1024, n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                                           dropout=0.0)), device)
        idx = torch.randint(0, vocab, (batch, t), device=device)
        return m, lambda mod: mod(idx, idx)[1]
    if name in build_zoo.BERT:
        layers, heads, hidden = build_zoo.BERT[name]
        m = materialise(build_zoo.BertModel(dict(layers=layers, heads=heads, hidden=hidden)), device)
        idx = torch.randint(0, 30522, (batch, t), device=device)

        def run(mod):
            seq, pooled = mod(idx)
            return seq.float().pow(2).mean() + pooled.float().pow(2).mean()
        return m, run
    if name == "llama2-7b":
        m = materialise(build_zoo.LlamaForCausalLM(build_zoo.LLAMA2_7B), device)
        idx = torch.randint(0, 32000, (batch, t), device=device)
        return m, lambda mod: mod(idx, idx)[1]
    import torchvision
    m = getattr(torchvision.models, build_zoo.VISION[name])().to(device)
    x = torch.randn(batch, 3, image, image, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    return m, lambda mod: F.cross_entropy(mod(x), y)


def make_optimizer(kind, params):
    if kind == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
    return torch.optim.AdamW(params, lr=6e-4, weight_decay=0.1, betas=(0.9, 0.95))


def trace_case(c, out_dir):
    """Two training steps under torch.profiler with a schedule and prof.step() after each, as a
    user records them for `gradsync models import-trace`: DIR/steps_CASE.json.gz."""
    from torch.profiler import ProfilerActivity, profile, schedule
    model, step = setup_case(c)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    path = os.path.join(out_dir, f"steps_{c['name']}.json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(4):
            step()
            torch.cuda.synchronize()
            prof.step()
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(path)


def setup_case(c):
    dev = torch.device("cuda")
    set_precision(c["precision"], c.get("benchmark", False))
    model, loss_of = build(c["model"], c["batch"], c.get("t", 0), c.get("image", 224), dev)
    if c.get("attention") == "sdpa":
        for blk in model.transformer.h:
            blk.attn.forward = sdpa_forward.__get__(blk.attn)
    if c.get("channels_last"):
        model = model.to(memory_format=torch.channels_last)
    model.train()
    opt = make_optimizer(c.get("optimizer", "adamw"), model.parameters())
    runner = torch.compile(model) if c.get("compile") else model
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(c["precision"])

    def step():
        """One training step: forward and loss under autocast, backward, optimizer, zero_grad."""
        with torch.autocast("cuda", dtype=amp or torch.bfloat16, enabled=amp is not None):
            loss = loss_of(runner)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, step


def run_case(c, steps, warmup, out_dir, profiles):
    model, step = setup_case(c)

    t0 = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    w0 = time.time()
    for i in range(steps):
        events[i].record()
        step()
    events[steps].record()
    torch.cuda.synchronize()
    wall = (time.time() - w0) / steps
    ms = sorted(events[i].elapsed_time(events[i + 1]) for i in range(steps))
    r = dict(c, median_ms=ms[len(ms) // 2], q1_ms=ms[len(ms) // 4], q3_ms=ms[(3 * len(ms)) // 4], min_ms=ms[0],
             wall_mean_ms=wall * 1e3, warmup_s=warm_s, peak_allocated=torch.cuda.max_memory_allocated(),
             peak_reserved=torch.cuda.max_memory_reserved(),
             params=sum(p.numel() for p in model.parameters()))
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
            k = kernels.setdefault(e.name, [0, 0.0])
            k[0] += 1
            k[1] += e.time_range.elapsed_us()
    ops = []
    for a in prof.key_averages(group_by_input_shape=True):
        dev_self = getattr(a, "self_device_time_total", getattr(a, "self_cuda_time_total", 0))
        if a.key.startswith("aten::") or dev_self > 0:
            ops.append(dict(op=a.key, shapes=str(a.input_shapes), count=a.count, self_device_us=dev_self,
                            device_us=getattr(a, "device_time_total", getattr(a, "cuda_time_total", 0)),
                            host_us=a.cpu_time_total, self_host_us=a.self_cpu_time_total))
    profiles[c["name"]] = dict(kernels=sorted(([n, v[0], v[1]] for n, v in kernels.items()), key=lambda x: -x[2]),
                               ops=sorted(ops, key=lambda o: -o["self_device_us"]))
    if c["name"] in TRACE_CASES:
        tmp = os.path.join(out_dir, f"trace_{c['name']}.json")
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb") as g:
            shutil.copyfileobj(f, g)
        os.remove(tmp)
    return r


def host_costs():
    """Host time per eager op on this machine: many tiny ops issued back to back (each one kernel),
    so the GPU waits for the host and the wall time per op is the host's dispatch and launch cost."""
    dev = torch.device("cuda")
    a, b = torch.randn(256, device=dev), torch.randn(256, device=dev)
    w, x = torch.randn(64, 64, device=dev), torch.randn(8, 64, device=dev)
    xc, wc = torch.randn(1, 64, 8, 8, device=dev), torch.randn(64, 64, 3, 3, device=dev)
    rm, rv = torch.zeros(64, device=dev), torch.ones(64, device=dev)
    out = {}
    for name, fn in (("add", lambda: torch.add(a, b)), ("add_", lambda: a.add_(b)),
                     ("linear", lambda: F.linear(x, w)), ("relu", lambda: F.relu(a)),
                     ("mm", lambda: torch.mm(x, w)), ("conv2d", lambda: F.conv2d(xc, wc, padding=1)),
                     ("batch_norm", lambda: F.batch_norm(xc, rm, rv, training=True))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        out[name + "_us"] = (time.perf_counter() - t0) / n * 1e6
    return out


def bucket_plans(models, device="cuda", backend="nccl"):
    """DDP's real bucket plans under this torch (world size 1, NCCL on the GPU): what a comm hook sees."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    plans = {}
    tmp = tempfile.mkdtemp()
    dist.init_process_group(backend, init_method=f"file://{tmp}/store", rank=0, world_size=1)
    dev = torch.device(device)
    for name in models:
        t0 = time.time()
        try:
            image = 64 if name in ("resnet18", "resnet50", "resnet101", "vgg16") else 224
            model, loss_of = build(name, 1, 16, image, dev)
            names = {id(p): n for n, p in model.named_parameters()}
            for cap in (None, 1, 25):
                for mode, kw in (("default", {}), ("static_graph", {"static_graph": True})):
                    seen, it = {}, [0]

                    def hook(state, bucket):
                        seen.setdefault(it[0], {})[bucket.index()] = (
                            [names[id(p)] for p in bucket.parameters()],
                            bucket.buffer().numel() * bucket.buffer().element_size())
                        fut = torch.futures.Future()
                        fut.set_result(bucket.buffer())
                        return fut
                    args = dict(kw, device_ids=[0]) if device == "cuda" else dict(kw)
                    if cap is not None:
                        args["bucket_cap_mb"] = cap
                    ddp = DDP(model, **args)
                    ddp.register_comm_hook(None, hook)
                    for i in (1, 2, 3):
                        it[0] = i
                        model.zero_grad(set_to_none=True)
                        loss_of(ddp).backward()
                    key = f"{name}|{'default' if cap is None else cap}|{mode}"
                    plans[key] = {i: [seen[i][b] for b in sorted(seen[i])] for i in sorted(seen)}
                    del ddp
            del model
        except Exception as e:  # noqa: BLE001
            plans[f"{name}|error"] = f"{type(e).__name__}: {e}"
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        print(f"buckets {name}: {time.time() - t0:.1f} s", flush=True)
    dist.destroy_process_group()
    return plans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--no-buckets", action="store_true")
    ap.add_argument("--buckets-only", action="store_true")
    ap.add_argument("--host-only", action="store_true", help="only the host's cost per eager op, to DIR/host.json")
    ap.add_argument("--traces-only", action="store_true",
                    help="only two profiled steps of each --only case, with ProfilerStep#N, to DIR/steps_CASE.json.gz")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.host_only:
        with open(os.path.join(a.out, "host.json"), "w") as f:
            json.dump(dict(machine=machine(), host=host_costs()), f, indent=1)
        return
    if a.traces_only:
        for c in CASES:
            if c["name"] in (a.only or []):
                trace_case(c, a.out)
                gc.collect()
                torch.cuda.empty_cache()
                print(f"traced {c['name']}", flush=True)
        return
    ref = dict(machine=machine(), steps=a.steps, warmup=a.warmup, cases=[])
    profiles = {}

    def save():
        with open(os.path.join(a.out, "reference.json"), "w") as f:
            json.dump(ref, f, indent=1)
        with open(os.path.join(a.out, "profile.json"), "w") as f:
            json.dump(profiles, f)

    if not a.buckets_only:
        for c in CASES:
            if (a.only and c["name"] not in a.only) or c["name"] in a.skip:
                continue
            t0 = time.time()
            try:
                r = run_case(c, a.steps, a.warmup, a.out, profiles)
                gc.collect()
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                r = dict(c, error=f"{type(e).__name__}: {e}")
                gc.collect()
                torch.cuda.empty_cache()
            ref["cases"].append(r)
            save()
            print(f"{c['name']:26s} {r.get('median_ms', float('nan')):9.2f} ms  peak "
                  f"{r.get('peak_allocated', 0) / 2**30:6.2f} GiB  ({time.time() - t0:.0f} s){'  ' + r['error'] if 'error' in r else ''}",
                  flush=True)
    if not a.no_buckets:
        plans = bucket_plans(BUCKET_MODELS)
        with open(os.path.join(a.out, "buckets.json"), "w") as f:
            json.dump(dict(torch=torch.__version__, plans=plans), f)


if __name__ == "__main__":
    main()
