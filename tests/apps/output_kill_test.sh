#!/usr/bin/env bash
# output_kill_test.sh BIN: SIGKILL `gradsync compare` at many moments of its run; --out must then
# hold the previous run's files, byte for byte, or the whole new run, and nothing else; the next
# run removes what the killed one left beside --out. SIGINT and SIGTERM: the run removes its staging
# folder itself, says that --out is left as it was, and ends with the signal's status (130, 143).
set -euo pipefail
bin=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# ResNet-18: a run of about a second here (the default model's takes 2.5), so that 16 kills spread over
# it, and the signal runs after them, cost CI half a minute rather than two.
compare=("$bin" compare --model resnet18 --advice-budget 0)

snapshot() { (cd "$d/out" && find . -type f | sort | xargs sha256sum); }
complete() {  # complete GPUS: --out holds exactly one whole run of `compare --gpus GPUS`
  local want=".gradsync-run events.csv iterations.csv report.html result.json summary.csv trace-ddp.json trace-dp.json"
  [[ "$(cd "$d/out" && ls -A | sort | tr '\n' ' ' | sed 's/ $//')" == "$want" ]] || return 1
  python3 - "$d/out/result.json" "$1" <<'PY' || return 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["scenario"]["gpus"] == int(sys.argv[2]), r["scenario"]["gpus"]
for s in r["strategies"]:
    assert s["gpus_used"] == int(sys.argv[2])
PY
  for t in "$d"/out/trace-*.json; do python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$t" || return 1; done
}

"${compare[@]}" --gpus 2 --out "$d/out" >/dev/null
complete 2 || fail "the first run is not complete"
start=$(date +%s.%N)
"${compare[@]}" --gpus 4 --out "$d/timing" >/dev/null
run_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
rm -rf "$d/timing"

kept=0 replaced=0 gpus=2
for i in $(seq 1 16); do
  next=$(( gpus == 2 ? 4 : 2 ))
  before=$(snapshot)
  "${compare[@]}" --gpus "$next" --out "$d/out" >/dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v t="$run_s" -v i="$i" 'BEGIN { printf "%.3f", t * i / 14 }')"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sleep 0.2  # the simulation children see their parent gone
  if [[ "$(snapshot)" == "$before" ]]; then
    kept=$((kept + 1))
  elif complete "$next"; then
    replaced=$((replaced + 1))
    gpus=$next
  else
    ls -la "$d/out" >&2
    fail "after SIGKILL $i, --out is neither the previous run nor a whole new one"
  fi
  for e in "$d"/* "$d"/.[!.]*; do
    [[ -e $e ]] || continue
    # The staging folder, and the lock file (core/folder_lock.hpp: the kernel drops the lock with the
    # process, the file stays), of a killed run: the next run removes both.
    case "$(basename "$e")" in out|.out.gradsync-tmp-*|.out.gradsync-lock) ;; *) fail "unexpected $(basename "$e") beside --out" ;; esac
  done
done
echo "16 kills over a ${run_s}s run: --out kept the previous run $kept times, held the whole new run $replaced times"
[[ $kept -gt 0 ]] || fail "no kill landed before the swap"

# The next run removes what killed runs left beside --out, and says so when it does.
"${compare[@]}" --gpus 2 --out "$d/out" >/dev/null 2>"$d.err" || fail "the run after the kills failed"
complete 2 || fail "the run after the kills is not complete"
left=$(cd "$d" && ls -A | grep -v '^out$' || true)
[[ -z $left ]] || fail "left beside --out after a clean run: $left"
rm -f "$d.err"
echo "the next run left only --out"

# Ctrl-C (SIGINT) and SIGTERM mid-run: nothing beside --out, --out as before (said on stderr, status
# 128 + signal) or whole. `timeout` runs the command in the foreground, where SIGINT is not ignored
# as it is for a script's background job.
said=0
gpus=2  # what the run after the kills left in --out: each run below asks for the other count
for sig in INT TERM; do
  for frac in 0.3 0.5 0.7; do
    before=$(snapshot)
    next=$(( gpus == 2 ? 4 : 2 ))
    rc=0
    timeout --preserve-status -s "$sig" "$(awk -v t="$run_s" -v f="$frac" 'BEGIN { printf "%.3f", t * f }')" \
      "${compare[@]}" --gpus "$next" --out "$d/out" >/dev/null 2>"$d.err" || rc=$?
    sleep 0.2
    left=$(cd "$d" && ls -A | grep -v '^out$' || true)
    [[ -z $left ]] || fail "SIG$sig at $frac of the run left beside --out: $left"
    if [[ "$(snapshot)" == "$before" ]]; then
      [[ $sig == INT ]] && want=130 || want=143
      [[ $rc -eq $want ]] || fail "SIG$sig at $frac: status $rc, expected $want"
      # A signal before the run made its staging folder ends it as the default action does, silently.
      if grep -q "gradsync: interrupted (SIG$sig.*); --out $d/out is left as it was" "$d.err"; then
        said=$((said + 1))
      elif grep -q "interrupted" "$d.err"; then
        fail "SIG$sig at $frac: $(cat "$d.err")"
      fi
    elif complete "$next"; then
      gpus=$next
    else
      fail "after SIG$sig at $frac, --out is neither the previous run nor a whole new one"
    fi
  done
done
rm -f "$d.err"
[[ $said -gt 0 ]] || fail "no SIGINT or SIGTERM landed before the swap"
echo "SIGINT/SIGTERM at 6 moments: $said left --out as it was and said so; nothing was left beside it"

# Four runs into the same --out at once: one writer at a time (core/folder_lock.hpp). Each either
# succeeds or is refused at once (exit 2, "another gradsync is writing this folder now"), at least one
# succeeds, --out ends whole, nothing is left beside it. (Until 2026-12-02 all four wrote, the last
# swap winning; then a sweep's lock did not stop a compare either, and the sweep replaced its outputs.)
pids=()
for i in 1 2 3 4; do
  g=$(( i % 2 ? 2 : 4 ))
  "${compare[@]}" --gpus "$g" --out "$d/out" >/dev/null 2>"$d/race-$i.err" & pids+=($!)
done
won=0
for i in 1 2 3 4; do
  rc=0
  wait "${pids[$((i - 1))]}" || rc=$?
  if [[ $rc -eq 0 ]]; then
    won=$((won + 1))
  elif [[ $rc -ne 2 ]] || ! grep -q "another gradsync is writing this folder now" "$d/race-$i.err"; then
    cat "$d/race-$i.err" >&2
    fail "a run racing three others into one --out: status $rc, neither success nor the refusal"
  fi
done
rm -f "$d"/race-*.err
[[ $won -ge 1 ]] || fail "none of four racing runs wrote --out"
complete 2 || complete 4 || fail "after four racing runs --out is not one whole run"
left=$(cd "$d" && ls -A | grep -v '^out$' || true)
[[ -z $left ]] || fail "left beside --out after racing runs: $left"
echo "four runs racing into one --out: $won wrote it, the others were refused; --out holds one whole run"
