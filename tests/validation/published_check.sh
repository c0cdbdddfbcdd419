#!/usr/bin/env bash
# published_check.sh BIN: `gradsync validate --published` on the built-in table, then per
# validation class and split, over the scored points (16 MiB and up, cases not excluded), the
# median |error| and the share within 10% checked against the bounds README.md reports. A model
# change that makes gradsync worse on public measurements fails here.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" validate --published --jobs 2 --csv "$tmp/published.csv" --confidence "$tmp/confidence.csv" >"$tmp/table.txt" 2>&1 ||
  { cat "$tmp/table.txt"; exit 1; }
# Every line of the table is written once: the simulating children must not repeat what the parent
# had buffered for stdout (written to a file, stdout is fully buffered).
dup=$(grep -v '^#' "$tmp/table.txt" | sort | uniq -d | head -3)
if [ -n "$dup" ]; then
  echo "FAIL: lines written more than once:"
  echo "$dup"
  status_dup=1
fi
# The confidence table that gradsync ships (and prints a +/- from) is what the tables give now.
if ! diff -u validation/published/confidence.csv "$tmp/confidence.csv"; then
  echo "FAIL: validation/published/confidence.csv is stale: regenerate it with"
  echo "  gradsync validate --published --confidence validation/published/confidence.csv"
  status_conf=1
fi
# class,split -> median |error| (%), share within 10% (%), points
awk -F, 'NR > 1 && $1 == "nccl-tests" && $10 == "true" {
  key = $4 "," $3; e = $9 < 0 ? -$9 : $9; n[key]++; v[key, n[key]] = e * 100; if (e <= 0.10) w[key]++
}
END {
  for (k in n) {
    m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
    med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    printf "%s,%.2f,%.1f,%d\n", k, med, 100 * w[k] / m, m
  }
}' "$tmp/published.csv" | sort >"$tmp/summary.csv"
cat "$tmp/summary.csv"
status=${status_conf:-0}
[ -n "${status_dup:-}" ] && status=1
# check CLASS SPLIT MAX_MEDIAN MIN_WITHIN10 MIN_POINTS (for training: within 15%)
check() {
  local line
  line=$(grep "^$1,$2," "$tmp/summary.csv") || { echo "FAIL: no scored points for $1 $2"; status=1; return; }
  IFS=, read -r _ _ med within points <<<"$line"
  if awk -v m="$med" -v w="$within" -v p="$points" -v M="$3" -v W="$4" -v P="$5" 'BEGIN { exit !(m <= M && w >= W && p >= P) }'; then
    echo "ok: $1 $2: median $med% <= $3%, $within% within ${6:-10}% >= $4%, $points points >= $5"
  else
    echo "FAIL: $1 $2: median $med% (at most $3%), $within% within ${6:-10}% (at least $4%), $points points (at least $5)"
    status=1
  fi
}
# The train split gained four H100s of an eight-GPU host on 2026-12-01 (NVLS 20-25% slow at 4 GPUs,
# reduce-scatter 6-22% fast): 80%.
check "NVLink node" train 4 80 145
# The hold-out gained an 8 x A100 curve run as one process for all GPUs (-g 8), 5 of its 9 scored
# points above 10% (README, "Validation against public nccl-tests"): 80%, and 55 points.
check "NVLink node" holdout 6 80 55
check "multi-node" train 12 50 60
check "multi-node" holdout 15 40 12
check "PCIe" train 25 10 25
check "PCIe" holdout 30 0 15
# The single-GPU training table (issue "Fidelity II"): per split, the median |error| and the share
# within 15%, checked against the bounds README.md reports.
awk -F, 'NR > 1 && $1 == "training" {
  key = "training," $3; e = $9 < 0 ? -$9 : $9; n[key]++; v[key, n[key]] = e * 100; if (e <= 0.15) w[key]++
}
END {
  for (k in n) {
    m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
    med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    printf "%s,%.2f,%.1f,%d\n", k, med, 100 * w[k] / m, m
  }
}' "$tmp/published.csv" | sort >>"$tmp/summary.csv"
cat "$tmp/summary.csv" | grep '^training'
# check training SPLIT MAX_MEDIAN MIN_WITHIN15 MIN_CASES
# On 2026-12-04 both splits gained Lambda's runs on ten boards gradsync had not modelled (cases
# 85-145: RTX A6000/A5000/A4000, RTX 6000 Ada, A10, Quadro RTX 8000/6000, RTX 3080), added before
# any was predicted: their ResNet-50 rows came out at a median 6.7%, their BERT rows 20.8% (too
# fast, README "Ten more GPUs"). Train 5.1% -> 7.5% (84% -> 74% within 15%), hold-out 6.6% -> 10.4%
# (70% -> 63%).
check training train 8 70 80 15
check training holdout 11 60 55 15
# The multi-GPU DDP table (issue "Fidelity III"): per kind and split, the median |error| (time: %,
# a change between two cases: percentage points) against the bounds README.md reports.
awk -F, 'NR > 1 && $1 == "ddp" {
  key = $4 "," $3; e = $9 < 0 ? -$9 : $9; if ($4 == "time") e *= 100; n[key]++; v[key, n[key]] = e
}
END {
  for (k in n) {
    m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
    med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    printf "ddp,%s,%.2f,%d\n", k, med, m
  }
}' "$tmp/published.csv" | sort >"$tmp/ddp.csv"
cat "$tmp/ddp.csv"
# check_ddp KIND SPLIT MAX_MEDIAN MIN_CASES
check_ddp() {
  local line med cases
  line=$(grep "^ddp,$1,$2," "$tmp/ddp.csv") || { echo "FAIL: no DDP cases for $1 $2"; status=1; return; }
  IFS=, read -r _ _ _ med cases <<<"$line"
  if awk -v m="$med" -v c="$cases" -v M="$3" -v C="$4" 'BEGIN { exit !(m <= M && c >= C) }'; then
    echo "ok: ddp $1 $2: median $med <= $3, $cases cases >= $4"
  else
    echo "FAIL: ddp $1 $2: median $med (at most $3), $cases cases (at least $4)"
    status=1
  fi
}
check_ddp time train 6 47
check_ddp time holdout 12 24
check_ddp change train 1.6 8
check_ddp change holdout 3.5 8
exit $status
