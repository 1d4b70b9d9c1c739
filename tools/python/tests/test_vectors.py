"""Every vector case through the package's API (kvspec.run_case), its
eviction log compared with the case's expected one, field for field
(protobuf equality: victims, kept counts, query positions, cuts with their
binary64 scores, spans, the rejection's category, step and subject).

    tools/.venv-torch/bin/python tools/python/tests/test_vectors.py [VECTORS_DIR]

Prints the first differences and, last, "python-api-vectors: P passed, F
failed"; exit 1 on any failure. A refusal's message is for people and not
compared (spec/harness.md#eviction-log), as the runner does.
"""
import glob
import os
import sys
import time

import kvspec
from kvspec import pb

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def main(argv):
    folder = argv[1] if len(argv) > 1 else os.path.join(REPO, "vectors")
    began = time.monotonic()
    files = sorted(glob.glob(os.path.join(folder, "*.pb")))
    if not files:
        print(f"no vector files in {folder}")
        print("python-api-vectors: 0 passed, 1 failed")
        return 1
    passed = failed = 0
    for path in files:
        with open(path, "rb") as f:
            vectors = pb.VectorFile.FromString(f.read())
        if vectors.spec_version != kvspec.spec_version:
            print(f"FAIL {os.path.basename(path)}: spec {vectors.spec_version}, "
                  f"the package's reference {kvspec.spec_version}")
            failed += 1
            continue
        scenarios = {s.id: s for s in vectors.scenarios}
        for case in vectors.cases:
            got = kvspec.run_case(case, scenarios[case.scenario_id]).log
            want = pb.EvictionLog()
            want.CopyFrom(case.expected)
            got.rejection.message = want.rejection.message = ""
            if got == want:
                passed += 1
                continue
            failed += 1
            if failed <= 5:
                print(f"FAIL {case.id}:\n  got  {str(got)[:400]}\n  want {str(want)[:400]}")
    print(f"{passed + failed} cases from {len(files)} files in "
          f"{time.monotonic() - began:.1f} s")
    print(f"python-api-vectors: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
