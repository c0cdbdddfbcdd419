#!/usr/bin/env bash
# trace_gzip_test.sh BIN: --trace-format json.gz writes trace-<strategy>.json.gz and events.csv.gz,
# which gunzip to exactly what --trace-format json writes (and the gzip bytes are the same run to
# run); the default (auto) writes them plain up to 16 GPUs and gzipped beyond; --trace-ranks all
# holds every rank, the default past 16 GPUs only node 0, the first GPU of each other node and the
# slowest ranks.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
small=(--model resnet18 --gpus 2 --iterations 2 --warmup 1 --advice-budget 0)
"$bin" compare "${small[@]}" --out "$tmp/json" >/dev/null
"$bin" compare "${small[@]}" --trace-format json.gz --out "$tmp/gz" >/dev/null
"$bin" compare "${small[@]}" --trace-format json.gz --out "$tmp/gz2" >/dev/null
for s in dp ddp; do
  [[ -f "$tmp/gz/trace-$s.json.gz" && ! -e "$tmp/gz/trace-$s.json" ]] || fail "no trace-$s.json.gz alone"
  cmp <(gunzip -c "$tmp/gz/trace-$s.json.gz") "$tmp/json/trace-$s.json" || fail "trace-$s.json.gz is not trace-$s.json"
  cmp "$tmp/gz/trace-$s.json.gz" "$tmp/gz2/trace-$s.json.gz" || fail "trace-$s.json.gz differs between two runs"
done
[[ -f "$tmp/gz/events.csv.gz" && ! -e "$tmp/gz/events.csv" ]] || fail "no events.csv.gz alone"
cmp <(gunzip -c "$tmp/gz/events.csv.gz") "$tmp/json/events.csv" || fail "events.csv.gz is not events.csv"
cmp "$tmp/gz/events.csv.gz" "$tmp/gz2/events.csv.gz" || fail "events.csv.gz differs between two runs"
echo "json.gz: the same trace and events, gzip-compressed, the same bytes every run"
# 32 GPUs on 4 nodes: by default node 0 (0-7), the first GPU of nodes 1-3 and the slowest ranks.
"$bin" topo generate fat-tree --node dgx-a100 --nodes 4 --out "$tmp/ft4.dot" >/dev/null
wide=(simulate --strategy ddp --model resnet18 --topology "$tmp/ft4.dot" --iterations 2 --warmup 1)
"$bin" "${wide[@]}" --out "$tmp/wide" >/dev/null
"$bin" "${wide[@]}" --trace-ranks all --out "$tmp/all" >/dev/null
# auto past 16 GPUs: gzipped; --trace-format json: plain, the same rows.
[[ -f "$tmp/wide/events.csv.gz" && -f "$tmp/wide/trace-ddp.json.gz" && ! -e "$tmp/wide/events.csv" ]] ||
  fail "32 GPUs: the default did not gzip the trace and events"
[[ -f "$tmp/json/events.csv" && -f "$tmp/json/trace-ddp.json" ]] || fail "2 GPUs: the default did not write plain files"
"$bin" "${wide[@]}" --trace-format json --out "$tmp/plain" >/dev/null
cmp <(gunzip -c "$tmp/wide/events.csv.gz") "$tmp/plain/events.csv" || fail "auto's events.csv.gz is not events.csv"
ranks() { gunzip -c "$1/events.csv.gz" | awk -F, 'NR > 1 { print $2 }' | sort -n | uniq | tr '\n' ' '; }
default=$(ranks "$tmp/wide")
for r in 0 1 2 3 4 5 6 7 8 16 24; do [[ " $default" == *" $r "* ]] || fail "rank $r missing by default: $default"; done
(( $(wc -w <<<"$default") < 32 )) || fail "every rank traced by default at 32 GPUs"
[[ $(wc -w <<<"$(ranks "$tmp/all")") == 32 ]] || fail "--trace-ranks all does not hold 32 ranks"
cmp "$tmp/wide/summary.csv" "$tmp/all/summary.csv" || fail "the summary depends on the traced ranks"
echo "default ranks at 32 GPUs: $default; --trace-ranks all: 32; summary.csv the same"
