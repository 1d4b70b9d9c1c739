"""Reads `mutmut results --all true` (mutmut 3.8.1: lines `    NAME: STATUS`)
and prints the one-line totals (run by run.sh; stdlib only).

    python3 totals.py SELECTION RESULTS [--search SEARCH_RESULTS [--search-only-file FILE]]
    python3 totals.py --survivors SELECTION RESULTS   # pass 1's missed mutants, one a line

generated: mutants in the run's selection (all, or the sample);
killed: killed by the vectors (pass 1);
killed by search only: mutants pass 1 missed (survived, or "no tests": in
code the vector test never reaches) that the search's vectors kill (pass 2,
SEARCH_RESULTS; a hang there counts too): gaps in the vectors, printed as
`search-only: NAME` on stderr and written to FILE;
equivalent: other survivors listed in ../mutants-equivalent.md (a line `### NAME`);
untestable: those listed there under a section about 2^32 positions;
survived: the other survivors (gaps, or not yet triaged). Mutants the run
did not reach ("not checked", "no tests") are printed on a second line if any.
A mutant the search kills is not equivalent whatever the file says: such an
entry is reported as an error line and the mutant counts as killed by search
only. Also writes the survivors' names to SURVIVORS_FILE if that is set.
Exit status 1 if any mutant survived or was killed by the search only.
"""
import argparse
import os
import re
import sys
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--survivors", action="store_true", help="print pass 1's missed mutants and stop")
ap.add_argument("selection")
ap.add_argument("results")
ap.add_argument("--search", help="`mutmut results --all true` of the search pass")
ap.add_argument("--search-only-file")
args = ap.parse_args()


# What pass 1 missed: survivors, and mutants of code the vectors never reach
# (cargo-mutants counts both as missed).
MISSED = ("survived", "no tests")


def read_results(path):
    status = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if m:
            status[m.group(1)] = m.group(2).strip()
    return status


selection = sorted(set(Path(args.selection).read_text().split()))
status = read_results(args.results)
if args.survivors:
    print("".join(n + "\n" for n in selection if status.get(n) in MISSED), end="")
    sys.exit(0)

# `### NAME` headings; those under a `## ` section naming "2^32 positions" are
# not equivalent but untestable: a vector would need about 2^32 admitted
# positions, far past any feasible size.
equivalents, untestable = set(), set()
section = ""
for line in (Path(__file__).resolve().parent.parent / "mutants-equivalent.md").read_text().splitlines():
    if line.startswith("## "):
        section = line
    m = re.match(r"^### (\S+)", line)
    if m:
        (untestable if "2^32 positions" in section else equivalents).add(m.group(1))
search = read_results(args.search) if args.search is not None else None
count = {}
survivors, search_only, errors = [], [], []
for name in selection:
    st = status.get(name, "not checked")
    st2 = search.get(name, "not checked") if search is not None and st in MISSED else None
    if st2 in ("killed", "timeout"):
        st = "search only"
        search_only.append(name)
        if name in equivalents or name in untestable:
            errors.append(f"{name} is listed in mutants-equivalent.md, but the search kills it "
                          f"({st2}): it is not equivalent")
    elif st2 is not None and st2 not in MISSED:
        errors.append(f"the search pass did not check {name} ({st2})")
    if st == "survived":
        if name in untestable:
            st = "untestable"
        elif name in equivalents:
            st = "equivalent"
        else:
            survivors.append(name)
    count[st] = count.get(st, 0) + 1
for name in search_only:
    print(f"search-only: {name}", file=sys.stderr)
for e in errors:
    print(f"python-mutation: error: {e}")
print(f"python-mutation: generated {len(selection)}, killed {count.get('killed', 0)}, "
      f"killed by search only {count.get('search only', 0)}, "
      f"equivalent {count.get('equivalent', 0)}, untestable {count.get('untestable', 0)}, "
      f"survived {count.get('survived', 0)}, "
      f"timeout {count.get('timeout', 0)}")
other = {k: v for k, v in count.items()
         if k not in ("killed", "search only", "equivalent", "untestable", "survived", "timeout")}
if other:
    print("python-mutation: other statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(other.items())))
if os.environ.get("SURVIVORS_FILE"):
    Path(os.environ["SURVIVORS_FILE"]).write_text("".join(n + "\n" for n in survivors))
if args.search_only_file:
    Path(args.search_only_file).write_text("".join(n + "\n" for n in search_only))
# A survivor that is neither equivalent nor untestable, or a mutant only the
# search kills, fails the run; so does an error line.
sys.exit(1 if survivors or search_only or errors else 0)
