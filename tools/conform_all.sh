#!/bin/bash
# The main job: runs every vector against every bundled port (the reference
# testee, Rust, Python) through the conformance runner, and ends with one
# table, port by policy, passed/failed, with each port's wall time.
#
#   tools/conform_all.sh          (after tools/setup.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "building the runner and the reference testee" >&2
bazel build -c opt //conformance:runner //conformance/testee:reference_testee \
  >"$work/bazel.log" 2>&1 || { cat "$work/bazel.log"; exit 2; }
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
ports=("reference:$bin/conformance/testee/reference_testee:conformance/testee/reference.expectations")
if command -v cargo >/dev/null; then
  echo "building the Rust port" >&2
  (cd conformance/ports/rust && cargo build --release -q) >&2 \
    && ports+=("rust:$repo/conformance/ports/rust/port.sh:conformance/ports/rust/rust.expectations")
fi
if [[ -x conformance/ports/python/port.sh && -f conformance/ports/python/python.expectations ]]; then
  ports+=("python:$repo/conformance/ports/python/port.sh:conformance/ports/python/python.expectations")
fi

status=0
for entry in "${ports[@]}"; do
  IFS=: read -r name command expectations <<<"$entry"
  echo "running $name" >&2
  start=$(date +%s.%N)
  "$bin/conformance/runner" --vectors=vectors --port="$command" --require_all \
    --expectations="$expectations" --json="$work/$name.json" >"$work/$name.txt" 2>&1 \
    || { status=1; echo "== $name: unexpected outcomes =="; grep -E '^FAIL|: (mismatch|wrong|crash|timeout|protocol|error)' "$work/$name.txt" | head -20; }
  # Wall time of the whole run: port start-up, every case, the comparison.
  echo "$start $(date +%s.%N)" | awk '{printf "%.1f\n", $2 - $1}' >"$work/$name.seconds"
done
python3 - "$work" "${ports[@]}" <<'PY'
import json, sys
KNOWN = {"full", "window", "streamingllm", "h2o", "tova", "snapkv", "random", "openvino",
         "knorm", "keydiff", "lagkv", "simlayerkv"}
work, entries = sys.argv[1], sys.argv[2:]
names = [e.split(":")[0] for e in entries]
table, policies = {}, set()
for name in names:
    try:
        summary = json.load(open(f"{work}/{name}.json"))
    except OSError:
        table[name] = None
        continue
    counts = {}
    for case in summary["cases"]:
        p, ok = case["policy"], case["outcome"] == "pass"
        if p not in KNOWN:
            p = "(unregistered)"  # a refusal case naming no policy
        policies.add(p)
        c = counts.setdefault(p, [0, 0])
        c[0 if ok else 1] += 1
    table[name] = counts
policies = sorted(policies)
print("| port | " + " | ".join(policies) + " | total | wall time |")
print("| --- |" + " ---: |" * (len(policies) + 2))
for name in names:
    counts = table[name]
    if counts is None:
        print(f"| {name} | " + " | ".join("-" for _ in policies) + " | did not run | |")
        continue
    cells = [f"{counts.get(p, [0, 0])[0]}/{sum(counts.get(p, [0, 0]))}" for p in policies]
    passed = sum(c[0] for c in counts.values()); total = sum(sum(c) for c in counts.values())
    seconds = open(f"{work}/{name}.seconds").read().strip()
    print(f"| {name} | " + " | ".join(cells) + f" | {passed}/{total} | {seconds} s |")
print("\ncells are cases passed / cases run, per port and policy; wall time is the"
      "\nwhole conformance run of each port, one after the other on this machine")
PY
exit $status
