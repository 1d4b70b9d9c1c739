#!/usr/bin/env bash
# Mutation testing of the kvspec Rust port against the vectors.
#
# Runs cargo-mutants (installed beforehand: `cargo install cargo-mutants
# --locked`; this script installs nothing) over conformance/ports/rust with
# tests/vectors.rs as the only kill test, so survivors measure the vectors,
# not the port's unit tests. Configuration and exclusions, with reasons:
# .cargo/mutants.toml. Then prints one line:
#
#   rust-mutation: generated N, killed K, equivalent E, untestable U, survived S, timeout T
#
# where equivalent counts the survivors listed in mutants-equivalent.md (a
# line starting "- `<mutant name>`", the name exactly as cargo-mutants
# prints it), untestable those listed under its heading about 2^32
# positions (no vector of a feasible size tells them apart), and survived
# the others; a second line gives the unviable
# mutants (those that do not build), which are in N but in no other count.
#
# Usage: mutation/run.sh [cargo-mutants options...]
#   e.g. mutation/run.sh --shard 0/8 --sharding round-robin
#     a reproducible eighth for CI: mutants 0, 8, 16, ... of the list
#     (`cargo mutants --list`), the same every run of the same tree, spread
#     over every file (the default slice sharding takes a consecutive run).
#
# Environment:
#   KVSPEC_VECTORS   vectors directory (default: the repository's vectors/)
#   KVSPEC_ROOT      directory holding spec/*.proto for build.rs (default: the
#                    repository root). Both must be absolute or are made so:
#                    cargo-mutants builds a copy of the crate elsewhere.
#   MUTANTS_OUT      where mutants.out/ goes (default: target/mutation)
#   MUTANTS_JOBS     parallel cargo-mutants jobs (default: 1)
#   MUTANTS_REPORT_ONLY=1  run nothing; recount an existing mutants.out
#
# Exit status: 0 when no mutant survives outside the equivalents file, 1 when
# some do (listed on stderr), 2 when cargo-mutants itself failed (for
# example the unmutated baseline fails the vector test).
set -euo pipefail

here=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
repo=$(CDPATH= cd -- "$here/../../.." && pwd)
cd "$here"

abs() { (CDPATH= cd -- "$1" && pwd); }
export KVSPEC_VECTORS=$(abs "${KVSPEC_VECTORS:-$repo/vectors}")
export KVSPEC_ROOT=$(abs "${KVSPEC_ROOT:-$repo}")
out=${MUTANTS_OUT:-$here/target/mutation}
mkdir -p "$out"
out=$(abs "$out")
jobs=${MUTANTS_JOBS:-1}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-$jobs}

if [[ "${MUTANTS_REPORT_ONLY:-0}" != 1 ]] && ! cargo mutants --version >/dev/null 2>&1; then
  echo "run.sh: cargo-mutants is not installed (cargo install cargo-mutants --locked)" >&2
  exit 2
fi

rc=0
if [[ "${MUTANTS_REPORT_ONLY:-0}" != 1 ]]; then
  rm -rf "$out/mutants.out"
  set +e
  cargo mutants --jobs "$jobs" --output "$out" --colors never "$@" -- --test vectors
  rc=$?
  set -e
fi
# cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; others are
# failures of the run itself (1 usage, 4 baseline failed).
case $rc in
  0|2|3) ;;
  *) echo "run.sh: cargo-mutants failed (exit $rc); see $out/mutants.out" >&2; exit 2 ;;
esac

mo=$out/mutants.out
count() { if [[ -s "$mo/$1" ]]; then grep -c . "$mo/$1"; else echo 0; fi; }
caught=$(count caught.txt)
missed=$(count missed.txt)
timeout=$(count timeout.txt)
unviable=$(count unviable.txt)
generated=$((caught + missed + timeout + unviable))

equivalents=$here/mutants-equivalent.md
# Entries under a heading that names "2^32 positions" are not equivalent:
# a vector would need about 2^32 admitted positions (16 GiB), so no vector
# of a feasible size kills them. They are counted apart, as untestable.
untestable_names=""
if [[ -f "$equivalents" ]]; then
  untestable_names=$(awk '/^## /{u = index($0, "2^32 positions") > 0}
    u && /^- `/{s = $0; sub(/^- `/, "", s); sub(/`.*/, "", s); print s}' "$equivalents")
fi
equivalent=0
untestable=0
survivors=()
if [[ -s "$mo/missed.txt" ]]; then
  while IFS= read -r m; do
    [[ -z "$m" ]] && continue
    if [[ -n "$untestable_names" ]] && grep -qxF -- "$m" <<<"$untestable_names"; then
      untestable=$((untestable + 1))
    elif [[ -f "$equivalents" ]] && grep -qF -- "- \`$m\`" "$equivalents"; then
      equivalent=$((equivalent + 1))
    else
      survivors+=("$m")
    fi
  done <"$mo/missed.txt"
fi
survived=${#survivors[@]}

for m in "${survivors[@]}"; do echo "survived: $m" >&2; done
if [[ -s "$mo/timeout.txt" ]]; then sed 's/^/timeout: /' "$mo/timeout.txt" >&2; fi
echo "rust-mutation: generated $generated, killed $caught, equivalent $equivalent, untestable $untestable, survived $survived, timeout $timeout"
echo "rust-mutation: unviable $unviable (do not build; included in generated)"
[[ $survived -eq 0 ]]
