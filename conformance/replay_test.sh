#!/bin/bash
# A porter's first hour: a broken port's mismatch report marks the first
# differing victim, and its replay line runs as printed outside Bazel (no
# runfiles, no Bazel variables, another working directory) and reruns that
# one case with the same result.
set -u
src="$TEST_SRCDIR/kvspec"
outside="$TEST_TMPDIR/outside"
mkdir -p "$outside"
cp "$src/conformance/runner" "$src/conformance/testee/fake_port" "$outside/"
cp -r "$src/vectors" "$outside/vectors"
case_id=window/defaults/budget-512
port="$outside/fake_port --mode=wrong_late_victim --on_case=$case_id"

cd "$outside" || exit 1
out="$(./runner --vectors=vectors --policy=window --port="$port" 2>&1)"
status=0
check() {  # description, text, pattern
  if grep -qF -- "$3" <<<"$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no '$3' in:"; echo "$2" | head -30; status=1
  fi
}
check "the mismatch is reported" "$out" "$case_id: mismatch"
check "the first differing victim is marked" "$out" \
  "actual   victims [... 2 3 4 5 >>100006<< 7 8 9 10 ...] (88 in all)"
replay="$(grep -m1 '^ *replay: ' <<<"$out" | sed 's/^ *replay: //')"
check "a replay line names the runner binary" "$replay" "$outside/runner"
check "and the case" "$replay" "--case=$case_id"

# Run it exactly as printed, from elsewhere, with a bare environment.
again="$(cd / && env -i PATH=/usr/bin:/bin /bin/sh -c "$replay" 2>&1)"
check "the replay reruns the case" "$again" "$case_id: mismatch"
check "the replay runs that case alone" "$again" "0 passed, 1 failed"
check "the replay shows the same difference" "$again" ">>100006<<"
exit $status
