#!/usr/bin/env bash
# run_export_model_test.sh GRADSYNC: run export_model_test.py with a Python that has torch
# (Debian's python3-torch lives in /usr/bin/python3); exit 77 (skipped) when none has it.
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c "import torch, torchvision" 2>/dev/null; then
    exec "$py" "$(dirname "$0")/export_model_test.py" "$1"
  fi
done
echo "SKIP: no python3 with torch and torchvision (Debian: apt-get install python3-torch python3-torchvision)"
exit 77
