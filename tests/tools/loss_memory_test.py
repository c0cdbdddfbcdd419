#!/usr/bin/env python3
"""loss_memory_test.py GRADSYNC: the memory a training step holds beyond its saved activations,
against real PyTorch.

GPT-2 from the zoo's reference code (tests/tools/zoo_modules.py) runs one training forward and
backward on the CPU in fp32 under torch.profiler's memory profiling, which sees every allocation
and free of the CPU allocator; live bytes are followed op by op from the start of forward. At
the end of forward they are the activations autograd keeps (and the returned loss), which
`gradsync models show --json` must give within 5%; inside cross_entropy (forward's peak) and
after nll_loss_backward (backward's first op) they stand one float32 tensor over the output above
that (B x T x vocabulary x 4 bytes: log_softmax's input, then the loss's gradient), which
gradsync's memory.loss must give within 5%. (Later in backward the gradients, which gradsync counts
apart, take the freed activations' place.) Exits 77
(ctest: skipped) when torch cannot be imported.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_support  # noqa: E402,F401  (exits 77 without torch; tools/ on sys.path)
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402
import zoo_modules  # noqa: E402

gradsync = sys.argv[1]
NAME, BATCH, T = "gpt2", 2, 128
TOLERANCE = 0.05

model, run = zoo_modules.build(NAME, BATCH, T)
run(model).backward()  # a first step outside the profile: gradients and lazy state exist before it
model.zero_grad(set_to_none=True)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    with record_function("MARK_forward"):
        pass
    loss = run(model)
    with record_function("MARK_backward"):
        pass
    loss.backward()
    with record_function("MARK_end"):
        pass
live, at, forward_peak, after_nll = 0, {}, 0, None
phase = None
for e in sorted(prof.events(), key=lambda e: e.time_range.start):
    if e.name.startswith("MARK_"):
        phase = e.name
        at[phase] = live
        continue
    live += e.self_cpu_memory_usage
    if phase == "MARK_forward":
        forward_peak = max(forward_peak, live)
    if phase == "MARK_backward" and after_nll is None and e.name == "aten::nll_loss_backward":
        after_nll = live  # backward's first op: the loss's gradient over the output
kept = at["MARK_backward"] - at["MARK_forward"]
cmd = [gradsync, "models", "show", NAME, "--json", "--precision", "fp32", "--batch", str(BATCH), "--seq-len", str(T)]
mem = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory"]
torch_support.check_bytes((("kept at the end of forward", kept, mem["activations"]),
                           ("cross_entropy's peak beyond", forward_peak - at["MARK_backward"], mem["loss"]),
                           ("nll_loss_backward beyond", after_nll - at["MARK_backward"], mem["loss"])),
                          TOLERANCE, "quantity")
print(f"{NAME} at batch {BATCH}, T {T}, fp32: all three within {100 * TOLERANCE:.0f}% of PyTorch")
