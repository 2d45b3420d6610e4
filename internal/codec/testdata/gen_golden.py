#!/usr/bin/env python3
"""Regenerates canonical/*.golden with Python's json module, the reference
that acr's canonical encoder must match byte for byte. Run from this folder:
    python3 gen_golden.py
Review the diff before committing: goldens are the specification."""
import glob, json, os

for path in sorted(glob.glob(os.path.join("canonical", "*.json"))):
    with open(path, encoding="utf-8") as f:
        obj = json.load(f)
    out = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with open(path[:-5] + ".golden", "w", encoding="utf-8", newline="") as f:
        f.write(out)
