"""Generates mutmut's mutants in the current (work) directory without running
them and prints every mutant name, sorted; with --sample N --seed S prints a
reproducible sample of N of them (random.Random(S).sample over the sorted list);
with --slice K/N prints every N-th name from the K-th (round-robin, K from 0),
so a full run can go in N pieces whose union is every mutant.

For mutmut 3.8.1 (requirements-mutation.txt). Names are
`module.x_function__mutmut_N` for a module-level function and
`module.xǁClassǁmethod__mutmut_N` for a method. `mutmut run` reuses the
mutants written here (it regenerates only files newer than their mutants)."""
import argparse
import contextlib
import json
import random
import sys
from pathlib import Path

import mutmut.__main__ as mm
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import copy_src_dir

ap = argparse.ArgumentParser()
ap.add_argument("--sample", type=int, default=0)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--slice", default="")
args = ap.parse_args()
slice_k, slice_n = 0, 1
if args.slice:
    try:
        slice_k, slice_n = (int(x) for x in args.slice.split("/"))
    except ValueError:
        slice_n = 0
    if not (slice_n > 0 and 0 <= slice_k < slice_n):
        sys.exit(f"list_mutants: --slice must be K/N with 0 <= K < N, got {args.slice!r}")
set_mutant_under_test("mutant_generation")
Path("mutants").mkdir(exist_ok=True)
with contextlib.redirect_stdout(sys.stderr):  # it prints the files it mutates
    copy_src_dir()
    mm.create_mutants(1)
names = []
for meta in Path("mutants").rglob("*.meta"):
    names.extend(n for n in json.loads(meta.read_text())["exit_code_by_key"] if "__mutmut_" in n)
names.sort()
if args.sample and args.sample < len(names):
    names = sorted(random.Random(args.seed).sample(names, args.sample))
names = names[slice_k::slice_n]
print("\n".join(names))
