"""torch_support.py: what the Python tests of tools/ share. Importing it exits 77 (ctest: skipped)
with a message when torch cannot be imported, and puts tools/ on sys.path; ROOT is the project."""
import os
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"SKIP: torch is not importable here ({e}); install Debian's python3-torch to run this test")
    sys.exit(77)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))


def check_bytes(rows, tolerance, label):
    """Print `rows` of (what, PyTorch's bytes, gradsync's bytes) with their error; exit 1 naming
    each row off by more than `tolerance` (a fraction). `label` heads the first column."""
    failures = []
    print(f"{label:28} {'pytorch':>12} {'gradsync':>12} {'error':>8}")
    for what, want, got in rows:
        err = got / want - 1
        print(f"{what:28} {want:12.0f} {got:12.0f} {100 * err:+7.1f}%")
        if abs(err) > tolerance:
            failures.append(f"{what}: gradsync {got:.0f} B, PyTorch {want:.0f} B ({100 * err:+.1f}%)")
    if failures:
        print(f"FAIL: more than {100 * tolerance:.0f}% off:\n  " + "\n  ".join(failures))
        sys.exit(1)
