"""Generates mutmut's mutants in the current (work) directory without running
them and prints every mutant name, sorted; with --sample N --seed S prints a
reproducible sample of N of them (random.Random(S).sample over the sorted list)."""
import argparse
import contextlib
import sys
import json
import os
import random
from pathlib import Path

import mutmut.__main__ as mm

ap = argparse.ArgumentParser()
ap.add_argument("--sample", type=int, default=0)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()
os.environ["MUTANT_UNDER_TEST"] = "mutant_generation"
mm.read_config()
os.makedirs("mutants", exist_ok=True)
with contextlib.redirect_stdout(sys.stderr):  # it prints the files it mutates
    mm.create_mutants()
names = []
for meta in Path("mutants").rglob("*.meta"):
    names.extend(n for n in json.loads(meta.read_text())["exit_code_by_key"] if "__mutmut_" in n)
names.sort()
if args.sample and args.sample < len(names):
    names = sorted(random.Random(args.seed).sample(names, args.sample))
print("\n".join(names))
