#!/bin/bash
# The cards' "prefill" blocks match what the benchmark computes now
# (spec/measures.md#prefill), and the check can fail: a copy with one
# altered figure is reported stale.
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
tools/bench/bench_opt --check --sections=prefill --root=. --out_dir="$tmp" || exit 1
mkdir -p "$tmp/copy/spec/policies"
cp spec/policies/*.md "$tmp/copy/spec/policies/"
sed -i '/BEGIN GENERATED: prefill/,/END GENERATED: prefill/ s/| 0\.8043 (/| 0.9043 (/' \
  "$tmp/copy/spec/policies/tova.md"
if cmp -s spec/policies/tova.md "$tmp/copy/spec/policies/tova.md"; then
  echo "FAIL: the alteration did not change tova.md"; exit 1
fi
out=$(tools/bench/bench_opt --check --sections=prefill --root="$tmp/copy" --out_dir="$tmp" 2>/dev/null)
status=$?
echo "$out"
if [[ $status -ne 1 ]] || ! grep -q 'tova.md: stale' <<<"$out"; then
  echo "FAIL: want tova.md reported stale (exit 1), got exit $status"; exit 1
fi
echo "PASS"
