#!/usr/bin/env bash
# builtin.sh BIN [--check]: the commands that make the built-in clusters topologies/*.dot. Without
# --check it rewrites them; with --check (a ctest) it fails if any file differs from what the
# generators now produce.
set -euo pipefail
bin=$1
mode=${2:-write}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen() {
  local name=$1
  shift
  "$bin" topo generate "$@" -o "$tmp/$name.dot"
}
gen dgx-a100 nvswitch --gpu a100-sxm4-80gb --gpus 8 --nics 8 --nic-bw 200Gbps
gen dgx-h100 nvswitch --gpu h100-sxm5-80gb --gpus 8 --nics 8 --nic-bw 400Gbps
gen dgx1-v100 nvlink-mesh --gpu v100-sxm2-32gb
gen pcie-4gpu pcie --gpu rtx-4090 --gpus 4 --sockets 2 --gpus-per-switch 2
gen pcie-2gpu-nvlink-bridge pcie --gpu rtx-3090 --gpus 2 --sockets 1 --gpus-per-switch 0 --nvlink-bridge
gen 2x-dgx-a100-hdr fat-tree --nodes 2 --node dgx-a100
gen 16x-dgx-h100-ndr rail-optimized --nodes 16 --node dgx-h100
status=0
for f in "$tmp"/*.dot; do
  target="$root/topologies/$(basename "$f")"
  if [[ $mode == --check ]]; then
    diff -u --label "topologies/$(basename "$f")" --label "generated" "$target" "$f" || status=1
  else
    cp "$f" "$target"
    echo "wrote topologies/$(basename "$f")"
  fi
done
exit $status
