#!/usr/bin/env bash
# sweep_resume_test.sh GRADSYNC: a sweep killed (SIGKILL) halfway and resumed gives byte for byte
# the summary.csv of an uninterrupted sweep, and the resumed run redoes no finished point; while it
# runs, and after a kill or an interruption, --out is as it was (its points are saved beside it, in
# .NAME.gradsync-sweep, until the finished sweep is swapped in);
# --resume against another sweep's summary.csv is an error. DP points that differ only in DDP's
# bucket cap share one simulation, and their results equal a DP simulation of their own.
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep --model gpt2 --iterations 4 --warmup 1 --vary gpus=1,2,4,8 --vary bucket_cap_mb=5,25 --jobs 1)
total=16

"$bin" "${args[@]}" --out "$tmp/full" >"$tmp/full.out" 2>"$tmp/full.err"
# The table says what its efficiency is measured against (here the one-GPU points).
grep -q "^# efficiency: samples/s per GPU against the point with the fewest GPUs" "$tmp/full.out" \
  || { cat "$tmp/full.out" >&2; echo "FAIL: no efficiency baseline line" >&2; exit 1; }
# 16 points: 8 DDP simulations, and the 8 DP points in 4 simulations (bucket_cap_mb cannot change DP).
grep -q "^sweep: 16 points, 12 simulations" "$tmp/full.err" || { cat "$tmp/full.err" >&2; echo "FAIL: DP points not shared" >&2; exit 1; }
# The shared DP row for gpus=2, bucket_cap_mb=25 (point 6) holds what a DP simulation of its own gives
# (DataParallel takes no bucket cap: `simulate --strategy dp` refuses one).
"$bin" simulate --strategy dp --model gpt2 --iterations 4 --warmup 1 --gpus 2 --out "$tmp/one" >/dev/null
steady() { awk -F, -v p="$2" 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "steady_iteration_time_s") c = i } NR > 1 && $1 == p { print $c }' "$1"; }
[[ "$(steady "$tmp/full/summary.csv" 6)" == "$(steady "$tmp/one/summary.csv" 0)" && -n "$(steady "$tmp/one/summary.csv" 0)" ]] || {
  echo "FAIL: shared DP point 6 ($(steady "$tmp/full/summary.csv" 6)) differs from its own simulation ($(steady "$tmp/one/summary.csv" 0))" >&2; exit 1; }

# Start the same sweep in its own process group, kill the whole group once 3 points are saved. Its
# --out holds an earlier finished sweep (another grid), which must come through the kill untouched.
"$bin" sweep --model resnet18 --iterations 2 --warmup 1 --vary gpus=1 --out "$tmp/killed" >/dev/null 2>&1
earlier=$(cd "$tmp/killed" && find . -type f | sort | xargs sha256sum)
setsid "$bin" "${args[@]}" --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
work="$tmp/.killed.gradsync-sweep"
rows() { if [[ -f "$work/summary.csv" ]]; then echo $(( $(wc -l <"$work/summary.csv") - 1 )); else echo 0; fi; }
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
# What was saved is whole: every line has the header's number of cells, no temporary file left; --out
# is the earlier sweep, byte for byte.
ls "$work" | grep -v -x -e summary.csv && { echo "FAIL: files besides summary.csv after the kill" >&2; exit 1; }
[[ "$(cd "$tmp/killed" && find . -type f | sort | xargs sha256sum)" == "$earlier" ]] ||
  { echo "FAIL: the killed sweep changed --out" >&2; exit 1; }

"$bin" "${args[@]}" --resume --out "$tmp/killed" >/dev/null 2>"$tmp/resume.err"
grep -q ", $done_before already done (--resume)" "$tmp/resume.err" || { cat "$tmp/resume.err" >&2; echo "FAIL: resume did not keep the $done_before saved points" >&2; exit 1; }
# Points done now: one per "(point N: ...)" line, 1 + K per "(point N: ..., with points A B ... alike)" (K indices); with the
# points filled from a saved point of the same simulation they make up the rest.
filled=$(sed -n 's/.*, \([0-9]*\) filled from a finished point.*/\1/p' "$tmp/resume.err"); filled=${filled:-0}
ran=$(awk '/^sweep: [0-9]+\/[0-9]+ done \(point [0-9]+:/ {
  n = 1
  if (match($0, /, with points? [0-9 ]+ alike/)) {
    s = substr($0, RSTART, RLENGTH); sub(/, with points? /, "", s); sub(/ alike/, "", s); n += split(s, a, " ")
  }
  t += n
} END { print t + 0 }' "$tmp/resume.err")
if [[ $(( ran + filled )) -ne $(( total - done_before )) ]]; then
  cat "$tmp/resume.err" >&2
  echo "FAIL: the resumed sweep did $ran + $filled points, expected $(( total - done_before ))" >&2
  exit 1
