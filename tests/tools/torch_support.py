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
