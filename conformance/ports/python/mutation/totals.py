"""Reads `mutmut results --all true` on stdin and prints the one-line totals.

generated: mutants in the run's selection (all, or the sample);
equivalent: survivors listed in ../mutants-equivalent.md (a line `### NAME`);
untestable: those listed there under a section about 2^32 positions;
survived: the other survivors (gaps, or not yet triaged). Mutants the run
did not reach ("not checked") are printed on a second line if any.
Also writes the survivors' names to SURVIVORS_FILE if that is set.
"""
import os
import re
import sys
from pathlib import Path

selection = set(Path(sys.argv[1]).read_text().split())
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
status = {}
for line in sys.stdin:
    m = re.match(r"\s*(\S+): (.+)$", line)
    if m and m.group(1) in selection:
        status[m.group(1)] = m.group(2).strip()
count = {}
survivors = []
for name in sorted(selection):
    st = status.get(name, "not checked")
    if st == "survived":
        if name in untestable:
            st = "untestable"
        elif name in equivalents:
            st = "equivalent"
        else:
            survivors.append(name)
    count[st] = count.get(st, 0) + 1
print(f"python-mutation: generated {len(selection)}, killed {count.get('killed', 0)}, "
      f"equivalent {count.get('equivalent', 0)}, untestable {count.get('untestable', 0)}, "
      f"survived {count.get('survived', 0)}, "
      f"timeout {count.get('timeout', 0)}")
other = {k: v for k, v in count.items()
         if k not in ("killed", "equivalent", "untestable", "survived", "timeout")}
if other:
    print("python-mutation: other statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(other.items())))
if os.environ.get("SURVIVORS_FILE"):
    Path(os.environ["SURVIVORS_FILE"]).write_text("".join(n + "\n" for n in survivors))
# A survivor that is neither equivalent nor untestable fails the run.
sys.exit(1 if survivors else 0)
