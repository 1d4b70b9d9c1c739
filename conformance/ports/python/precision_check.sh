#!/bin/bash
# The Python port's precision builds against the runner (spec/protocol.md#precision,
# kvspec_port/precision.py): each build that declares a precision below
# binary64 must give 0 failures (cases inside its band are `within
# precision`), and the same build with a planted rule error must still fail.
#
#   conformance/ports/python/precision_check.sh      (after `bazel build //conformance:runner`)
#
# Prints, per build, the runner's closing line, then
#   python-precision: P passed, F failed
# (a build that fails a case, or a planted error no case catches, is a
# failure). 51 s here (2026-12-07; it took 138 s run one after another with
# the planted runs going through every case of their policy).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cd "$repo"
runner="${KVSPEC_RUNNER:-$(bazel info bazel-bin 2>/dev/null)/conformance/runner}"
python="$here/.venv/bin/python"
[[ -x "$python" ]] || python=python3
[[ -x "$runner" ]] || { echo "python-precision: 0 passed, 1 failed (no runner at $runner)"; exit 1; }
passed=0
failed=0
planted="$(mktemp -d)"
trap 'rm -rf "$planted"' EXIT
# Two rule errors, each in a copy of the port: h2o credits every other
# step only; tova keeps an older row when the step's row is odd in length.
cp -r "$here/kvspec_port" "$planted/h2o"
cp -r "$here/kvspec_port" "$planted/tova"
sed -i 's|self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + np.asarray(attention, dtype=np.float64)|self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + np.asarray(attention, dtype=np.float64) * (len(attention) % 2)|' \
  "$planted/h2o/policies/h2o.py"
sed -i 's|        self.latest = np.asarray(attention, dtype=np.float64)|        self.latest = np.asarray(attention, dtype=np.float64) if len(attention) % 2 == 0 else np.asarray(self.latest, dtype=np.float64)|' \
  "$planted/tova/policies/tova.py"
for name in h2o tova; do
  if cmp -s "$here/kvspec_port/policies/$name.py" "$planted/$name/policies/$name.py"; then
    echo "planted $name: the patch did not apply"; failed=$((failed + 1))
  fi
  mkdir -p "$planted/$name-pkg" && mv "$planted/$name" "$planted/$name-pkg/kvspec_port"
done
# Nine runs, two at a time (each is the runner and one Python process taking
# turns: about one core), each into its own file; then read in order. A
# planted run stops at its first failure (--stop_after_failures=1).
precisions=(binary32 bfloat16/binary32 bfloat16)
run() {  # index precision [planted policy]
  if [[ -z "${3:-}" ]]; then
    KVSPEC_PORT_PRECISION=$2 "$runner" --vectors=vectors --port="$here/port.sh" \
      >"$planted/run.$1" 2>&1
  else
    KVSPEC_PORT_PRECISION=$2 "$runner" --vectors=vectors --policy=$3 --stop_after_failures=1 \
      --port="env PYTHONPATH=$planted/$3-pkg $python -m kvspec_port" >"$planted/run.$1" 2>&1
  fi
  echo $? >"$planted/code.$1"
}
n=0
for precision in "${precisions[@]}"; do
  for name in "" h2o tova; do
    while [[ $(jobs -rp | wc -l) -ge $(nproc) ]]; do wait -n; done
    run $n "$precision" $name &
    n=$((n + 1))
  done
done
wait
n=0
for precision in "${precisions[@]}"; do
  out="$(cat "$planted/run.$n")"
  code="$(cat "$planted/code.$n" 2>/dev/null || echo died)"
  n=$((n + 1))
  line="$(echo "$out" | tail -1)"
  echo "$precision: $line"
  if [[ $code == 0 ]] && grep -qE '^[0-9]+ passed, [0-9]+ within precision, 0 failed' <<<"$line"; then
    passed=$((passed + 1))
  else
    echo "$out" | grep -E ': (mismatch|wrong accept|wrong reject|error|crash|timeout|protocol error)$' | head -5
    failed=$((failed + 1))
  fi
  for name in h2o tova; do
    out="$(cat "$planted/run.$n")"
    n=$((n + 1))
    line="$(echo "$out" | tail -1)"
    caught="$(echo "$out" | grep -oE '^[a-z0-9/.-]+: (mismatch|wrong accept|wrong reject)$' | head -1)"
    if grep -qE ' [1-9][0-9]* failed' <<<"$line" && [[ -n "$caught" ]]; then
      echo "$precision, planted $name error: caught ($line; first: $caught)"
      passed=$((passed + 1))
    else
      echo "$precision, planted $name error: NOT caught ($line)"
      failed=$((failed + 1))
    fi
  done
done
echo "python-precision: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
