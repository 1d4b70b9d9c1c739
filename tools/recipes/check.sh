#!/bin/bash
# Checks the recipes of spec/arithmetic.md#recipes-by-language: builds and runs
# one small program per language (tools/recipes/recipe.*), each computing the
# spec's PRNG outputs (spec/rng.md), unsigned 64-bit handling, the spec's
# integer divisions, ratio budgets in binary64 (spec/prefill.md), field
# presence, uint32 fields above 2^31, the sign bit of -0.0, and exp and log
# (spec/elementary.md's golden table and spot checks), and compares each
# program's output with expected.txt, whose values come from the spec's
# golden tables and exact integer arithmetic.
#
# Prints "recipe-<lang>: ok", "recipe-<lang>: FAIL (...)" with the difference,
# or "recipe-<lang>: skipped (...)" when the toolchain is not installed, then
# "recipes: N passed, M failed, K skipped". Exit status 0 unless one failed.
#
# TypeScript: the JavaScript program is written with JSDoc types and
# type-checked by `tsc --checkJs --strict`; tsc is taken from $KVSPEC_TSC, from
# PATH, or installed once (npm, typescript@5.9.3) into
# ${XDG_CACHE_HOME:-~/.cache}/kvspec-recipes, outside the work tree.
#
#   tools/recipes/check.sh
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
expected="$here/expected.txt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 skipped=0

# report LANG OUTPUT_FILE STATUS: compares a run's output with expected.txt.
report() {
  local lang="$1" out="$2" status="$3"
  if [[ "$status" -ne 0 ]]; then
    echo "recipe-$lang: FAIL (exit status $status)"
    sed 's/^/    /' "$out" | tail -20
    failed=$((failed + 1))
  elif diff -u "$expected" "$out" >"$work/$lang.diff"; then
    echo "recipe-$lang: ok"
    passed=$((passed + 1))
  else
    echo "recipe-$lang: FAIL (output differs from expected.txt)"
    sed 's/^/    /' "$work/$lang.diff"
    failed=$((failed + 1))
  fi
}
skip() {
  echo "recipe-$1: skipped ($2)"
  skipped=$((skipped + 1))
}
# build LANG COMMAND...: runs a build step; on failure reports FAIL.
build() {
  local lang="$1"
  shift
  if ! "$@" >"$work/$lang.build" 2>&1; then
    echo "recipe-$lang: FAIL (build: $*)"
    sed 's/^/    /' "$work/$lang.build" | tail -20
    failed=$((failed + 1))
    return 1
  fi
}
have() { command -v "$1" >/dev/null 2>&1; }

# C++: the reference's own flags (no contraction, no fast-math).
cxx="${CXX:-g++}"
if have "$cxx"; then
  if build cpp "$cxx" -std=c++17 -O2 -Wall -Wextra -Werror -ffp-contract=off \
      "$here/recipe.cc" -o "$work/recipe-cpp"; then
    "$work/recipe-cpp" >"$work/cpp.out" 2>&1
    report cpp "$work/cpp.out" $?
  fi
else
  skip cpp "no $cxx"
fi

# Rust: overflow checks on, so an unmasked wrapping * or + panics.
if have rustc; then
  if build rust rustc --edition 2021 -C opt-level=1 -C overflow-checks=on \
      -o "$work/recipe-rust" "$here/recipe.rs"; then
    "$work/recipe-rust" >"$work/rust.out" 2>&1
    report rust "$work/rust.out" $?
  fi
else
  skip rust "no rustc"
fi

# Go: a single file outside any module.
if have go; then
  # Built from the temporary folder, so no go.mod above the file is used.
  if build go bash -c 'cd "$1" && go build -o recipe-go "$2"' _ "$work" "$here/recipe.go"; then
    "$work/recipe-go" >"$work/go.out" 2>&1
    report go "$work/go.out" $?
  fi
else
  skip go "no go"
fi

# Java 17+.
if have javac && have java; then
  if build java javac -d "$work/java" "$here/Recipe.java"; then
    java -cp "$work/java" Recipe >"$work/java.out" 2>&1
    report java "$work/java.out" $?
  fi
else
  skip java "no javac/java"
fi

# Python 3.
if have python3; then
  python3 "$here/recipe.py" >"$work/python.out" 2>&1
  report python "$work/python.out" $?
else
  skip python "no python3"
fi

# JavaScript (node), then the same file type-checked as TypeScript.
js_ok=0
if have node; then
  node "$here/recipe.mjs" >"$work/javascript.out" 2>&1
  status=$?
  before=$failed
  report javascript "$work/javascript.out" $status
  [[ $failed -eq $before ]] && js_ok=1
else
  skip javascript "no node"
fi

ts_version=5.9.3
ts_cache="${XDG_CACHE_HOME:-$HOME/.cache}/kvspec-recipes/typescript-$ts_version"
tsc="${KVSPEC_TSC:-}"
if [[ -z "$tsc" ]] && have tsc; then tsc="$(command -v tsc)"; fi
if [[ -z "$tsc" && -x "$ts_cache/node_modules/.bin/tsc" ]]; then
  tsc="$ts_cache/node_modules/.bin/tsc"
fi
if [[ -z "$tsc" ]] && have npm && have node; then
  mkdir -p "$ts_cache" &&
    npm install --prefix "$ts_cache" --no-save --no-package-lock --no-audit \
      --no-fund --loglevel=error "typescript@$ts_version" >"$work/npm.log" 2>&1 &&
    [[ -x "$ts_cache/node_modules/.bin/tsc" ]] && tsc="$ts_cache/node_modules/.bin/tsc"
fi
if ! have node; then
  skip typescript "no node"
elif [[ -z "$tsc" ]]; then
  skip typescript "no tsc, and installing typescript@$ts_version with npm failed"
elif "$tsc" --noEmit --allowJs --checkJs --strict --skipLibCheck --target es2020 \
    --module es2022 "$here/recipe.mjs" >"$work/ts.out" 2>&1; then
  if [[ $js_ok -eq 1 ]]; then
    echo "recipe-typescript: ok (tsc $("$tsc" --version | sed 's/^Version //'); output checked as recipe-javascript)"
    passed=$((passed + 1))
  else
    echo "recipe-typescript: FAIL (types check, but the program's output is wrong: see recipe-javascript)"
    failed=$((failed + 1))
  fi
else
  echo "recipe-typescript: FAIL (tsc --checkJs --strict)"
  sed 's/^/    /' "$work/ts.out" | tail -20
  failed=$((failed + 1))
fi

echo "recipes: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
