#!/usr/bin/env bash
# check.sh BIN CASE_DIR: run `BIN` with the arguments in CASE_DIR/cmd (one per line) from the
# repository root and compare stdout, stderr and the exit code with CASE_DIR/{stdout,stderr,exit_code}.
# The caller's NCCL_* variables are removed; CASE_DIR/env (optional, NAME=VALUE per line) sets some.
# With GRADSYNC_GOLDEN_UPDATE=1 it writes those files instead (see README.md).
set -uo pipefail
bin=$1
case_dir=$2
mapfile -t args < "$case_dir/cmd"
while read -r name; do unset "$name"; done < <(compgen -e | grep '^NCCL_' || true)
if [[ -f "$case_dir/env" ]]; then
  while IFS= read -r line; do export "$line"; done < "$case_dir/env"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr"
echo $? >"$tmp/exit_code"

if [[ "${GRADSYNC_GOLDEN_UPDATE:-0}" == 1 ]]; then
  cp "$tmp/stdout" "$tmp/stderr" "$tmp/exit_code" "$case_dir/"
  echo "updated $case_dir"
  exit 0
fi
status=0
for f in exit_code stdout stderr; do
  if ! diff -u --label "expected $case_dir/$f" --label "actual $f" "$case_dir/$f" "$tmp/$f"; then status=1; fi
done
exit $status
