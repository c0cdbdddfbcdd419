#!/usr/bin/env python3
"""result_schema_test.py GRADSYNC: result.json against reports/result.schema.json (JSON Schema
2020-12), for compare with both strategies simulated, compare with DP skipped (two hosts), and
simulate of one strategy; a sweep's points type the scenario keys as compare does; the schema's scenario keys are every key that result.json writes, and a
document with a wrong type or a key the schema does not know is rejected; compare's advice is
written and checked."""
import copy
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
gradsync = sys.argv[1]
with open(os.path.join(ROOT, "reports", "result.schema.json")) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


runs = {
    "compare": ["compare", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--warmup", "1"],
    "compare-dp-skipped": ["compare", "--model", "resnet18", "--topology", "2x-dgx-a100-hdr", "--iterations", "2",
                           "--warmup", "1"],
    "simulate": ["simulate", "--strategy", "ddp", "--model", "gpt2", "--gpus", "2", "--batch-per-gpu", "2",
                 "--seq-len", "128", "--iterations", "2", "--warmup", "1", "--nccl", "NCCL_ALGO=ring"],
}
with tempfile.TemporaryDirectory() as tmp:
    docs = {}
    for name, args in runs.items():
        out = os.path.join(tmp, name)
        r = subprocess.run([gradsync, *args, "--out", out], capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        if r.returncode != 0:
            continue
        with open(os.path.join(out, "result.json")) as f:
            docs[name] = json.load(f)
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(docs[name])]
        check(not errors, f"{name}: result.json does not match the schema: {errors[:5]}")

    # A sweep's points type the scenario keys as compare's result.json does: a resolved
    # auto|true|false choice a boolean, gpu_spread_pct a number (they were text in sweeps).
    sweep_out = os.path.join(tmp, "sweep")
    r = subprocess.run([gradsync, "sweep", "--model", "resnet18", "--topology", "dgx-a100", "--vary", "gpus=2,4",
                        "--iterations", "2", "--warmup", "1", "--out", sweep_out], capture_output=True, text=True)
    check(r.returncode == 0, f"sweep: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0 and "compare" in docs:
        with open(os.path.join(sweep_out, "result.json")) as f:
            point = json.load(f)["points"][0]
        for key, value in docs["compare"]["scenario"].items():
            if key in point and value is not None and point[key] is not None:
                check(type(point[key]) is type(value),
                      f"sweep: point's {key} is {point[key]!r}, compare's scenario has {value!r}")
        for key in ("set_to_none", "grad_scaler", "gpu_spread_pct"):
            check(key in point and not isinstance(point[key], str), f"sweep: point's {key} is {point.get(key)!r}")

    if "compare-dp-skipped" in docs:
        # A skipped strategy's times are null, not 0 s.
        dp = [s for s in docs["compare-dp-skipped"]["strategies"] if s["strategy"] == "dp"]
        check(len(dp) == 1 and "skipped" in dp[0], "compare-dp-skipped: DP is there, marked skipped")
        check(all(dp[0][k] is None for k in ("steady_iteration_time_s", "samples_per_s", "overlap")) if dp else False,
              "compare-dp-skipped: DP's times are null")

    if "compare" in docs:
        doc = docs["compare"]
        check(set(schema["properties"]["scenario"]["properties"]) == set(doc["scenario"]),
              "the schema's scenario keys are the keys result.json writes: "
              f"{sorted(set(schema['properties']['scenario']['properties']) ^ set(doc['scenario']))}")
        # The schema rejects what it should.
        bad = copy.deepcopy(doc)
        bad["strategies"][0]["steady_iteration_time_s"] = "fast"
        check(not validator.is_valid(bad), "a time written as text is rejected")
        bad = copy.deepcopy(doc)
        bad["scenario"]["no_such_key"] = 1
        check(not validator.is_valid(bad), "an unknown scenario key is rejected")
        bad = copy.deepcopy(doc)
        del bad["strategies"][1]["gpus"]
        check(not validator.is_valid(bad), "a strategy without its per-GPU records is rejected")
        # compare writes its advice: every change with its status, the advised ones simulated.
        advice = doc.get("advice")
        check(advice is not None and advice["strategy"] == "ddp", "compare's advice starts from the faster run (DDP)")
        if advice:
            check(len(advice["changes"]) > 0, "the advice lists the changes it tried")
            for c in advice["changes"]:
                if c.get("advised"):
                    check(c["status"] == "ok" and c["gain_frac"] >= advice["min_gain_frac"],
                          f"an advised change ran and gains at least min_gain_frac: {c}")
            bad = copy.deepcopy(doc)
            bad["advice"]["changes"][0]["status"] = "maybe"
            check(not validator.is_valid(bad), "an advice status outside ok, oom, failed, budget is rejected")
        conf = doc.get("confidence", [])
        check({c["strategy"] for c in conf} == {"dp", "ddp"}, "compare gives each strategy its confidence")
        check(all(c["cases"] == 0 or c["median_abs_error_frac"] <= c["worst_abs_error_frac"] for c in conf),
              "a class's median error is at most its worst")
    if "simulate" in docs:
        check("advice" not in docs["simulate"], "simulate gives no advice (compare and advise do)")
    if "compare-dp-skipped" in docs:
        check("skipped" in docs["compare-dp-skipped"]["strategies"][0], "DP across two hosts is recorded as skipped")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
