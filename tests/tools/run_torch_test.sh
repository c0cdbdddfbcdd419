#!/usr/bin/env bash
# run_torch_test.sh SCRIPT ARGS...: run tests/tools/SCRIPT with a Python that has torch and
# torchvision (Debian's python3-torch lives in /usr/bin/python3); exit 77 (skipped) when none has.
script=$1
shift
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c "import torch, torchvision" 2>/dev/null; then
    exec "$py" "$(dirname "$0")/$script" "$@"
  fi
done
echo "SKIP: no python3 with torch and torchvision (Debian: apt-get install python3-torch python3-torchvision)"
exit 77