fi
cmp "$tmp/full/summary.csv" "$tmp/killed/summary.csv" || { echo "FAIL: resumed summary.csv differs" >&2; exit 1; }
cmp "$tmp/full/result.json" "$tmp/killed/result.json" || { echo "FAIL: resumed result.json differs" >&2; exit 1; }
[[ ! -e $work ]] || { echo "FAIL: the finished sweep left $work" >&2; exit 1; }

# SIGTERM (as Ctrl-C's SIGINT, which a script's background job ignores): the running children are
# stopped, no point is recorded as failed, and the sweep says how to finish, with the shell's status
# for the signal (128 + 15); --resume then finishes it as an uninterrupted sweep would.
setsid "$bin" "${args[@]}" --out "$tmp/term" >/dev/null 2>"$tmp/term.err" &
pid=$!
tw="$tmp/.term.gradsync-sweep"
for _ in $(seq 1 1200); do
  [[ -f "$tw/summary.csv" && $(( $(wc -l <"$tw/summary.csv") - 1 )) -ge 3 ]] && break
  sleep 0.05
done
kill -TERM -- "-$pid" 2>/dev/null || true
rc=0; wait "$pid" || rc=$?
if [[ $rc != 0 ]]; then
  saved=$(( $(wc -l <"$tw/summary.csv") - 1 ))
  [[ $rc == 143 ]] || { cat "$tmp/term.err" >&2; echo "FAIL: SIGTERM gave exit $rc" >&2; exit 1; }
  grep -q "^error: sweep interrupted (SIGTERM) with $saved of $total points done; the finished ones are saved in $tw/, --out $tmp/term is left as it was; the same command with --resume simulates the other $(( total - saved ))$" "$tmp/term.err" ||
    { cat "$tmp/term.err" >&2; echo "FAIL: no interruption message" >&2; exit 1; }
  [[ ! -e "$tmp/term" ]] || { echo "FAIL: the interrupted sweep made --out" >&2; exit 1; }
  grep -q ',failed,' "$tw/summary.csv" && { echo "FAIL: an interrupted point was recorded as failed" >&2; exit 1; }
  "$bin" "${args[@]}" --resume --out "$tmp/term" >/dev/null 2>/dev/null
  cmp "$tmp/full/summary.csv" "$tmp/term/summary.csv" || { echo "FAIL: summary.csv resumed after SIGTERM differs" >&2; exit 1; }
fi

# Another sweep in the same folder: --resume refuses, naming the file and line.
if "$bin" sweep --model gpt2 --iterations 2 --warmup 1 --vary gpus=2,4 --resume --out "$tmp/full" >/dev/null 2>"$tmp/other.err"; then
  echo "FAIL: --resume accepted another sweep's summary.csv" >&2
  exit 1
fi
grep -q "summary.csv:2: point 0 was another scenario than this sweep's, and no point of this sweep has its settings: .*gpus 1: this sweep's are 2, 4" "$tmp/other.err" ||
  { cat "$tmp/other.err" >&2; exit 1; }
# The same points with the --vary lists reordered: every saved row is found by its settings, none
# is run again, and summary.csv is the reordered sweep's, byte for byte.
rev=(sweep --model gpt2 --iterations 4 --warmup 1 --vary bucket_cap_mb=25,5 --vary gpus=8,4,2,1 --jobs 1)
"$bin" "${rev[@]}" --out "$tmp/rev" >/dev/null 2>/dev/null
cp -r "$tmp/full" "$tmp/reordered"
"$bin" "${rev[@]}" --resume --out "$tmp/reordered" >/dev/null 2>"$tmp/reordered.err"
grep -q ", $total already done (--resume)" "$tmp/reordered.err" || { cat "$tmp/reordered.err" >&2; echo "FAIL: reordered --vary lists ran points again" >&2; exit 1; }
cmp "$tmp/rev/summary.csv" "$tmp/reordered/summary.csv" || { echo "FAIL: reordered resume's summary.csv differs" >&2; exit 1; }
# A status edited into the saved file: refused, not copied into result.json and the report.
sed -i '2s/,ok,/,okk,/' "$tmp/killed/summary.csv"
grep -q ",okk," "$tmp/killed/summary.csv" || { echo "FAIL: the test could not edit a status" >&2; exit 1; }
if "$bin" "${args[@]}" --resume --out "$tmp/killed" >/dev/null 2>"$tmp/edited.err"; then
  echo "FAIL: --resume accepted a status gradsync never writes" >&2
  exit 1
