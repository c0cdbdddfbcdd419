#!/usr/bin/env bash
# real_cpu_test.sh GRADSYNC CASE: real execution on the CPU backend (MPI + OpenBLAS), end to end.
# Cases: mpi2, mpi4 (mpirun -np N bench: DDP completes, mode real, the trace's event names are
# the simulation's), local (DP and DDP as threads), calibrate (mpirun -np 2 calibrate, then
# simulate --calibration and validate), stall and exit (a rank that stops or leaves: an error
# naming the collective, not a hang), errors (flags that cannot work). Skipped (77) without
# mpirun, except when CI is set.
set -euo pipefail
bin=$1
case_=$2
if ! command -v mpirun >/dev/null; then
  [[ -n "${CI:-}" ]] && { echo "FAIL: mpirun not found (openmpi-bin)"; exit 1; }
  echo "SKIP: mpirun not found (Debian's openmpi-bin, scripts/setup)"; exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"  # Open MPI keeps its allocations to the end
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small=(--model resnet18 --batch-per-gpu 1 --iterations 3 --warmup 1)
fail() { echo "FAIL: $*" >&2; exit 1; }

# names FILE: the event names of events.csv (column "name"), sorted and unique; without the
# simulator's "slowdown:" events (what compute loses beside NCCL's kernels: a real run's kernels
# are simply longer), "call:" events (the host's cost of issuing a collective: a real run makes
# the calls), "host:" events (the simulated host's work under the GIL: a real run does it) and
# "wait:" events (a collective's wait for its last member: a real run times the call whole).
names() {
  awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "name") c = i; next } { print $c }' "$1" | sort -u \
    | grep -v -e '^slowdown:' -e '^call:' -e '^host:' -e '^wait:' || true
}

same_names_as_simulation() {  # DIR GPUS STRATEGY
  "$bin" simulate --strategy "$3" "${small[@]}" --precision fp32 --gpus "$2" --out "$tmp/sim-$2-$3" >/dev/null
  diff <(names "$tmp/sim-$2-$3/events.csv" | grep -v '^dp:' || true) <(names "$1/events.csv" | grep -v '^dp:' || true) \
    || fail "real and simulated traces name different events"
  diff <(names "$tmp/sim-$2-$3/events.csv") <(names "$1/events.csv") || fail "event names differ"
}

