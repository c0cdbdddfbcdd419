#!/usr/bin/env bash
# sweep_mpi_test.sh GRADSYNC: under mpirun the points are split across ranks and rank 0 writes
# the same summary.csv as one process does. Skipped (77) where mpirun is missing.
set -euo pipefail
bin=$1
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (Debian's openmpi-bin, scripts/setup)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep --model resnet18 --iterations 2 --warmup 1 --vary gpus=1,2,4,8 --vary grad_accum=1,2)
"$bin" "${args[@]}" --out "$tmp/one" >/dev/null 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 3 "$bin" "${args[@]}" --out "$tmp/mpi" >"$tmp/mpi.out" 2>&1 || { cat "$tmp/mpi.out" >&2; exit 1; }
[[ -f "$tmp/mpi/parts/rank1-of-3.csv" && -f "$tmp/mpi/parts/rank2-of-3.csv" ]] || { echo "FAIL: no per-rank parts" >&2; exit 1; }
# Each rank ran only its share: rank 1's part holds points 1, 4, 7, ...
[[ $(cut -d, -f1 "$tmp/mpi/parts/rank1-of-3.csv" | tail -n +2 | tr '\n' ' ') == "1 4 7 10 13 " ]] || { echo "FAIL: rank 1 ran other points" >&2; exit 1; }
cmp "$tmp/one/summary.csv" "$tmp/mpi/summary.csv"
cmp "$tmp/one/result.json" "$tmp/mpi/result.json"
echo "3 ranks under mpirun: the same summary.csv and result.json as one process"