fi
grep -q 'summary.csv:2: status "okk"; expected ok, oom, skipped or failed' "$tmp/edited.err" || { cat "$tmp/edited.err" >&2; exit 1; }
# A number edited into a result cell (nan, 1e999, text): named with its file, line and column.
sed -i '2s/,okk,/,ok,/' "$tmp/killed/summary.csv"
col=$(awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "samples_per_s") print i }' "$tmp/killed/summary.csv")
for bad in nan 1e999 abc; do
  awk -F, -v OFS=, -v c="$col" -v b="$bad" 'NR==2 { $c = b } { print }' "$tmp/full/summary.csv" >"$tmp/killed/summary.csv"
  if "$bin" "${args[@]}" --resume --out "$tmp/killed" >/dev/null 2>"$tmp/edited.err"; then
    echo "FAIL: --resume accepted samples_per_s $bad" >&2
    exit 1
  fi
  grep -q "summary.csv:2: column samples_per_s: \"$bad\" is not a finite number value (the file was edited?)" "$tmp/edited.err" ||
    { cat "$tmp/edited.err" >&2; exit 1; }
done
# A folder another command wrote (compare): no sweep to continue, said as such, left as it was.
mkdir -p "$tmp/compare"
printf '{"schema_version": 2, "command": "compare"}\n' >"$tmp/compare/result.json"
cp "$tmp/full/summary.csv" "$tmp/compare/summary.csv"
if "$bin" "${args[@]}" --resume --out "$tmp/compare" >/dev/null 2>"$tmp/compare.err"; then
  echo "FAIL: --resume continued a compare folder" >&2
  exit 1
fi
grep -q "the folder holds a \`gradsync compare\` run (its result.json), not a sweep" "$tmp/compare.err" ||
  { cat "$tmp/compare.err" >&2; exit 1; }
cmp -s "$tmp/full/summary.csv" "$tmp/compare/summary.csv" || { echo "FAIL: the compare folder changed" >&2; exit 1; }
# A saved point that failed holds what was asked for (empty and "auto" cells): a sweep that no
# longer has it names the setting that differs, not the defaults the failed point never resolved.
small=(sweep --model resnet18 --topology pcie-4gpu --iterations 2 --warmup 1 --jobs 1)
"$bin" "${small[@]}" --vary gpus=1,5 --out "$tmp/failed" >/dev/null 2>&1 || true  # exits 1: a point failed
if "$bin" "${small[@]}" --vary gpus=1,3 --resume --out "$tmp/failed" >/dev/null 2>"$tmp/failed.err"; then
  echo "FAIL: --resume accepted a sweep without the saved gpus=5 point" >&2
  exit 1
fi
grep -q "settings: gpus 5: this sweep's are 1, 3; start over" "$tmp/failed.err" ||
  { cat "$tmp/failed.err" >&2; echo "FAIL: a failed point's unresolved cells were listed as differences" >&2; exit 1; }
# A cell the other sweep's model has no use for (seq_len of a conv net) is named "(none)", not left blank.
"$bin" sweep --model nanogpt --batch-per-gpu 1 --seq-len 64 --vary strategy=ddp --vary gpus=1 --iterations 2 --warmup 1 \
  --out "$tmp/seq" >/dev/null 2>&1 || { echo "FAIL: the nanogpt sweep failed" >&2; exit 1; }
if "$bin" sweep --model resnet18 --vary strategy=ddp --vary gpus=1 --iterations 2 --warmup 1 --resume --out "$tmp/seq" \
  >/dev/null 2>"$tmp/seq.err"; then
  echo "FAIL: --resume accepted another model's sweep" >&2
  exit 1
fi
grep -q "seq_len 64: this sweep's is (none)" "$tmp/seq.err" ||
  { cat "$tmp/seq.err" >&2; echo "FAIL: an empty cell was not named (none)" >&2; exit 1; }
# A model file edited behind the same path: --resume refuses it, naming the file, rather than mixing
# the old file's points with the new one's.
mkdir -p "$tmp/mfile"
cp "$root/models/zoo/resnet18.yaml" "$tmp/mfile/m.yaml"
edited=(sweep --model "$tmp/mfile/m.yaml" --vary strategy=ddp --iterations 2 --warmup 1 --jobs 1)
"$bin" "${edited[@]}" --vary gpus=1,2 --out "$tmp/edited" >/dev/null 2>&1 || { echo "FAIL: the file sweep failed" >&2; exit 1; }
sed -i 's/^  batch: 32$/  batch: 16/' "$tmp/mfile/m.yaml"  # a valid edit: another default batch
if "$bin" "${edited[@]}" --vary gpus=1,2,4 --resume --out "$tmp/edited" >/dev/null 2>"$tmp/edited.err"; then
  echo "FAIL: --resume took points simulated with another version of the model file" >&2
  exit 1
fi
grep -q -- "--resume: $tmp/mfile/m.yaml changed since the sweep's points were simulated" "$tmp/edited.err" ||
  { cat "$tmp/edited.err" >&2; echo "FAIL: the edited file was not named" >&2; exit 1; }
echo "sweep killed after $done_before of $total points, resumed: same summary.csv and result.json"
