#!/bin/bash
# The differential search as CI runs it (tools/README.md#search): a fixed
# seed and budget against the reference testee and each bundled port, then
# the rediscovery check: against each Python port mutant named "blind.*"
# (one blind spot of issue 19 each, conformance/ports/python/mutants/
# run_mutant.py), the search at the same budget, without any vector, must
# find a disagreement.
#
#   tools/search/check.sh        (after tools/setup.sh --tests and the
#                                 Rust port's release build: tools/test_ports.sh)
#
# Prints one line per check for tools/test_summary.py:
#   search-<port>: A passed, D failed     cases agreed / disagreed
#   search-rediscover: F passed, M failed  blind mutants found / missed
# Exit status 1 if any check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
SEED=${KVSPEC_SEARCH_SEED:-1}
status=0

if ! bazel build //tools/search:search_opt //conformance:reference_testee_opt >/dev/null 2>&1; then
  echo "search-build: 0 passed, 1 failed (bazel build //tools/search:search_opt failed)"
  exit 1
fi
bin="$(bazel info bazel-bin 2>/dev/null)"
search="$bin/tools/search/search_opt"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

run() {  # name, cases, port command
  local text line agreed disagreed
  text="$("$search" --port="$3" --seed="$SEED" --cases="$2" --out="$out/$1" 2>&1)"
  echo "$text" | grep -E '^search: '
  if echo "$text" | grep -q '^DISAGREEMENT'; then echo "$text" | sed -n '/^DISAGREEMENT/,$p' | head -80; fi
  line="$(echo "$text" | tail -1)"
  agreed=$(grep -oE '^[0-9]+ agreed' <<<"$line" | grep -oE '[0-9]+')
  disagreed=$(grep -oE '[0-9]+ disagreed' <<<"$line" | grep -oE '[0-9]+')
  if [[ -z "$agreed" || -z "$disagreed" ]]; then
    echo "$text" | tail -5
    echo "search-$1: 0 passed, 1 failed (no closing line)"; status=1; return
  fi
  [[ $disagreed -eq 0 ]] || status=1
  echo "search-$1: $agreed passed, $disagreed failed"
}

run reference 20000 "$bin/conformance/reference_testee_opt"
run rust 20000 "$repo/conformance/ports/rust/port.sh"
py=conformance/ports/python/.venv/bin/python
run python 5000 "$repo/conformance/ports/python/port.sh"

# Rediscovery: each blind-spot mutant, no vectors, the same seed and a
# budget of 2000 cases (the search stops at the first disagreement).
found=0; missed=0
while IFS=$'\t' read -r name _ rule; do
  [[ $name == blind.* ]] || continue
  text="$("$search" --port="$repo/$py $repo/conformance/ports/python/mutants/run_mutant.py $name" \
          --seed="$SEED" --cases=2000 --shrink_seconds=60 --out="$out/$name" 2>&1)"
  first="$(grep -m1 '^DISAGREEMENT' <<<"$text")"
  if [[ -n "$first" ]]; then
    found=$((found + 1))
    echo "found   $name: ${first#DISAGREEMENT 1: }"
  else
    missed=$((missed + 1))
    echo "MISSED  $name ($rule): $(tail -1 <<<"$text")"
  fi
done < <("$py" conformance/ports/python/mutants/run_mutant.py --list)
[[ $missed -eq 0 && $found -gt 0 ]] || status=1
echo "search-rediscover: $found passed, $missed failed"
exit $status
