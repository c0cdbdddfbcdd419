#!/usr/bin/env python3
"""scale_outputs_test.py GRADSYNC: a 1,024-GPU run's default outputs (issue "Scale II"). GPT-2 on a
generated 128-node DGX H100 fat-tree, 2 iterations: the files are the six default ones with the
trace and events gzipped, together under 20 MB; the trace is a well-formed Chrome trace (complete
events with microsecond times on one process per traced GPU and one thread per stream, metadata
naming them) holding exactly the events.csv rows, of the traced ranks only (node 0, the first GPU
of every other node, the slowest ranks); result.json matches its schema and covers all 1,024 GPUs;
the report's timeline columns are whole."""
import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
gradsync = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    topo = os.path.join(tmp, "ft128.dot")
    subprocess.run([gradsync, "topo", "generate", "fat-tree", "--node", "dgx-h100", "--nodes", "128", "--out", topo],
                   check=True, capture_output=True)
    out = os.path.join(tmp, "out")
    r = subprocess.run([gradsync, "simulate", "--strategy", "ddp", "--model", "gpt2", "--topology", topo,
                        "--iterations", "2", "--warmup", "1", "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(1)
    files = sorted(f for f in os.listdir(out) if not f.startswith("."))
    check(files == ["events.csv.gz", "iterations.csv", "report.html", "result.json", "summary.csv",
                    "trace-ddp.json.gz"], f"the default files: {files}")
    total = sum(os.path.getsize(os.path.join(out, f)) for f in files)
    print(f"1,024 GPUs: {len(files)} files, {total / 1e6:.1f} MB")
    check(total < 20e6, f"the outputs take {total} bytes, not under 20 MB")
    check("trace-ddp.json.gz" in r.stdout and "events.csv.gz" in r.stdout, "stdout names the files written")

    with gzip.open(os.path.join(out, "events.csv.gz"), "rt", newline="") as f:
        rows = list(csv.DictReader(f))
    ranks = sorted({int(row["rank"]) for row in rows})
    for g in list(range(8)) + list(range(8, 1024, 8)):
        check(g in ranks, f"rank {g} is not traced")
    check(len(ranks) < 160, f"{len(ranks)} ranks traced: more than node 0, a GPU per node and the slowest")

    with gzip.open(os.path.join(out, "trace-ddp.json.gz"), "rt") as f:
        trace = json.load(f)
    check(trace.get("displayTimeUnit") == "ms", "displayTimeUnit")
    events = trace["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    meta = [e for e in events if e.get("ph") == "M"]
    check(len(complete) + len(meta) == len(events), "every event is complete (X) or metadata (M)")
    check(len(complete) == len(rows), f"{len(complete)} trace events, {len(rows)} events.csv rows")
    bad = [e for e in complete
           if not (isinstance(e.get("name"), str) and isinstance(e.get("cat"), str)
                   and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))
                   and e["dur"] >= 0 and e["ts"] >= 0 and e.get("pid") in ranks and e.get("tid") in (0, 1, 2, 3)
                   and isinstance(e.get("args", {}).get("iteration"), int))]
    check(not bad, f"{len(bad)} malformed complete events, the first: {bad[:1]}")
    named = {e["pid"] for e in meta if e["name"] == "process_name"}
    check(named == set(ranks), "one named process per traced GPU")
    check(all(e["args"]["name"] == f"GPU {e['pid']}" for e in meta if e["name"] == "process_name"), "process names")
    streams = {e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    check(streams == {"compute", "comm", "copy", "host"}, f"thread names: {streams}")
    # The same events as events.csv, in microseconds.
    first = rows[0]
    match = [e for e in complete if e["name"] == first["name"] and e["pid"] == int(first["rank"])]
    check(match and abs(match[0]["ts"] - float(first["start_s"]) * 1e6) < 1e-3, "trace times are events.csv's in us")

    with open(os.path.join(ROOT, "reports", "result.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    with open(os.path.join(out, "result.json")) as f:
        doc = json.load(f)
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]
    check(not errors, f"result.json does not match the schema: {errors[:3]}")
    check(len(doc["strategies"][0]["gpus"]) == 1024, "result.json covers every GPU")

    with open(os.path.join(out, "report.html")) as f:
        page = f.read()
    data = json.loads(re.search(r'id="gradsync-data">(.*?)</script>', page, re.S).group(1))
    t = data["strategies"][0]["timeline"]
    n = len(t["rank"])
    check(n > 0 and all(len(t[c]) == n for c in ("lane", "name", "kind", "start_ms", "end_ms", "bytes", "bucket")),
          "the report's timeline columns have one entry per event")
    check(max(t["name"]) < len(t["names"]) and max(t["kind"]) < len(t["kinds"]), "timeline indices name entries")
    check(set(t["rank"]) <= set(ranks), "the timeline draws traced ranks only")

if failures:
    sys.exit(1)
print("a 1,024-GPU run's default outputs: well formed, complete summaries, under 20 MB")
