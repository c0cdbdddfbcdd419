#!/usr/bin/env bash
# sweep_failure_test.sh GRADSYNC: a sweep contains its failures. Points that cannot run (16 GPUs
# on an 8-GPU node, NCCL_ALGO=tree on one node) and a point whose simulation process is killed
# are recorded as failed, with their error, in summary.csv, result.json and report.html; the
# other points run; the exit status is 1. --resume keeps failed points; --resume --retry-failed
# runs them again.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
status_of() { python3 -c "
import csv, sys
for r in csv.DictReader(open(sys.argv[1])): print(r['point'], r['status'], r['error'])" "$1"; }

# 1. Points that cannot run, among points that can.
args=(sweep --model resnet18 --iterations 2 --warmup 1 --nccl NCCL_ALGO=tree --vary topology=dgx-a100,2x-dgx-a100-hdr
      --vary strategy=ddp --vary gpus=16,8)
set +e
"$bin" "${args[@]}" --out "$tmp/a" >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$tmp/a.err" >&2; fail "a sweep with failed points exited $rc, expected 1"; }
status_of "$tmp/a/summary.csv" >"$tmp/a.status"
grep -q "^0 failed gpus 16: topology dgx-a100 has 8 GPUs; expected 1..8$" "$tmp/a.status" || { cat "$tmp/a.status"; fail "point 0"; }
grep -q "^1 failed NCCL_ALGO=tree: allreduce over 8 GPUs on 1 node has no algorithm and protocol left" "$tmp/a.status" || fail "point 1"
grep -q "^2 ok $" "$tmp/a.status" || fail "point 2 did not run"
grep -q "^error: sweep: 3 of 4 points failed (status failed in $tmp/a/summary.csv, the others ran); first: point 0" "$tmp/a.err" \
  || { cat "$tmp/a.err"; fail "the error line"; }
grep -q '"status": "failed"' "$tmp/a/result.json" || fail "result.json has no failed point"
grep -q "gpus 16: topology dgx-a100 has 8 GPUs" "$tmp/a/result.json" || fail "result.json has no error text"
grep -Eq '^ +0 +dgx-a100 +16 +ddp +failed ' "$tmp/a.out" || { cat "$tmp/a.out"; fail "the table"; }
echo "points that cannot run are recorded as failed; the others ran; exit 1"

# 1b. A point that fails before it resolves has no GPU count: the table shows "-", not a blank.
set +e
"$bin" sweep --model resnet18 --topology pcie-4gpu --precision fp32 --iterations 2 --warmup 1 \
  --vary mixed_precision=autocast,master-weights --vary strategy=ddp --out "$tmp/g" >"$tmp/g.out" 2>"$tmp/g.err"
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$tmp/g.err" >&2; fail "a sweep with a failed point exited $rc, expected 1"; }
grep -Eq '^ +0 +autocast +ddp +ok +4 ' "$tmp/g.out" || { cat "$tmp/g.out"; fail "the point that ran"; }
grep -Eq '^ +1 +master-weights +ddp +failed +- +- ' "$tmp/g.out" || { cat "$tmp/g.out"; fail "the failed point's gpus"; }
echo "a failed point's unresolved GPU count shows as -"

# 2. A simulation process killed mid-sweep: that point fails, the later ones run.
# 20 iterations: each point's process lives about 0.7 s here (2 iterations lived 50 ms, and a fast
# machine finished the whole sweep between two looks for a process to kill).
args=(sweep --model gpt2 --iterations 20 --warmup 1 --vary strategy=ddp --vary gpus=2,4,8 --vary bucket_cap_mb=5,25 --jobs 1)
"$bin" "${args[@]}" --out "$tmp/b" >/dev/null 2>"$tmp/b.err" &
pid=$!
# Kill the first simulation process seen in the middle of its work. A process is stopped first and
# killed only if it stopped: one that has already called _exit (or is a zombie awaiting its
# reaping) cannot stop, would take a kill and still report exit 0; it is left, and the next taken.
killed=""
for _ in $(seq 1 2000); do
  for victim in $(pgrep --runstates R,S,D -P "$pid" || true); do
    kill -STOP "$victim" 2>/dev/null || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [[ $(ps -o state= -p "$victim" 2>/dev/null) == T* ]] && break
      sleep 0.01
    done
    if [[ $(ps -o state= -p "$victim" 2>/dev/null) == T* ]] && kill -KILL "$victim" 2>/dev/null; then
      killed=$victim
      break 2
    fi
    kill -CONT "$victim" 2>/dev/null || true  # not stopped (exiting): let it be
  done
  sleep 0.005
done
[[ -n $killed ]] || fail "no simulation process appeared"
set +e
wait "$pid"
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$tmp/b.err" >&2; fail "a sweep with a killed simulation exited $rc, expected 1"; }
status_of "$tmp/b/summary.csv" >"$tmp/b.status"
[[ $(grep -c " failed sim: .* process died (signal 9)$" "$tmp/b.status") == 1 ]] || { cat "$tmp/b.status"; fail "the killed point"; }
[[ $(grep -c " ok $" "$tmp/b.status") == 5 ]] || { cat "$tmp/b.status"; fail "the other 5 points did not all run"; }
echo "a killed simulation fails its point only"

# 3. --resume keeps the failed point; --resume --retry-failed runs it again.
set +e
"$bin" "${args[@]}" --out "$tmp/b" --resume >/dev/null 2>"$tmp/r.err"
rc=$?
set -e
[[ $rc == 1 ]] || fail "--resume with a failed point exited $rc, expected 1"
grep -q ", 6 already done (--resume)" "$tmp/r.err" || { cat "$tmp/r.err"; fail "--resume ran points again"; }
"$bin" "${args[@]}" --out "$tmp/b" --resume --retry-failed >/dev/null 2>"$tmp/rf.err" || { cat "$tmp/rf.err"; fail "--retry-failed"; }
grep -q ", 5 already done (--resume)" "$tmp/rf.err" || { cat "$tmp/rf.err"; fail "--retry-failed did not run just the failed point"; }
[[ $(status_of "$tmp/b/summary.csv" | grep -c " ok $") == 6 ]] || fail "after --retry-failed not every point is ok"
echo "--resume keeps failed points; --retry-failed runs them again"

# 4. A point that does not fit the GPU's memory ran: status oom, no samples/s in the table, a note
# naming it; it is a result, so the sweep exits 0.
"$bin" sweep --model gpt2 --gpus 2 --vary batch_per_gpu=8,64 --vary strategy=ddp --iterations 2 --warmup 1 --jobs 1 \
  --out "$tmp/o" >"$tmp/o.out" 2>"$tmp/o.err" || { cat "$tmp/o.err" >&2; fail "a sweep with an oom point did not exit 0"; }
grep -Eq '^ +1 +64 +ddp +oom +2 +[0-9.]+ +[0-9.]+ +- +-$' "$tmp/o.out" || { cat "$tmp/o.out"; fail "the oom row shows a throughput"; }
grep -Eq '^ +0 +8 +ddp +ok +2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +-$' "$tmp/o.out" || { cat "$tmp/o.out"; fail "the point that fits"; }
grep -q "^# point 1: does not fit the GPU's memory (status oom): no samples/s is shown; the times are what it would take if it fit (summary.csv keeps them)$" "$tmp/o.out" \
  || { cat "$tmp/o.out"; fail "the oom note"; }
[[ $(status_of "$tmp/o/summary.csv" | grep -c "^1 oom") == 1 ]] || fail "summary.csv's oom status"
echo "an oom point shows no throughput, is named, and the sweep exits 0"

# 4b. DataParallel asked to span two hosts is skipped (one process, one machine): a row with status
# skipped, a note naming the point and why, and the sweep exits 0 (it is PyTorch's limit, not a failure).
"$bin" sweep --topology 2x-dgx-a100-hdr --model resnet18 --vary gpus=8,16 --vary strategy=dp --iterations 2 \
  --warmup 1 --jobs 1 --out "$tmp/s" >"$tmp/s.out" 2>"$tmp/s.err" || { cat "$tmp/s.err" >&2; fail "a sweep with a skipped point did not exit 0"; }
grep -Eq '^ +1 +16 +dp +skipped +- +- +- +-$' "$tmp/s.out" || { cat "$tmp/s.out"; fail "the skipped row"; }
grep -q "^# point 1 skipped (status skipped, not simulated): DataParallel runs in one process on one machine; GPUs 0..15 of 2x-dgx-a100-hdr span 2 hosts" "$tmp/s.out" \
  || { cat "$tmp/s.out"; fail "the skipped note"; }
[[ $(status_of "$tmp/s/summary.csv" | grep -c "^1 skipped") == 1 ]] || fail "summary.csv's skipped status"
echo "a DataParallel point across hosts is skipped, named with its reason, and the sweep exits 0"

# 5. DDP's settings with DataParallel points: said once, as compare says it; not said without dp points.
"$bin" sweep --model resnet18 --vary gpus=1 --bucket-cap-mb 5 --iterations 2 --warmup 1 --out "$tmp/n" \
  >/dev/null 2>"$tmp/n.err" || { cat "$tmp/n.err" >&2; fail "the sweep with a DDP setting failed"; }
grep -q "^note: bucket_cap_mb 5 applies to DDP only: the sweep's dp points run without it$" "$tmp/n.err" \
  || { cat "$tmp/n.err"; fail "no note for bucket_cap_mb with dp points"; }
"$bin" sweep --model resnet18 --vary gpus=1 --vary strategy=ddp --bucket-cap-mb 5 --iterations 2 --warmup 1 \
  --out "$tmp/n2" >/dev/null 2>"$tmp/n2.err" || { cat "$tmp/n2.err" >&2; fail "the DDP-only sweep failed"; }
if grep -q "applies to DDP only" "$tmp/n2.err"; then fail "a note for a sweep without dp points"; fi
echo "a DDP setting beside dp points is noted once"

# 5b. A DDP setting varied beside dp points, and compile true beside them (their replica threads run
# eager): each said once; two sweeps into one --out at once: the second is refused.
"$bin" sweep --model resnet18 --vary gpus=2 --vary bucket_cap_mb=1,25 --vary compile=false,true --iterations 2 \
  --warmup 1 --out "$tmp/v" >/dev/null 2>"$tmp/v.err" || { cat "$tmp/v.err" >&2; fail "the varied sweep failed"; }
grep -q "^note: --vary bucket_cap_mb: a DDP setting; the sweep's dp points are alike across it$" "$tmp/v.err" \
  || { cat "$tmp/v.err"; fail "no note for a varied DDP setting"; }
grep -q "^note: compile true: the sweep's dp points on more than one GPU run eager" "$tmp/v.err" \
  || { cat "$tmp/v.err"; fail "no note for compile under DataParallel"; }
python3 -c "
import fcntl, subprocess, sys
with open('$tmp/.locked.gradsync-lock', 'w') as f:
    fcntl.flock(f, fcntl.LOCK_EX)  # as a running sweep into $tmp/locked holds it
    r = subprocess.run(['$bin', 'sweep', '--model', 'resnet18', '--vary', 'gpus=1', '--out', '$tmp/locked'],
                       capture_output=True, text=True)
    sys.exit(0 if r.returncode == 2 and 'another gradsync is writing this folder now' in r.stderr else 1)
" || fail "a sweep into a folder another sweep holds was not refused"
[[ ! -e "$tmp/locked" ]] || fail "the refused sweep wrote its --out"
# An --out whose parent folders do not exist yet: they are made (the lock beside --out failed there).
"$bin" sweep --model resnet18 --vary gpus=1 --iterations 2 --warmup 1 --out "$tmp/new/deep/s" >/dev/null 2>"$tmp/nd.err" \
  || { cat "$tmp/nd.err" >&2; fail "a sweep into a new nested --out failed"; }
[[ -f "$tmp/new/deep/s/summary.csv" ]] || fail "the nested --out has no summary.csv"
echo "a varied DDP setting and compile beside dp points are noted; a second sweep into a held --out is refused"

# 6. --vary iterations without --warmup: each point takes the default warmup for its iterations
# (3, or iterations - 1 when fewer), as compare does; points of 1-3 iterations failed on warmup 3.
warm_of() { python3 -c "
import csv, sys
for r in csv.DictReader(open(sys.argv[1])): print(r['iterations'], r['warmup'], r['status'])" "$1"; }
"$bin" sweep --model resnet18 --gpus 2 --vary strategy=ddp --vary iterations=1,3,6 --out "$tmp/w" \
  >/dev/null 2>"$tmp/w.err" || { cat "$tmp/w.err" >&2; fail "a sweep over iterations failed"; }
[[ "$(warm_of "$tmp/w/summary.csv" | tr '\n' ';')" == "1 0 ok;3 2 ok;6 3 ok;" ]] \
  || { warm_of "$tmp/w/summary.csv"; fail "warmup per point"; }
# A warmup given by a flag holds for every point; a point it leaves no steady iteration fails.
set +e
"$bin" sweep --model resnet18 --gpus 2 --vary strategy=ddp --vary iterations=2,6 --warmup 3 --out "$tmp/w2" \
  >/dev/null 2>"$tmp/w2.err"
set -e
[[ "$(warm_of "$tmp/w2/summary.csv" | tr '\n' ';')" == "2 3 failed;6 3 ok;" ]] \
  || { warm_of "$tmp/w2/summary.csv"; fail "an explicit warmup"; }
echo "warmup follows each point's iterations unless given"

# 7. PowerSGD whose start_powerSGD_iter no simulated iteration reaches: the sweep says which points
# run its plain allreduce, as simulate says of one run.
"$bin" sweep --model resnet18 --gpus 2 --vary strategy=ddp --vary comm_hook=none,powersgd,powersgd:start_iter=2 \
  --iterations 3 --out "$tmp/p" >/dev/null 2>"$tmp/p.err" || { cat "$tmp/p.err" >&2; fail "the PowerSGD sweep failed"; }
grep -q "^note: point 1: PowerSGD compresses from iteration 1001 " "$tmp/p.err" || { cat "$tmp/p.err"; fail "no PowerSGD note"; }
if grep -q "^note: points" "$tmp/p.err"; then cat "$tmp/p.err"; fail "a note for a point that compresses"; fi
echo "PowerSGD points that never compress are named"