case "$case_" in
  mpi2 | mpi4)
    n=${case_#mpi}
    mpirun -np "$n" "$bin" bench "${small[@]}" --out "$tmp/b" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "bench"; }
    grep -q "backend cpu, launcher mpirun ($n processes)" "$tmp/out" || { cat "$tmp/out"; fail "header"; }
    grep -q '^  ddp ' "$tmp/out" || fail "no ddp row"
    [[ $(grep -c '"mode": "real"' "$tmp/b/result.json") == 1 ]] || fail "result.json is not mode real"
    [[ -f "$tmp/b/trace-ddp.json" && -f "$tmp/b/report.html" ]] || fail "missing outputs"
    # Every rank's events reached rank 0: one iteration:3 event per rank.
    [[ $(grep -c ',iteration:3,' "$tmp/b/events.csv") == "$n" ]] || fail "not every rank's trace was gathered"
    same_names_as_simulation "$tmp/b" "$n" ddp
    echo "mpirun -np $n bench: DDP ran on $n ranks, outputs mode real, event names as simulated"
    ;;
  version)
    # The real Reducer follows --pytorch-version as the simulator does: from 1.12 the first
    # iteration reduces every gradient in one bucket; before, in the planned buckets.
    first_iteration_buckets() { grep -c '^ddp,0,comm,allreduce:bucket[0-9]*,1,' "$1/events.csv"; }
    for v in 1.11 2.11; do
      "$bin" bench "${small[@]}" --launch local --world-size 2 --pytorch-version "$v" --out "$tmp/v$v" >"$tmp/out" 2>&1 ||
        { cat "$tmp/out"; fail "bench --pytorch-version $v"; }
    done
    [[ $(first_iteration_buckets "$tmp/v2.11") == 1 ]] || fail "2.11: iteration 1 is not one bucket"
    [[ $(first_iteration_buckets "$tmp/v1.11") -gt 1 ]] || fail "1.11: iteration 1 did not use the planned buckets"
    echo "--pytorch-version: the real Reducer's first iteration is one bucket from 1.12, the planned ones before"
    ;;
  local)
    "$bin" bench "${small[@]}" --launch local --world-size 2 --out "$tmp/b" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "bench"; }
    grep -q '^  dp ' "$tmp/out" && grep -q '^  ddp ' "$tmp/out" || { cat "$tmp/out"; fail "rows"; }
    grep -q "DDP is .* than DP" "$tmp/out" || fail "no comparison line"
    # Two ranks of two threads each on fewer than four cores share them, and the run says so.
    cores=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
    if ((cores < 4)); then
      grep -q "^note: 2 CPU ranks on this host's $cores core" "$tmp/out" || { cat "$tmp/out"; fail "no shared-cores note"; }
    else
      ! grep -q "CPU ranks on this host" "$tmp/out" || fail "a shared-cores note with enough cores"
    fi
    for s in dp ddp; do grep -q "^$s,1,comm," "$tmp/b/events.csv" || fail "no $s collectives on rank 1"; done
    grep -q '^dp,0,copy,dp:scatter,' "$tmp/b/events.csv" || fail "DP scatter missing"
    # Bytes per GPU as the simulation counts them: the broadcast's root only sends, the reduce's
    # only receives, the input copy from host memory comes in (gpu0_in, gpu0_out of the dp row).
    "$bin" simulate --strategy dp "${small[@]}" --gpus 2 --precision fp32 --out "$tmp/dp-sim" >"$tmp/dp-sim.out"
    gpu0_bytes() { awk '$1 == "dp" { print $(NF-6), $(NF-5), $(NF-4), $(NF-3) }' "$1"; }
    [[ -n $(gpu0_bytes "$tmp/out") && $(gpu0_bytes "$tmp/out") == $(gpu0_bytes "$tmp/dp-sim.out") ]] \
      || { grep -h '^  dp ' "$tmp/out" "$tmp/dp-sim.out"; fail "DP's GPU0 bytes differ from the simulation's"; }
    # A comm hook's kernels on NCCL's stream (the fp16 hook's decompress) move nothing between
    # devices: DDP's bytes with it are the simulation's (the collectives' only).
    "$bin" bench "${small[@]}" --launch local --world-size 2 --strategy ddp --comm-hook fp16 --out "$tmp/hook" \
      >"$tmp/hook.out" 2>&1 || { cat "$tmp/hook.out"; fail "bench with the fp16 hook"; }
    "$bin" simulate --strategy ddp "${small[@]}" --gpus 2 --precision fp32 --comm-hook fp16 --out "$tmp/hook-sim" \
      >"$tmp/hook-sim.out"
    ddp_bytes() { awk '$1 == "ddp" { print $(NF-6), $(NF-5), $(NF-4), $(NF-3) }' "$1"; }
    [[ -n $(ddp_bytes "$tmp/hook.out") && $(ddp_bytes "$tmp/hook.out") == $(ddp_bytes "$tmp/hook-sim.out") ]] \
      || { grep -h '^  ddp ' "$tmp/hook.out" "$tmp/hook-sim.out"; fail "DDP's bytes with the fp16 hook differ from the simulation's"; }
    # A run the watchdog aborts (a collective past --timeout) ends with _Exit, as c10d's: it removes
    # its staging folder first, so nothing is left beside --out. Rank 1 stalls (GRADSYNC_FAULT), so
    # the collective is past the timeout whatever the machine's speed (a 0.5 ms timeout alone let a
    # fast allreduce finish in time: a flaky test).
    rc=0; GRADSYNC_FAULT=stall:1 timeout 120 "$bin" bench "${small[@]}" --launch local --world-size 2 --strategy ddp \
      --timeout 0.5 --out "$tmp/wd" >"$tmp/wd.out" 2>&1 || rc=$?
    [[ $rc == 1 ]] && grep -q "did not complete within --timeout 0.5 s" "$tmp/wd.out" || { cat "$tmp/wd.out"; fail "the watchdog: rc $rc"; }
    left=$(cd "$tmp" && ls -A | grep -e '^\.wd\.' -e '^wd$' || true)
    [[ -z $left ]] || fail "an aborted run left $left"
    echo "--launch local --world-size 2: DP and DDP as threads, both measured"
    # A world whose parameters and gradients alone exceed the host's available memory is refused
    # before it starts (Linux would let it allocate, then kill it): 1,024 ranks of ResNet-18 (the most --world-size takes), about 100 GB.
    rc=0; "$bin" bench "${small[@]}" --launch local --world-size 1024 --out "$tmp/huge" >"$tmp/huge.out" 2>&1 || rc=$?
    [[ $rc == 1 ]] && grep -q "1024 CPU ranks in this process need at least .*, and the host has .* available; use fewer (--world-size)" "$tmp/huge.out" \
      || { cat "$tmp/huge.out"; fail "a world beyond the host's memory: rc $rc"; }
    [[ ! -e "$tmp/huge" ]] || fail "a refused bench left its output folder"
    # calibrate has no model: its refusal names its own buffers (it spoke of parameters and DDP's
    # buckets until 2026-12-02).
    rc=0; "$bin" calibrate --backend cpu --launch local --world-size 1024 --max-bytes 8 --max-flops 1e6 \
      --out "$tmp/huge.yaml" >"$tmp/hugec.out" 2>&1 || rc=$?
    [[ $rc == 1 ]] && grep -q "1024 CPU ranks in this process need at least .* (each .*: the fixed buffers a calibrating rank streams its copies and kernels through)" "$tmp/hugec.out" \
      && ! grep -q "parameters" "$tmp/hugec.out" || { cat "$tmp/hugec.out"; fail "calibrate on a world beyond the host's memory: rc $rc"; }
    # One rank: as NCCL with one rank, an allreduce has nothing to combine: each takes microseconds,
    # not the pass over its bucket or the first touch of a rebuilt bucket's memory (14 ms for
    # ResNet-18's 28 MB bucket, which a 2 ms bound tells apart even under a sanitizer).
    "$bin" bench "${small[@]}" --launch local --world-size 1 --strategy ddp --out "$tmp/one" >"$tmp/one.out" 2>&1 \
      || { cat "$tmp/one.out"; fail "bench on one rank"; }
    awk -F, '$3 == "comm" && $4 ~ /^allreduce:/ { n++; if ($10 > 0.002) { print; bad++ } } END { exit !(n > 0 && !bad) }' \
      "$tmp/one/events.csv" || fail "a one-rank allreduce took more than 2 ms"
    # Only DDP ran: the header speaks of DDP's times only.
    grep -q "^# measured 3 iterations; steady = mean of iterations 2..3; DDP times on rank 0$" "$tmp/one.out" \
      || { cat "$tmp/one.out"; fail "the header of a DDP-only bench"; }
    echo "one rank: each allreduce a no-op, as NCCL's"
    ;;
  calibrate)
    mpirun -np 2 "$bin" calibrate --max-bytes 1MiB --max-flops 1e8 --repeats 2 --out "$tmp/cal.yaml" >"$tmp/out" 2>&1 \
      || { cat "$tmp/out"; fail "calibrate"; }
    for k in allreduce broadcast reduce allgather reducescatter host_to_device peer_copy matmul conv attention memory; do
      grep -q "^  $k " "$tmp/out" || fail "calibrate printed no $k row"
    done
    grep -q 'backend: "cpu"' "$tmp/cal.yaml" && grep -q 'ranks: 2' "$tmp/cal.yaml" || fail "calibration hardware"
    # --max-bytes is measured though 8 x 4^k skips it (512 KiB, then 2 MiB): the last rows are 1 MiB.
    grep -Eq '^  allreduce +1048576 ' "$tmp/out" && grep -Eq '^  memory +1048576 ' "$tmp/out" \
      || { cat "$tmp/out"; fail "calibrate --max-bytes 1MiB did not measure 1 MiB"; }
    # Sizes between whole float32 elements are rounded down, and said; --max-flops is timed itself.
    "$bin" calibrate --backend cpu --launch local --world-size 2 --min-bytes 7 --max-bytes 4001 --max-flops 3e6 \
      --repeats 1 --out "$tmp/odd.yaml" >"$tmp/odd.out" 2>"$tmp/odd.err" || { cat "$tmp/odd.out" "$tmp/odd.err"; fail "odd sizes"; }
    grep -q "^note: allreduce sizes run 4 to 4000 B: --min-bytes 7 rounded down to 4 B and --max-bytes 4001 rounded down to 4000 B, whole float32 elements" "$tmp/odd.err" &&
      grep -Eq '^  matmul +3000000 ' "$tmp/odd.out" || { cat "$tmp/odd.out" "$tmp/odd.err"; fail "odd sizes said, --max-flops timed"; }
    # --min-bytes below one element runs one, said as rounded up (it said "rounded down" until
    # 2026-12-02); a file that is not a calibration is not replaced by one (it was, unsaid).
    printf 'model: resnet18\n' >"$tmp/scenario.yaml"
    rc=0; "$bin" calibrate --backend cpu --launch local --min-bytes 3 --max-bytes 64 --max-flops 1e6 --repeats 1 \
      --out "$tmp/scenario.yaml" >/dev/null 2>"$tmp/keep.err" || rc=$?
    [[ $rc == 2 && $(cat "$tmp/scenario.yaml") == "model: resnet18" ]] \
      && grep -q "^error: --out $tmp/scenario.yaml: a file that is not a gradsync calibration" "$tmp/keep.err" \
      || { cat "$tmp/keep.err"; fail "calibrate replaced a scenario file (rc $rc)"; }
    rc=0; "$bin" calibrate --backend cpu --launch local --out "$tmp/scenario.yaml/c.yaml" >/dev/null 2>"$tmp/nf.err" || rc=$?
    [[ $rc == 2 ]] && grep -q "^error: --out $tmp/scenario.yaml/c.yaml: $tmp/scenario.yaml is a file, not a folder$" "$tmp/nf.err" \
      || { cat "$tmp/nf.err"; fail "calibrate into a file's 'folder' (rc $rc)"; }
    "$bin" calibrate --backend cpu --launch local --min-bytes 3 --max-bytes 64 --max-flops 1e6 --repeats 1 \
      --out "$tmp/up.yaml" >/dev/null 2>"$tmp/up.err" || { cat "$tmp/up.err"; fail "calibrate --min-bytes 3"; }
    grep -q "^note: allreduce sizes run 4 to 64 B: --min-bytes 3 rounded up to 4 B, whole float32 elements" "$tmp/up.err" \
      || { cat "$tmp/up.err"; fail "--min-bytes 3 said as rounded"; }
    # 4 B steps doubling: the memory kernel's 8 B minimum made 8 B twice, and the file was refused
    # where simulate loaded it ("size 8 is not larger than the previous 8") until 2026-12-02.
    "$bin" calibrate --backend cpu --launch local --min-bytes 4 --max-bytes 64 --step-factor 2 --max-flops 1e6 \
      --repeats 1 --out "$tmp/steps.yaml" >/dev/null 2>"$tmp/steps.err" || { cat "$tmp/steps.err"; fail "calibrate 4 B steps"; }
    "$bin" simulate --strategy ddp --gpus 1 --precision fp32 --model resnet18 --batch-per-gpu 1 --iterations 2 --warmup 1 \
      --calibration "$tmp/steps.yaml" --out "$tmp/steps-sim" >/dev/null 2>"$tmp/steps-sim.err" \
      || { cat "$tmp/steps-sim.err"; fail "a calibration of 4 B steps does not load"; }
    # Every table's points are non-decreasing in time, as read_calibration takes them, so the
    # segments written beside them are the simulation's (a noisy point gave a "flat" segment
    # slower than both of its points).
    awk '/points:/ { last = 0; next } /^ *- \[[0-9.e+-]+, [0-9.e+-]+\]$/ { gsub(/[][,]/, " "); if ($3 + 0 < last) bad = 1; last = $3 + 0 }
         END { exit bad }' "$tmp/cal.yaml" || { cat "$tmp/cal.yaml"; fail "a calibration table that goes down"; }
    # Compute rows have no bus bandwidth: "-", not 0.00.
    grep -Eq '^  matmul +[0-9]+ +[0-9.]+ +[0-9.]+ +-$' "$tmp/out" || { cat "$tmp/out"; fail "a matmul row with a busbw"; }
    # One rank (no launcher): the file serves one-GPU scenarios only, and calibrate says so.
    "$bin" calibrate --backend cpu --launch local --max-bytes 64 --max-flops 1e6 --repeats 1 --out "$tmp/one.yaml" \
      >"$tmp/one.out" 2>"$tmp/one.err" || { cat "$tmp/one.out" "$tmp/one.err"; fail "calibrate on one rank"; }
    grep -q "^note: one rank: the collective tables time calls that cross no link, so this calibration serves one-GPU" \
      "$tmp/one.err" || { cat "$tmp/one.err"; fail "no note for a one-rank calibration"; }
    # Kernels far past what it timed (GEMMs up to 1e6 FLOPs, a ResNet-18 convolution is 1e8): said.
    # simulate_with STRATEGY GPUS NAME OUT: ResNet-18 simulated with $tmp/NAME.yaml; stderr in $tmp/OUT.err.
    simulate_with() {
      "$bin" simulate --strategy "$1" --gpus "$2" --precision fp32 --model resnet18 --batch-per-gpu 1 --iterations 2 \
        --warmup 1 --calibration "$tmp/$3.yaml" --out "$tmp/$4" >/dev/null 2>"$tmp/$4.err" \
        || { cat "$tmp/$4.err"; fail "simulate $1 on $2 GPUs with $3.yaml"; }
    }
    simulate_with ddp 1 one one-sim
    grep -q "^note: calibration $tmp/one.yaml timed conv up to 1e+06 FLOP, and the model's largest is .* those times are extrapolated" \
      "$tmp/one-sim.err" || { cat "$tmp/one-sim.err"; fail "no note for kernels past the calibration"; }
    # validate says the same, and of DDP's buckets past the allreduce it timed (2 ranks, 1 MiB;
    # ResNet-18's first-iteration bucket holds every gradient, 46.8 MB).
    "$bin" calibrate --backend cpu --launch local --world-size 2 --max-bytes 1MiB --max-flops 1e6 --repeats 1 \
      --out "$tmp/two.yaml" >/dev/null 2>&1 || fail "calibrate on two thread ranks"
    # validate_with NAME: validate on two thread ranks with $tmp/NAME.yaml; its stderr in $tmp/NAME-val.err.
    validate_with() {
      "$bin" validate --backend cpu --launch local --world-size 2 --strategy ddp --model resnet18 --batch-per-gpu 1 \
        --iterations 2 --warmup 1 --calibration "$tmp/$1.yaml" --out "$tmp/$1-val" >/dev/null 2>"$tmp/$1-val.err" \
        || { cat "$tmp/$1-val.err"; fail "validate with $1.yaml"; }
    }
    validate_with two
    grep -q "^note: calibration $tmp/two.yaml timed conv up to 1e+06 FLOP" "$tmp/two-val.err" &&
      grep -q "^note: calibration $tmp/two.yaml timed allreduce up to 1.05e+06 B over 2 ranks, and DDP's largest bucket is 4.68e+07 B (45x): those times are extrapolated" \
        "$tmp/two-val.err" || { cat "$tmp/two-val.err"; fail "validate's notes for what the calibration did not reach"; }
    # One GPU with a file measured over 2 ranks: its collectives have one member and take no time, said
    # (nothing was said until 2026-12-02, and validate showed them -100%).
    simulate_with ddp 1 two two-one
    grep -q "^note: calibration $tmp/two.yaml measured its collectives over 2 ranks; on one GPU they have one member and take no time$" \
      "$tmp/two-one.err" || { cat "$tmp/two-one.err"; fail "no note for one GPU with a 2-rank calibration"; }
    # DataParallel calls broadcast and reduce, no allreduce: the notes name its collectives.
    simulate_with dp 2 two two-dp
    grep -q "timed broadcast up to .* over 2 ranks, and DataParallel's largest broadcast of parameters is .*(calibrate with a larger --max-bytes)$" \
      "$tmp/two-dp.err" && grep -q "timed reduce up to .* DataParallel's largest reduce of gradients" "$tmp/two-dp.err" &&
      ! grep -q "allreduce" "$tmp/two-dp.err" || { cat "$tmp/two-dp.err"; fail "dp's notes for its collectives"; }
    grep -q "timed conv up to 1e+06 FLOP.*(calibrate with a larger --max-flops)$" "$tmp/two-dp.err" ||
      { cat "$tmp/two-dp.err"; fail "a compute note names --max-flops"; }
    # A calibration of another host: validate says which machine its simulation times.
    sed 's/^  host: .*/  host: "other-node"/' "$tmp/two.yaml" >"$tmp/other.yaml"
    validate_with other
    grep -q "^note: calibration $tmp/other.yaml was measured on host other-node (.*); this run is on host $(hostname)" \
      "$tmp/other-val.err" || { cat "$tmp/other-val.err"; fail "no note for another host's calibration"; }
    ! grep -q "was measured on host" "$tmp/two-val.err" || fail "a note for this host's own calibration"
    # A GPU calibration used by a CPU run: said too.
    sed 's/^  backend: .*/  backend: "gpu"/' "$tmp/two.yaml" >"$tmp/gpu.yaml"
    validate_with gpu
    grep -q "^note: calibration $tmp/gpu.yaml was measured with the gpu backend; this run uses the cpu backend" \
      "$tmp/gpu-val.err" || { cat "$tmp/gpu-val.err"; fail "no note for another backend's calibration"; }
    # MPI's non-blocking reduce moves one segment per progress call: a comm thread that slept
    # between MPI_Test calls made a 2-rank reduce 30-60 times an allreduce of the same size.
    # It moves half an allreduce's bytes; allow it five times the allreduce's time (noise). A
    # machine busy with other work can stretch one sweep's times (a CI run beside a build: every
    # call took milliseconds, the reduce 22 times the allreduce), so a second sweep decides.
    reduce_in_time() {
      local ar rd
      ar=$(awk '$1 == "allreduce" { t = $3 } END { print t }' "$1")
      rd=$(awk '$1 == "reduce" { t = $3 } END { print t }' "$1")
      echo "reduce $rd us, allreduce $ar us at the largest size"
      awk -v r="$rd" -v a="$ar" 'BEGIN { exit !(r > 0 && a > 0 && r <= 5 * a) }'
    }
    if ! reduce_in_time "$tmp/out" >/dev/null; then
      mpirun -np 2 "$bin" calibrate --max-bytes 1MiB --max-flops 1e8 --repeats 2 --out "$tmp/cal2.yaml" >"$tmp/out2" 2>&1 \
        || { cat "$tmp/out2"; fail "calibrate (again)"; }
      reduce_in_time "$tmp/out2" >"$tmp/ratio" || { cat "$tmp/out" "$tmp/out2"; fail "twice: $(cat "$tmp/ratio")"; }
    fi
    grep -q '^  precision: fp32 ' "$tmp/cal.yaml" || fail "calibration precision (the CPU's sgemm: fp32)"
    # A calibration serves scenarios of its GEMMs' precision only: a bf16 scenario is refused, named.
    set +e
    "$bin" simulate --strategy ddp "${small[@]}" --precision bf16 --gpus 2 --calibration "$tmp/cal.yaml" --out "$tmp/s16" \
      >"$tmp/s16.out" 2>&1
    rc=$?
    set -e
    [[ $rc != 0 && ! -e $tmp/s16 ]] || { cat "$tmp/s16.out"; fail "a bf16 scenario ran on an fp32 calibration"; }
    grep -q "calibration $tmp/cal.yaml: its GEMMs were timed in fp32 (hardware.precision), the scenario runs bf16; the CPU backend computes in fp32 only: give --precision fp32" "$tmp/s16.out" \
      || { cat "$tmp/s16.out"; fail "precision mismatch message"; }
    set +e
    "$bin" calibrate --backend cpu --launch local --precision bf16 --out "$tmp/c16.yaml" >"$tmp/c16.out" 2>&1
    rc=$?
    set -e
    [[ $rc == 2 && ! -e $tmp/c16.yaml ]] || { cat "$tmp/c16.out"; fail "calibrate --precision bf16 on CPUs exited $rc"; }
    grep -q "^error: --precision bf16: the CPU backend computes in fp32 (OpenBLAS sgemm); expected fp32$" "$tmp/c16.out" \
      || { cat "$tmp/c16.out"; fail "calibrate --precision bf16 on CPUs message"; }
    "$bin" simulate --strategy ddp "${small[@]}" --precision fp32 --gpus 2 --calibration "$tmp/cal.yaml" --out "$tmp/s" \
      >"$tmp/sim.out" || fail "simulate --calibration"
    grep -q "(calibrated)" "$tmp/sim.out" || { cat "$tmp/sim.out"; fail "not calibrated"; }
    # A calibration changes times, not bytes: DP's GPU0 and DDP's rank 0 move what they move
    # uncalibrated (a broadcast's root only sends, a reduce's only receives).
    for st in dp ddp; do
      "$bin" simulate --strategy $st "${small[@]}" --precision fp32 --gpus 2 --calibration "$tmp/cal.yaml" \
        --out "$tmp/bc-$st" >"$tmp/bc-$st.out" || fail "simulate --strategy $st --calibration"
      "$bin" simulate --strategy $st "${small[@]}" --precision fp32 --gpus 2 --out "$tmp/bu-$st" >"$tmp/bu-$st.out"
      bytes() { awk -v s="$2" '$1 == s { print $(NF-6), $(NF-5), $(NF-4), $(NF-3) }' "$1"; }
      [[ -n $(bytes "$tmp/bc-$st.out" $st) && $(bytes "$tmp/bc-$st.out" $st) == $(bytes "$tmp/bu-$st.out" $st) ]] \
        || { grep -h "^  $st " "$tmp/bc-$st.out" "$tmp/bu-$st.out"; fail "$st's bytes change with a calibration"; }
    done
    # Without --precision, validate runs the calibration's (fp32 here, the CPU backend's only one).
    mpirun -np 2 "$bin" validate "${small[@]}" --calibration "$tmp/cal.yaml" --out "$tmp/v" \
      >"$tmp/val.out" 2>&1 || { cat "$tmp/val.out"; fail "validate"; }
    grep -q "^# gradsync validate: .*, fp32, " "$tmp/val.out" || { cat "$tmp/val.out"; fail "validate's precision"; }
    # A calibration of another rank count: calibrate again as this run is launched. Every rank
    # finds it alike: rank 0 says it once.
    set +e
    mpirun -np 3 --oversubscribe "$bin" validate "${small[@]}" --calibration "$tmp/cal.yaml" --out "$tmp/v3" \
      >"$tmp/v3.out" 2>&1
    rc=$?
    set -e
    [[ $rc != 0 && ! -e $tmp/v3 ]] || { cat "$tmp/v3.out"; fail "validate on 3 ranks with a 2-rank calibration"; }
    [[ $(grep -c "^error: calibration $tmp/cal.yaml: allreduce was measured on 2 ranks, this run has 3; calibrate on as many ranks, launched as this run is (mpirun -np 3 gradsync calibrate)$" "$tmp/v3.out") == 1 ]] \
      || { cat "$tmp/v3.out"; fail "rank-count message"; }
    grep -q "measured against simulated" "$tmp/val.out" || fail "no validation table"
    grep -q '^  ddp       steady       step ' "$tmp/val.out" || { cat "$tmp/val.out"; fail "no step row"; }
    grep -q '^  ddp       iteration 3  step ' "$tmp/val.out" || fail "no per-iteration row"
    head -1 "$tmp/v/validation.csv" | grep -q '^strategy,scope,phase,measured_s,simulated_s,error$' || fail "validation.csv"
    grep -q '"validation"' "$tmp/v/result.json" || fail "validation in result.json"
    # The calibration the simulated side used is recorded, as simulate records it.
    grep -q "\"calibration\": \"$tmp/cal.yaml\"" "$tmp/v/result.json" || fail "validate's result.json names no calibration"
    # A size that cannot fit in this machine's memory is refused before anything is allocated.
    set +e
    "$bin" calibrate --backend cpu --launch local --world-size 2 --max-bytes 1TiB --out "$tmp/big.yaml" >"$tmp/big.out" 2>&1
    rc=$?
    set -e
    [[ $rc == 2 ]] || { cat "$tmp/big.out"; fail "calibrate --max-bytes 1TiB exited $rc, expected 2"; }
    grep -q "^error: --max-bytes 1.00 TiB: calibrating needs about 5 times that for each of this host's 2 CPU ranks (10.0 TiB); this machine has .* of memory; lower --max-bytes$" "$tmp/big.out" \
      || { cat "$tmp/big.out"; fail "calibrate --max-bytes 1TiB message"; }
    [[ ! -e $tmp/big.yaml ]] || fail "calibrate --max-bytes 1TiB wrote a file"
    echo "calibrate wrote a file the simulator loads; validate printed measured against simulated; 1TiB refused"
    ;;
  stall)
    start=$(date +%s)
    rc=0
    GRADSYNC_FAULT=stall:1 timeout 120 mpirun -np 2 "$bin" bench "${small[@]}" --timeout 3 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc != 0 && $rc != 124 ]] || { cat "$tmp/out"; fail "a stalled peer gave exit $rc"; }
    grep -q 'rank 0: .* did not complete within --timeout 3 s' "$tmp/out" || { cat "$tmp/out"; fail "no watchdog error"; }
    [[ ! -e "$tmp/b/summary.csv" ]] || fail "a failed run wrote outputs"
    rc=0
    GRADSYNC_FAULT=stall:1 timeout 120 "$bin" bench "${small[@]}" --launch local --world-size 2 --strategy ddp --timeout 3 \
      --out "$tmp/c" >"$tmp/out2" 2>&1 || rc=$?
    [[ $rc == 1 ]] || { cat "$tmp/out2"; fail "threads: exit $rc"; }
    grep -q 'did not complete within --timeout 3 s' "$tmp/out2" || fail "threads: no watchdog error"
    echo "a rank that stops: the watchdog aborts after --timeout with the collective named ($(( $(date +%s) - start )) s)"
    ;;
  exit)
    rc=0
    GRADSYNC_FAULT=exit:1 timeout 120 mpirun -np 2 "$bin" bench "${small[@]}" --timeout 5 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc != 0 && $rc != 124 ]] || { cat "$tmp/out"; fail "a rank that exits early gave exit $rc"; }
    [[ ! -e "$tmp/b/summary.csv" ]] || fail "a failed run wrote outputs"
    echo "a rank that exits early: the run ends with exit $rc, no hang, no outputs"
    ;;
  kill)
    # SIGKILL one rank mid-run: the run ends within --timeout with the lost rank named (mpirun's own
    # report: the survivors' MPI calls fail), --out untouched, and the next run clears the staging
    # folder the killed run left.
    start=$(date +%s)
    rc=0
    timeout 120 mpirun -np 2 "$bin" bench --model resnet18 --batch-per-gpu 1 --iterations 60 --warmup 1 --timeout 20 \
      --out "$tmp/k" >"$tmp/out" 2>&1 &
    mp=$!
    victim=""
    for _ in $(seq 1 600); do  # the process whose environment says it is rank 1
      for p in $(pgrep -f -- "bench .*--out $tmp/k" || true); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
      done
      [[ -n $victim ]] && break
      sleep 0.05
    done
    [[ -n $victim ]] || { cat "$tmp/out"; fail "rank 1 never started"; }
    sleep 1
    kill -KILL "$victim"
    wait "$mp" || rc=$?
    took=$(( $(date +%s) - start ))
    [[ $rc != 0 && $rc != 124 ]] || { cat "$tmp/out"; fail "a killed rank gave exit $rc"; }
    [[ $took -lt 25 ]] || fail "a killed rank took $took s to notice (--timeout 20)"
    grep -Eq 'rank 1 .*(signal 9|Killed)' "$tmp/out" || { cat "$tmp/out"; fail "the lost rank is not named"; }
    [[ ! -e "$tmp/k" ]] || fail "a killed run wrote --out"
    for _ in $(seq 1 100); do pgrep -f -- "--out $tmp/k" >/dev/null || break; sleep 0.1; done  # rank 0 gone too
    mpirun -np 2 "$bin" bench "${small[@]}" --out "$tmp/k" >"$tmp/out2" 2>&1 || { cat "$tmp/out2"; fail "the next run"; }
    ls -A "$tmp" | grep -q '^\.k\.gradsync-tmp-' && fail "the killed run's staging folder is still there"
    echo "a rank killed with SIGKILL: the run ended in $took s naming rank 1; --out untouched; the next run cleaned up"
    ;;
  errors)
    rc=0; mpirun -np 2 "$bin" bench "${small[@]}" --strategy dp --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    # Every rank finds it alike: rank 0 says it once.
    [[ $rc == 2 && $(grep -c '^error: ' "$tmp/out") == 1 ]] && grep -q 'DataParallel runs in one process' "$tmp/out" ||
      { cat "$tmp/out"; fail "dp under mpirun: $rc"; }
    # validate's way out names validate (it named bench until 2026-12-02).
    mpirun -np 2 "$bin" calibrate --max-bytes 8 --max-flops 1e6 --repeats 1 --out "$tmp/c2.yaml" >/dev/null 2>&1 \
      || fail "calibrate for validate"
    rc=0; mpirun -np 2 "$bin" validate "${small[@]}" --strategy dp --calibration "$tmp/c2.yaml" --out "$tmp/b" \
      >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q 'Run it as: gradsync validate --strategy dp --launch local --world-size 2' "$tmp/out" ||
      { cat "$tmp/out"; fail "validate dp under mpirun: $rc"; }
    # A scenario file's error and a rank count the flags contradict: also said once.
    printf 'model: resnet18\nfoo: 1\n' >"$tmp/unknown.yaml"
    rc=0; mpirun -np 2 "$bin" bench "$tmp/unknown.yaml" --iterations 3 --warmup 1 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 1 && $(grep -c '^error: ' "$tmp/out") == 1 ]] && grep -q 'unknown.yaml:2: scenario: unknown key "foo"' "$tmp/out" ||
      { cat "$tmp/out"; fail "a file's error under mpirun: $rc"; }
    rc=0; mpirun -np 2 "$bin" bench "${small[@]}" --gpus 3 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 && $(grep -c '^error: ' "$tmp/out") == 1 ]] && grep -q -- '--gpus 3: this run has 2 ranks' "$tmp/out" ||
      { cat "$tmp/out"; fail "--gpus 3 under mpirun -np 2: $rc"; }
    rc=0; mpirun -np 2 "$bin" bench "${small[@]}" --world-size 3 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q -- '--world-size 3: mpirun started 2 ranks' "$tmp/out" || { cat "$tmp/out"; fail "world size: $rc"; }
    # torchrun's --nnodes / --nproc-per-node describe the launch that ran; they are recorded with it.
    rc=0; mpirun -np 2 "$bin" bench "${small[@]}" --nnodes 2 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q 'nnodes 2: this run has 2 ranks on 1 host; expected 1 or leave nnodes unset' "$tmp/out" ||
      { cat "$tmp/out"; fail "nnodes under mpirun: $rc"; }
    rc=0; "$bin" bench "${small[@]}" --launch local --world-size 2 --nproc-per-node 1 --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q -- '--nproc-per-node 1: this run has 2 ranks on 1 host; expected 2 or leave nproc_per_node unset' "$tmp/out" ||
      { cat "$tmp/out"; fail "nproc_per_node as threads: $rc"; }
    mpirun -np 2 "$bin" bench "${small[@]}" --strategy ddp --nnodes 1 --nproc-per-node 2 --out "$tmp/hosts" >"$tmp/out" 2>&1 ||
      { cat "$tmp/out"; fail "nnodes 1 x nproc_per_node 2 under mpirun -np 2"; }
    awk -F, 'NR==1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["nnodes"] "x" $c["nproc_per_node"] }' \
      "$tmp/hosts/summary.csv" | grep -qx '1x2' || { cat "$tmp/hosts/summary.csv"; fail "nnodes and nproc_per_node not recorded"; }
    rc=0; "$bin" bench "${small[@]}" --precision bf16 --backend cpu --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    # A flag's value that the machine cannot run: the command line's error (exit 2), as in simulate.
    [[ $rc == 2 ]] && grep -q -- '^error: --precision bf16: the CPU backend computes in fp32' "$tmp/out" || { cat "$tmp/out"; fail "bf16 on cpu: $rc"; }
    # The same from a scenario file: the file's error (exit 1), at its line.
    printf 'model: resnet18\nbatch_per_gpu: 1\niterations: 3\nwarmup: 1\nprecision: bf16\n' >"$tmp/bf16.yaml"
    rc=0; "$bin" bench "$tmp/bf16.yaml" --backend cpu --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 1 ]] && grep -q "bf16.yaml:5: precision \"bf16\": the CPU backend computes in fp32" "$tmp/out" ||
      { cat "$tmp/out"; fail "bf16 on cpu from a file: $rc"; }
    rc=0; "$bin" bench "${small[@]}" --backend cpu --init-method "file://$tmp/id" --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q 'is not set; expected it as torchrun sets it' "$tmp/out" || { cat "$tmp/out"; fail "file init without RANK: $rc"; }
    rc=0; RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "$bin" bench "${small[@]}" --backend cpu --init-method "file://$tmp/id" \
      --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q 'the CPU backend.s ranks reach each other through MPI' "$tmp/out" || { cat "$tmp/out"; fail "file init on cpu: $rc"; }
    # --launch local under mpirun -np 3 would run three whole jobs into one --out: refused, said once.
    rc=0; mpirun -np 3 "$bin" bench "${small[@]}" --backend cpu --launch local --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 && $(grep -c '^error: ' "$tmp/out") == 1 ]] &&
      grep -q -- '--launch local under mpirun with 3 processes: each would run the whole job on its own' "$tmp/out" ||
      { cat "$tmp/out"; fail "--launch local under mpirun -np 3: $rc"; }
    # Simulation-only flags are refused, not ignored: bench runs the real collectives.
    rc=0; "$bin" bench "${small[@]}" --backend cpu --fidelity aggregate --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q -- '--fidelity aggregate: bench measures real collectives' "$tmp/out" ||
      { cat "$tmp/out"; fail "--fidelity on bench: $rc"; }
    rc=0; "$bin" bench "${small[@]}" --backend cpu --mixed-precision master-weights --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 ]] && grep -q -- '--mixed-precision master-weights: real mode trains' "$tmp/out" || { cat "$tmp/out"; fail "master-weights in real mode: $rc"; }
    # A flag mistyped under mpirun: every rank finds the same parse error; it is said once (rank 0).
    rc=0; mpirun -np 3 "$bin" bench "${small[@]}" --no-such-flag --out "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc != 0 && $(grep -c '^error: ' "$tmp/out") == 1 ]] && grep -q -- '--no-such-flag' "$tmp/out" ||
      { cat "$tmp/out"; fail "a parse error under mpirun -np 3 is said once: rc $rc"; }
    [[ ! -e "$tmp/b" ]] || fail "a failed run wrote outputs"
    # An --out the root cannot use under mpirun: the root says why once and exits 2; the other ranks
    # do not wait for it in a collective (they hung until the launcher's timeout).
    mkdir -p "$tmp/foreign" && touch "$tmp/foreign/notes.txt"
    rc=0; timeout 120 mpirun -np 2 "$bin" bench "${small[@]}" --out "$tmp/foreign" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc == 2 && $(grep -c '^error: ' "$tmp/out") == 1 ]] && grep -q 'the folder holds "notes.txt", which gradsync did not write' "$tmp/out" ||
      { cat "$tmp/out"; fail "an unusable --out under mpirun: rc $rc"; }
    echo "bad launches are errors with exit codes 1/2"
    ;;
  *) fail "unknown case $case_" ;;
esac
