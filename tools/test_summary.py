#!/usr/bin/env python3
"""Prints "tests: N passed, N failed" for the Bazel run whose output is in argv[1].

argv[3:], if given, are lines "NAME: N passed, M failed" from other checkers
(tools/determinism.sh, tools/test_ports.sh, tools/kvpress/check.sh) whose
counts are added; a line
without such counts counts as one failure.

Only the test targets that this run's summary lists are counted; for each,
the test cases come from its test.xml under the testlogs folder (argv[2]).
A target that failed without a readable test.xml (it timed out, crashed
before writing one, or did not build) counts as one failed case, so a
failure can never disappear from the count.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS = re.compile(r"^(//[^\s]+)\s+(?:\(cached\)\s+)?"
                    r"(PASSED|FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE|"
                    r"FAILED TO BUILD|REMOTE FAILURE)\b")


def cases(xml_path):
    """(passed, failed) test cases recorded in one test.xml, or None."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    total = failed = 0
    for case in root.iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
    if total == 0:
        return None
    return total - failed, failed


def main():
    log_path, testlogs = sys.argv[1], sys.argv[2]
    passed = failed = targets = 0
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            match = STATUS.match(line.strip())
            if not match:
                continue
            targets += 1
            label, status = match.group(1), match.group(2)
            package, _, name = label[2:].partition(":")
            counted = cases(os.path.join(testlogs, package, name, "test.xml"))
            ok = status in ("PASSED", "FLAKY")
            if counted is None:
                passed, failed = passed + ok, failed + (not ok)
            else:
                p, f = counted
                if not ok and f == 0:
                    f = 1  # the target failed although every case passed
                passed, failed = passed + p, failed + f
    for line in sys.argv[3:]:
        extra = re.search(r"(\d+) passed, (\d+) failed", line)
        if extra:
            passed += int(extra.group(1))
            failed += int(extra.group(2))
        elif re.match(r"^[a-z.-]+: not run \(.+\)$", line):
            pass  # a check that says why it did not run: counted in neither
        else:
            failed += 1
        print(f"  {line}")
    print(f"({targets} Bazel test targets, plus the {len(sys.argv) - 3} checks above)")
    print(f"tests: {passed} passed, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
