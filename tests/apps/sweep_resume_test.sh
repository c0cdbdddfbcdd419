#!/usr/bin/env bash
# sweep_resume_test.sh GRADSYNC: a sweep killed (SIGKILL) halfway and resumed gives byte for byte
# the summary.csv of an uninterrupted sweep, and the resumed run redoes no finished point;
# --resume against another sweep's summary.csv is an error.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep --model gpt2 --iterations 2 --warmup 1 --vary gpus=1,2,4,8 --vary bucket_cap_mb=5,25 --jobs 1)
total=16

"$bin" "${args[@]}" --out "$tmp/full" >/dev/null 2>&1

# Start the same sweep in its own process group, kill the whole group once 3 points are saved.
setsid "$bin" "${args[@]}" --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
rows() { if [[ -f "$tmp/killed/summary.csv" ]]; then echo $(( $(wc -l <"$tmp/killed/summary.csv") - 1 )); else echo 0; fi; }
for _ in $(seq 1 1200); do
  [[ $(rows) -ge 3 ]] && break
  sleep 0.05
done
kill -KILL -- "-$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
done_before=$(rows)
if [[ $done_before -lt 3 || $done_before -ge $total ]]; then
  echo "FAIL: expected the sweep killed halfway, it had saved $done_before of $total points" >&2
  exit 1
fi
# What was saved is whole: every line has the header's number of cells, no temporary file left.
ls "$tmp/killed" | grep -v -x -e summary.csv && { echo "FAIL: files besides summary.csv after the kill" >&2; exit 1; }

"$bin" "${args[@]}" --resume --out "$tmp/killed" >/dev/null 2>"$tmp/resume.err"
grep -q "$done_before already done (--resume)" "$tmp/resume.err" || { cat "$tmp/resume.err" >&2; echo "FAIL: resume did not keep the $done_before saved points" >&2; exit 1; }
ran=$(grep -c '^sweep: .* done (point' "$tmp/resume.err" || true)
if [[ $ran -ne $(( total - done_before )) ]]; then
  echo "FAIL: the resumed sweep ran $ran points, expected $(( total - done_before ))" >&2
  exit 1
fi
cmp "$tmp/full/summary.csv" "$tmp/killed/summary.csv" || { echo "FAIL: resumed summary.csv differs" >&2; exit 1; }
cmp "$tmp/full/result.json" "$tmp/killed/result.json" || { echo "FAIL: resumed result.json differs" >&2; exit 1; }

# Another sweep in the same folder: --resume refuses, naming the file and line.
if "$bin" sweep --model gpt2 --iterations 2 --warmup 1 --vary gpus=2,4 --resume --out "$tmp/full" >/dev/null 2>"$tmp/other.err"; then
  echo "FAIL: --resume accepted another sweep's summary.csv" >&2
  exit 1
fi
grep -q "summary.csv:2: point 0 was another scenario" "$tmp/other.err" || { cat "$tmp/other.err" >&2; exit 1; }
echo "sweep killed after $done_before of $total points, resumed: same summary.csv and result.json"
