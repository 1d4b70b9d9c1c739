#!/bin/bash
# The cards' "what it buys" blocks and the plots match what the benchmark
# computes now (spec/measures.md); and the check can fail: a copy of the
# checkout with one altered figure is reported stale.
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

tools/bench/bench_opt --check --root=. --out_dir="$tmp" || exit 1

mkdir -p "$tmp/copy/spec/policies" "$tmp/copy/spec/figures"
cp spec/policies/*.md "$tmp/copy/spec/policies/"
cp spec/figures/*.svg "$tmp/copy/spec/figures/"
# Alter one digit inside tova's generated block.
sed -i '/BEGIN GENERATED: what_it_buys/,/END GENERATED: what_it_buys/ s/| 256 | 0\./| 256 | 9./' \
  "$tmp/copy/spec/policies/tova.md"
if cmp -s spec/policies/tova.md "$tmp/copy/spec/policies/tova.md"; then
  echo "FAIL: the alteration did not change tova.md"; exit 1
fi
out=$(tools/bench/bench_opt --check --root="$tmp/copy" --out_dir="$tmp" 2>/dev/null)
status=$?
echo "$out"
if [[ $status -ne 1 ]]; then echo "FAIL: --check exited $status on a stale card, want 1"; exit 1; fi
if [[ $(grep -c ': stale' <<<"$out") -ne 1 ]] || ! grep -q 'tova.md: stale' <<<"$out"; then
  echo "FAIL: want exactly tova.md reported stale"; exit 1
fi
echo "PASS"
