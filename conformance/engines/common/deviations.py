"""An engine adapter's run, as check_adapter.sh ends it.

Reads the runner's --json summary of one adapter run and the adapter's
expectation file, and prints:
- every deviation the expectation file lists, each with its class (the
  outcome), the entry's reason and, for a mismatch, what the vector
  expected against what the engine did at the first divergent step; skips
  are grouped by reason;
- every unexpected outcome (the runner's verdict lines, passed in);
- one counts line, the same text conformance/engines/README.md holds for
  this adapter between its markers. With --readme the line there is
  compared with this run's: a stale line fails the check (exit 1), or is
  rewritten with --update;
- last, "NAME: P passed, F failed" (F: the unexpected outcomes).

  deviations.py NAME SUMMARY.json EXPECTATIONS UNEXPECTED [--readme README] [--update]

UNEXPECTED is the number of the runner's unexpected outcomes (its FAIL:
lines; at least 1 when it exited non-zero).
"""

import collections
import json
import sys


OUTCOMES = {"pass", "mismatch", "wrong accept", "wrong reject", "skipped", "error",
            "crash", "timeout", "protocol error", "not run", "not reached"}


def outcome_name(text):
    """An outcome as the runner names it ("wrong-accept" -> "wrong accept")."""
    name = text.replace("-", " ").replace("_", " ")
    return name if name in OUTCOMES else None


def entries(path):
    """The expectation file's entries, parsed as the runner parses them
    (conformance/expectations.cc): (pattern, outcome, reason, line)."""
    found = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if len(words) < 2:
                continue
            # The outcome may be two words ("wrong accept"); two, then one.
            if len(words) >= 3 and outcome_name(words[1] + " " + words[2]):
                found.append((words[0], outcome_name(words[1] + " " + words[2]),
                              " ".join(words[3:]), number))
            elif outcome_name(words[1]):
                found.append((words[0], outcome_name(words[1]), " ".join(words[2:]), number))
    return found


def entry_for(case_id, found):
    """The entry the runner applies: an exact ID, else the longest pattern."""
    best = None
    for entry in found:
        pattern = entry[0]
        if pattern.endswith("/*"):
            matches = case_id.startswith(pattern[:-1])
        else:
            matches = case_id == pattern
        if matches and (best is None or len(pattern) > len(best[0])):
            best = entry
    return best


def record(step):
    """A step's record in one line: victims, kept count, held runs."""
    held = ", ".join(
        "%d..%d as %d" % (r["first"], r["last"], r["id"]) for r in step.get("held", [])
    )
    text = "victims %s, kept %d" % (step["victims"], step["kept_count"])
    return text + (", held [%s]" % held if held else "")


def counts_line(name, summary, classes):
    """The counts line README.md holds for this adapter."""
    deviations = ", ".join(
        "%d %s" % (n, outcome) for outcome, n in sorted(classes.items())
    )
    # A port of lower precision (spec/protocol.md#precision): its cases
    # `within precision`, counted apart, and the precision it declared.
    within = summary.get("within_precision", 0)
    judged = summary.get("judged_within_bound", False)
    run = summary["passed"] + summary["failed"] + summary["skipped"] + summary["not_run"] + within
    excluded = summary.get("excluded", 0)
    return (
        "`%s`: %d passed, %s%d unexpected; expected deviations: %s; %d not run; "
        "on %s of spec %s%s"
        % (
            name,
            summary["passed"],
            ("%d within precision, " % within) if judged else "",
            summary["unexpected"],
            deviations or "none",
            summary["not_run"],
            ("%d selected of the %d cases" % (run, run + excluded)) if excluded
            else ("the %d cases" % run),
            summary.get("suite_spec_version", "?"),
            (", judged at %s" % summary.get("precision", "?")) if judged else "",
        )
    )


def check_readme(path, name, line, update):
    """Compares (or rewrites) the README's line between this adapter's markers."""
    begin = "<!-- counts: %s (written by check.sh) -->" % name
    with open(path, encoding="utf-8") as f:
        text = f.read()
    at = text.find(begin)
    if at < 0:
        print("%s: no marker %r in %s" % (name, begin, path))
        return False
    start = at + len(begin) + 1
    end = text.find("\n", start)
    current = text[start:end]
    if current == line:
        return True
    if update:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:start] + line + text[end:])
        print("%s: %s rewritten" % (name, path))
        return True
    print("%s: %s is stale:\n  it says:  %s\n  this run: %s\n"
          "  (rerun with KVSPEC_UPDATE_ENGINE_README=1 to rewrite it)"
          % (name, path, current, line))
    return False


def main(argv):
    if len(argv) < 5:
        print(__doc__)
        return 2
    name, summary_path, expectations_path, unexpected = argv[1:5]
    readme = argv[argv.index("--readme") + 1] if "--readme" in argv else None
    update = "--update" in argv
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    found = entries(expectations_path)
    classes = collections.Counter()
    skips = collections.Counter()
    listed = []
    within = []
    for case in summary["cases"]:
        outcome = case["outcome"]
        if outcome in ("pass", "not run"):
            continue
        if outcome == "within precision":
            # Not a deviation: the first difference is one the port's declared
            # precision cannot decide (the runner's detail says where).
            within.append("  %s: within precision: %s"
                          % (case["id"], case.get("detail", "").split("\n")[0][:200]))
            continue
        entry = entry_for(case["id"], found)
        if entry is None or entry[1] != outcome:
            continue  # unexpected: the runner's FAIL: lines say it
        classes[outcome] += 1
        if outcome == "skipped":
            skips[entry[2]] += 1
            continue
        lines = ["  %s: %s (line %d: %s)" % (case["id"], outcome, entry[3], entry[2])]
        divergence = case.get("divergence")
        if divergence and divergence["first_divergent_step"] >= 0:
            lines.append(
                "    step %d: expected %s\n             actual   %s"
                % (
                    divergence["first_divergent_step"],
                    record(divergence["expected"]),
                    record(divergence["actual"]),
                )
            )
        elif divergence:
            lines.append(
                "    expected %d steps and %s; the engine ran %d steps and gave %s"
                % (
                    divergence["expected_steps"],
                    divergence["expected_rejection"],
                    divergence["actual_steps"],
                    divergence["actual_rejection"],
                )
            )
        listed.extend(lines)
    print("%s: the deviations %s lists (%d):" % (name, expectations_path, sum(classes.values())))
    for line in listed:
        print(line)
    for reason, n in sorted(skips.items()):
        print("  %d skipped: %s" % (n, reason))
    if within:
        print("%s: within the bound of its precision (%d), not deviations:" % (name, len(within)))
        for line in within:
            print(line)
    line = counts_line(name, summary, classes)
    print(line)
    failed = int(unexpected)
    if readme is not None and not check_readme(readme, name, line, update):
        failed += 1
    print("%s: %d passed, %d failed" % (name, summary["passed"], failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
