#!/usr/bin/env bash
# tests/fuzz/run.sh: run each libFuzzer harness of tests/fuzz for a while, from its seed corpus.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]   (default 60 s each; all six targets, two at a time)
#
# Needs the fuzz preset built (cmake --workflow --preset fuzz, or cmake --preset fuzz && cmake
# --build --preset fuzz). A crash, sanitizer report, leak, slow input (> 10 s) or an input that
# makes a loader use more than 2 GiB fails the run; the input is left as
# build/fuzz/artifacts/<target>-crash-* (or timeout-*, oom-*, leak-*): copy it into
# tests/fuzz/regressions/<target>/ with the fix, so that ctest replays it for ever.
#
# GRADSYNC_FUZZ_SEED (default 1) fixes libFuzzer's random seed, so that a run repeats the same
# sequence of inputs: a run here of N seconds covers what CI's shorter run on a machine of the same
# speed tries, and a CI failure can be replayed. GRADSYNC_FUZZ_SEED=0 explores with a new seed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
seed=${GRADSYNC_FUZZ_SEED:-1}
[[ $seed =~ ^[0-9]+$ ]] || { echo "fuzz: GRADSYNC_FUZZ_SEED \"$seed\": expected a whole number (0: random)" >&2; exit 2; }
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(dot graphml model scenario calibration trace)
bin=build/fuzz/tests/fuzz
art=build/fuzz/artifacts
mkdir -p "$art"

# The built-in clusters seed the DOT harness (libFuzzer takes folders: topologies/ also holds code).
builtin_dots=$(mktemp -d)
trap 'rm -rf "$builtin_dots"' EXIT
cp topologies/*.dot "$builtin_dots"/

seeds() {
  case "$1" in
    dot) echo "$builtin_dots" tests/fuzz/seeds/dot ;;
    model) echo models/zoo tests/fuzz/seeds/model ;;
    *) echo "tests/fuzz/seeds/$1" ;;
  esac
}

run_one() {
  local t=$1 corpus
  [[ -x $bin/${t}_fuzz ]] || { echo "fuzz: $bin/${t}_fuzz is not built (cmake --build --preset fuzz)" >&2; return 2; }
  corpus=$(mktemp -d)
  # shellcheck disable=SC2046
  if "$bin/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -seed="$seed" -artifact_prefix="$art/$t-" "$corpus" \
      $(for s in $(seeds "$t") tests/fuzz/regressions/"$t"; do [[ -d $s ]] && echo "$s"; done) \
      > "$art/$t.log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$art/$t.log" | grep -o '[0-9]*$') inputs in ${seconds} s (seed $seed), no crash"
  else
    echo "fuzz: $t: FAILED; see $art/$t.log and $art/$t-*" >&2
    tail -30 "$art/$t.log" >&2
    rm -rf "$corpus"
    return 1
  fi
  rm -rf "$corpus"
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!)
  if [[ ${#pids[@]} -ge 2 ]]; then wait "${pids[0]}" || status=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
