#!/usr/bin/env python3
"""import_trace_test.py GRADSYNC: `gradsync models import-trace` on traces that real PyTorch writes.

A small MLP trains for a few steps on the CPU under torch.profiler; its Chrome trace is imported
with the model file tools/export_model.py writes for it. Checked:
  * the phases gradsync reads match the same spans computed here from the trace's own events;
  * round trip: the single-device step `models show` predicts from the imported file is the
    trace's mean ProfilerStep#N within 2 %;
  * `simulate` predicts DDP on 2 GPUs from the imported model;
  * a Kineto-format GPU trace written here, with known kernels, gives its phases exactly;
  * gradient accumulation over a DataLoader, prof.step() after every micro-step: the DataLoader's
    spans are other, the optimizer is its mean over its own steps, grad_accum and the optimizer
    (SGD with momentum) are recorded and are the defaults of the model's runs;
  * bad traces are refused with located errors: not JSON, no events, no step, no backward, several
    GPUs, CUDA launches without kernels, a trace of another model.
Exits 77 (ctest: skipped) when torch cannot be imported."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_support import ROOT  # noqa: E402,F401  (exits 77 without torch)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import yaml  # noqa: E402  (Debian: python3-yaml)
from torch.profiler import ProfilerActivity, profile, schedule  # noqa: E402
from export_model import export  # noqa: E402

gradsync = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([gradsync, *args], capture_output=True, text=True)


BATCH = 64


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.LayerNorm(1024),
                         nn.Linear(1024, 10))


def train_trace(model, path, backward=True, micro=1):
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(BATCH, 256)
    y = torch.randint(0, 10, (BATCH,))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=2, active=5)) as p:
        for _ in range(8):
            opt.zero_grad(set_to_none=True)
            for _ in range(micro):  # gradient accumulation: micro-batches before one optimizer step
                loss = nn.functional.cross_entropy(model(x), y)
                if backward:
                    (loss / micro).backward()
            if backward:
                opt.step()
            p.step()
    p.export_chrome_trace(path)


def events_of(path):
    with open(path) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def spans_here(path):
    """The step's phases computed here, from the trace's own events (microseconds)."""
    ev = [e for e in events_of(path) if e.get("ph") == "X"]
    steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
    out = {"step": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    for s in steps:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        inside = [e for e in ev if e["ts"] >= lo and e["ts"] + e["dur"] <= hi]
        bwd = [e for e in inside if e["name"].startswith("autograd::engine::evaluate_function:")]
        b0 = min(e["ts"] for e in bwd)
        b1 = max(e["ts"] + e["dur"] for e in bwd)
        zero = [e["ts"] + e["dur"] for e in inside if e["name"].startswith("Optimizer.zero_grad#")]
        f0 = max(zero) if zero else lo
        opt = [e for e in inside if e["name"].startswith("Optimizer.step#")]
        out["step"] += s["dur"]
        out["forward"] += b0 - f0
        out["backward"] += b1 - b0
        out["optimizer"] += sum(e["dur"] for e in opt)
    return {k: v / len(steps) * 1e-6 for k, v in out.items()}


with tempfile.TemporaryDirectory() as tmp:
    model = mlp()
    model_file = os.path.join(tmp, "mlp.yaml")
    export(model, lambda T: (torch.randn(1, 256),), "mlp", model_file, batch=BATCH)
    trace = os.path.join(tmp, "trace.json")
    train_trace(model, trace)
    out = os.path.join(tmp, "mlp-measured.yaml")
    r = run("models", "import-trace", trace, "--model", model_file, "--batch", str(BATCH), "-o", out)
    check(r.returncode == 0, f"import-trace exits 0: {r.returncode} {r.stderr}")
    # A CPU's step: said, with the GPU `models show` then uses (a new user's report, 2026-12-02).
    check("note: a CPU trace (no CUDA kernels)" in r.stderr and "shows it on a100-sxm4-80gb" in r.stderr,
          f"import-trace says the trace is a CPU's: {r.stderr}")

    if r.returncode == 0:
        with open(out) as f:
            measured = yaml.safe_load(f)["measured"]
        here = spans_here(trace)
        for phase in ("forward", "backward", "optimizer"):
            got = measured[phase + "_s"]
            check(abs(got - here[phase]) <= 1e-3 * here["step"],
                  f"{phase}: gradsync read {got:.6g} s, the trace's spans give {here[phase]:.6g} s")
        check(measured["steps"] == 5, f"5 ProfilerStep#N averaged, not {measured['steps']}")
        check(measured["batch"] == BATCH and measured["device"] == "cpu", f"batch and device: {measured}")

        # Round trip: the step `models show` predicts from the imported file.
        show = run("models", "show", out, "--batch", str(BATCH), "--json")
        check(show.returncode == 0, f"models show on the imported file: {show.stderr}")
        if show.returncode == 0:
            j = json.loads(show.stdout)
            predicted = j["forward_s"] + j["backward_s"] + j["optimizer_s"]
            err = predicted / here["step"] - 1
            print(f"round trip: trace's mean step {here['step'] * 1e3:.4f} ms, models show {predicted * 1e3:.4f} ms "
                  f"({100 * err:+.3f} %)")
            check(abs(err) < 0.02, f"round trip within 2 %: {100 * err:+.3f} %")
            # Twice the batch: the layers' times double, the optimizer's and the rest do not.
            show2 = json.loads(run("models", "show", out, "--batch", str(2 * BATCH), "--json").stdout)
            check(abs(show2["backward_s"] - 2 * j["backward_s"]) < 1e-9 and show2["optimizer_s"] == j["optimizer_s"],
                  "batch scaling: backward doubles with the batch, the optimizer stays")

        # The table says the times are measured, and prints no roofline kernels or classes for them.
        text = run("models", "show", out, "--batch", str(BATCH)).stdout
        check("GPU time by class" not in text and "(measured, with the step's other time)" in text,
              f"models show on the imported file: measured times, no modelled kernels: {text}")
        check("# GPU: cpu is no GPU of topologies/hardware/gpus.yaml" in text and "those of a100-sxm4-80gb" in text,
              f"models show names the GPU it shows a CPU's step on: {text}")
        text_h100 = run("models", "show", out, "--batch", str(BATCH), "--gpu", "h100-sxm5-80gb").stdout
        check("# GPU:" not in text_h100, f"--gpu given: no line about the default GPU: {text_h100}")
        if show.returncode == 0:
            check(json.loads(show.stdout)["gpu_s_by_class"] == {}, "no kernel classes for a measured step")

        sim = run("simulate", "--strategy", "ddp", "--model", out, "--topology", "dgx-a100", "--gpus", "2",
                  "--batch-per-gpu", str(BATCH), "--out", os.path.join(tmp, "sim"))
        check(sim.returncode == 0, f"simulate DDP from the imported model: {sim.stderr}")
        # One GPU under DataParallel adds nothing to the measured step: its loss and its batch's copy
        # are inside the measured times (the input is pageable by default, and the model's loss is
        # outside it), so neither is costed again.
        one = run("simulate", "--strategy", "dp", "--model", out, "--topology", "dgx-a100", "--gpus", "1",
                  "--batch-per-gpu", str(BATCH), "--out", os.path.join(tmp, "sim1"))
        check(one.returncode == 0, f"simulate DP on one GPU from the imported model: {one.stderr}")
        if one.returncode == 0 and show.returncode == 0:
            with open(os.path.join(tmp, "sim1", "result.json")) as f:
                steady = json.load(f)["strategies"][0]["steady_iteration_time_s"]
            shown = json.loads(show.stdout)
            step = shown["forward_s"] + shown["backward_s"] + shown["optimizer_s"]
            check(abs(steady / step - 1) < 1e-4,
                  f"one-GPU DP from a measured step: {steady * 1e3:.4f} ms, models show {step * 1e3:.4f} ms")

        again = run("models", "import-trace", trace, "--model", out, "--batch", str(BATCH))
        check(again.returncode == 1 and "already carries a measured step" in again.stderr,
              f"importing into an imported model is refused: {again.stderr}")

    # A Kineto trace of one GPU, written here: forward kernels 100 us, backward 250 us (two kernels
    # overlapping by 50 us), optimizer 40 us, step 1000 us.
    def kineto(kernels, devices=(0,), launches=True):
        ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 1000, "dur": 1000, "pid": 1,
               "tid": 1},
              {"ph": "X", "cat": "user_annotation", "name": "Optimizer.zero_grad#SGD.zero_grad", "ts": 1000,
               "dur": 10, "pid": 1, "tid": 1},
              {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0",
               "ts": 1300, "dur": 200, "pid": 1, "tid": 2},
              {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "ts": 1600, "dur": 100,
               "pid": 1, "tid": 1}]
        for i, (launch, start, dur) in enumerate(kernels):
            if launches:
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launch, "dur": 5,
                           "pid": 1, "tid": 1, "args": {"correlation": 100 + i}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": start, "dur": dur,
                       "pid": devices[i % len(devices)], "tid": 7,
                       "args": {"correlation": 100 + i, "device": devices[i % len(devices)]}})
        return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
                "traceEvents": ev}

    gpu_trace = os.path.join(tmp, "gpu.json")
    kernels = [(1050, 1100, 100), (1310, 1320, 150), (1320, 1420, 150), (1610, 1700, 40)]
    with open(gpu_trace, "w") as f:
        json.dump(kineto(kernels), f)
    g = run("models", "import-trace", gpu_trace, "--model", model_file, "--batch", "8")
    check(g.returncode == 0, f"import of a Kineto GPU trace: {g.stderr}")
    if g.returncode == 0:
        m = yaml.safe_load(g.stdout)["measured"]
        expect = {"forward_s": 100e-6, "backward_s": 250e-6, "optimizer_s": 40e-6, "step_s": 1000e-6,
                  "other_s": 610e-6}
        for k, v in expect.items():
            check(abs(m[k] - v) < 1e-12, f"GPU trace {k}: {m[k]} != {v}")
        check(m["device"] == "NVIDIA H100 80GB HBM3", f"device {m['device']}")

    # Bad traces.
    def refused(name, content, expect):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(content)
        b = run("models", "import-trace", p, "--model", model_file, "--batch", "8")
        check(b.returncode == 1 and p in b.stderr and expect in b.stderr,
              f"{name}: exit 1 naming the file and '{expect}', got {b.returncode}: {b.stderr.strip()}")

    refused("not-json.json", '{"traceEvents": [', "not JSON")
    refused("no-step.json", json.dumps({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}]}),
            "no ProfilerStep#N")
    refused("two-gpus.json", json.dumps(kineto(kernels, devices=(0, 1))), "kernels on 2 devices")
    no_kernels = kineto(kernels)
    no_kernels["traceEvents"] = [e for e in no_kernels["traceEvents"] if e.get("cat") != "kernel"]
    refused("no-kernels.json", json.dumps(no_kernels), "CUDA launches but no kernels")
    inference = os.path.join(tmp, "inference.json")
    train_trace(mlp(), inference, backward=False)
    with open(inference) as f:
        refused("inference.json", f.read(), "has no backward")
    # A name with a control character would reach the model file: refused naming it, escaped.
    ctl = os.path.join(tmp, "ctl\x1b[31mred.json")
    shutil.copy(inference, ctl)
    c = run("models", "import-trace", ctl, "--model", model_file, "--batch", "8")
    check(c.returncode == 2 and "\\u001b[31mred.json" in c.stderr and "control character (0x1b)" in c.stderr
          and "\x1b" not in c.stderr, f"control character: exit 2, escaped, got {c.returncode}: {c.stderr!r}")
    # Gradient accumulation (4 micro-batches per step, as nanoGPT): the later forwards would count as backward.
    accum = os.path.join(tmp, "accum.json")
    train_trace(mlp(), accum, micro=4)
    with open(accum) as f:
        refused("accum.json", f.read(), "holds 4 backward passes")

    # The tutorial loop over a DataLoader, with gradient accumulation profiled as the README says:
    # prof.step() after every micro-step, SGD with momentum stepping every second one. The
    # DataLoader's spans are "other", not forward; the optimizer's time is its mean over the steps
    # that hold it (the mean over all was half of it); the micro-steps per optimizer step and the
    # optimizer are recorded, the defaults of the model's runs.
    def loader_trace(path, accum=2):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        data = torch.utils.data.TensorDataset(torch.randn(BATCH * 12, 256), torch.randint(0, 10, (BATCH * 12,)))
        loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
        with profile(activities=[ProfilerActivity.CPU],
                     schedule=schedule(wait=1, warmup=1, active=8, repeat=1)) as p:
            for i, (x, y) in enumerate(loader):
                (nn.functional.cross_entropy(model(x), y) / accum).backward()
                if (i + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
                p.step()
        p.export_chrome_trace(path)

    def accumulated_here(path):
        """Forward (less the DataLoader's spans), the optimizer over the steps holding it, the mean step (us)."""
        ev = [e for e in events_of(path) if e.get("ph") == "X"]
        steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
        fwd, opt, with_opt = 0.0, 0.0, 0
        for s in steps:
            lo, hi = s["ts"], s["ts"] + s["dur"]
            inside = [e for e in ev if e["ts"] >= lo and e["ts"] + e["dur"] <= hi]
            b0 = min(e["ts"] for e in inside if e["name"].startswith("autograd::engine::evaluate_function:"))
            zero = [e["ts"] + e["dur"] for e in inside
                    if e["name"].startswith("Optimizer.zero_grad#") and e["ts"] + e["dur"] <= b0]
            f0 = max(zero) if zero else lo
            data = sum(max(0, min(b0, e["ts"] + e["dur"]) - max(f0, e["ts"])) for e in inside
                       if e["name"].startswith("enumerate(DataLoader)"))
            fwd += b0 - f0 - data
            o = [e["dur"] for e in inside if e["name"].startswith("Optimizer.step#")]
            opt += sum(o)
            with_opt += 1 if o else 0
        return {"forward": fwd / len(steps) * 1e-6, "optimizer": opt / with_opt * 1e-6, "optimizer_steps": with_opt,
                "step": sum(s["dur"] for s in steps) / len(steps) * 1e-6, "steps": len(steps)}

    loader = os.path.join(tmp, "loader.json")
    loader_trace(loader)
    here = accumulated_here(loader)
    out_loader = os.path.join(tmp, "mlp-loader.yaml")
    r = run("models", "import-trace", loader, "--model", model_file, "--batch", str(BATCH), "-o", out_loader)
    check(r.returncode == 0, f"import-trace of the DataLoader loop: {r.stderr}")
    if r.returncode == 0:
        with open(out_loader) as f:
            m = yaml.safe_load(f)["measured"]
        check(m["steps"] == 8 and m.get("optimizer_steps") == 4 and m.get("grad_accum") == 2,
              f"8 micro-steps, 4 optimizer steps, grad_accum 2: {m}")
        check(m.get("optimizer") == "sgd-momentum", f"the trace's SGD with momentum: {m.get('optimizer')}")
        for phase in ("forward", "optimizer"):
            check(abs(m[phase + "_s"] - here[phase]) <= 1e-3 * here["step"],
                  f"DataLoader loop {phase}: gradsync read {m[phase + '_s']:.6g} s, the trace gives "
                  f"{here[phase]:.6g} s")
        show = run("models", "show", out_loader, "--batch", str(BATCH), "--json")
        check(show.returncode == 0, f"models show on the accumulated import: {show.stderr}")
        if show.returncode == 0:
            j = json.loads(show.stdout)
            predicted = j["forward_s"] + j["backward_s"] + j["optimizer_s"]
            check(j["grad_accum"] == 2 and j["optimizer"] == "sgd-momentum",
                  f"the imported model's runs default to the trace's: {j['grad_accum']} {j['optimizer']}")
            # Two micro-steps and one optimizer step: two of the trace's mean steps.
            check(abs(j["step_s"] / (2 * here["step"]) - 1) < 1e-4,
                  f"round trip with grad_accum 2: {j['step_s']:.6g} s, trace {2 * here['step']:.6g} s ({predicted})")
    # A model of other parameters than the trace's (a layer more: 10 trainable tensors, not 8).
    other = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.LayerNorm(1024),
                          nn.Linear(1024, 1024), nn.Linear(1024, 10))
    other_file = os.path.join(tmp, "other.yaml")
    export(other, lambda T: (torch.randn(1, 256),), "other", other_file, batch=BATCH)
    w = run("models", "import-trace", loader, "--model", other_file, "--batch", str(BATCH))
    check(w.returncode == 1 and "accumulates 8 gradients" in w.stderr
          and "has 10 trainable parameter tensors" in w.stderr,
          f"a trace of another model: exit 1 naming both counts, got {w.returncode}: {w.stderr.strip()}")
    # A trace of no events says so.
    refused("empty.json", json.dumps({"traceEvents": []}), "the trace holds 0 events")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
