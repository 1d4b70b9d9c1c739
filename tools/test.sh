#!/bin/bash
# The README's test command (after tools/setup.sh): first `tools/setup.sh
# --tests` (what only the tests need: clang and its fuzzer runtime, the
# mutation testers, the torch environment), then every Bazel test, then
# tools/determinism.sh (the vectors built by g++ and clang++ at several
# optimisation levels are byte-identical), then tools/fuzz.sh 20 (every
# parser of outside input fuzzed for 20 s: about 3 minutes on two cores
# with the compile), then tools/test_ports.sh (each bundled port's unit
# tests and its conformance run), then tools/search/check.sh (the differential
# search on a fixed seed against the reference and each port, and its
# rediscovery of each blind-spot mutant), then tools/old_ports.sh (the Python port of each
# earlier spec version, from git history, gets no failure), then
# tools/recipes/check.sh (spec/arithmetic.md's recipes, run in each
# language here), then tools/kvpress/check.sh (kvpress 0.5.5's model-free
# helpers' self-test; its presses inside a tiny model's forward pass against
# kvspec, tools/kvpress/model_disagreements.txt, and inside SmolLM2-135M-
# Instruct's, tools/kvpress/smollm2_disagreements.txt, and in bfloat16, float16
# and float32 judged by the runner, with planted rule errors that must
# fail in float32; then its DecodingPress on
# the vectors of its preset, tools/kvpress/decoding_disagreements.txt, and
# in the model), then tools/python/check.sh (the kvspec package: every
# vector case through its API, and its API on hand-worked cases), then each
# engine adapter's check
# (conformance/engines/*/check.sh: transformers 5.2.0 and mlx-lm 0.32.2
# driven through the runner, every deviation listed in their expectation
# files; kvpress 0.5.5's presses on the vectors of its presets in float32,
# bfloat16 and float16, judged at the precision each declares, and planted
# rule errors that must fail at each; llama.cpp's and OpenVINO GenAI's only
# when their setup.sh was run, else "not run"), and
# then tools/docs/check_links.py (every relative link of the Markdown
# files leads to a file and heading that exist), and
# ends with one line, "tests: N passed, N failed", counting test cases
# (GoogleTest cases, one per shell test target, one per determinism
# configuration, one per fuzz target that found nothing, unit tests and
# conformance cases of each port, search
# cases that agreed and blind-spot mutants the search found, one per old
# port and per recipe, the kvpress check's self-test checks and vector
# cases, the cases each engine adapter passed, one per link checked).
#
#   tools/test.sh [extra bazel test flags]
set -uo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall time, printed as it ends and in a table before the
# closing line (tools/README.md#testsh-every-test keeps the budget).
stage_names=()
stage_seconds=()
# stage NAME OUTPUT COMMAND...: runs COMMAND, its output shown and appended
# to OUTPUT; returns its exit status.
stage() {
  local name="$1" output="$2"
  shift 2
  local start=$SECONDS
  "$@" 2>&1 | tee -a "$output"
  local rc=${PIPESTATUS[0]}
  stage_names+=("$name")
  stage_seconds+=($((SECONDS - start)))
  echo "stage $name: $((SECONDS - start)) s"
  echo
  return "$rc"
}
all_start=$SECONDS

log="$(mktemp)"
setup_log="$(mktemp)"
determinism="$(mktemp)"
fuzz="$(mktemp)"
ports="$(mktemp)"
old="$(mktemp)"
recipes="$(mktemp)"
search="$(mktemp)"
kvpress="$(mktemp)"
engines="$(mktemp)"
docs="$(mktemp)"
python_api="$(mktemp)"
trap 'rm -f "$log" "$setup_log" "$determinism" "$fuzz" "$ports" "$old" "$recipes" "$search" "$kvpress" "$engines" "$docs" "$python_api"' EXIT
if ! stage setup-tests "$setup_log" tools/setup.sh --tests; then
  echo "tests: 0 passed, 1 failed (tools/setup.sh --tests failed)"
  exit 1
fi
stage bazel-test "$log" bazel test //... --test_summary=short "$@"
status=$?
stage determinism "$determinism" tools/determinism.sh
determinism_status=$?
stage fuzz "$fuzz" tools/fuzz.sh 20
fuzz_status=$?
stage ports "$ports" tools/test_ports.sh
ports_status=$?
stage search "$search" tools/search/check.sh
search_status=$?
stage old-ports "$old" tools/old_ports.sh
old_status=$?
stage recipes "$recipes" tools/recipes/check.sh
recipes_status=$?
stage kvpress "$kvpress" tools/kvpress/check.sh
kvpress_status=$?
stage python-api "$python_api" tools/python/check.sh
python_api_status=$?
engines_status=0
for check in conformance/engines/*/check.sh; do
  engine="$(basename "$(dirname "$check")")"
  stage "engine-$engine" "$engines" "$check" || engines_status=1
done
stage docs "$docs" bash -c 'python3 tools/docs/check_links.py --selftest; a=$?
  python3 tools/docs/check_links.py; exit $((a | $?))'
docs_status=$?
extra=("$(grep '^determinism:' "$determinism" || echo 'determinism: 0 passed, 1 failed')")
extra+=("$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$fuzz" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='fuzz: 0 passed, 1 failed (no closing line)'
while IFS= read -r line; do extra+=("$line"); done < <(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$ports")
n_search=${#extra[@]}
while IFS= read -r line; do extra+=("$line"); done < <(grep -E '^search-[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$search")
[[ ${#extra[@]} -gt $n_search ]] || extra+=('search: 0 passed, 1 failed (no closing line)')
extra+=("$(grep -E '^old-ports: [0-9]+ passed, [0-9]+ failed' "$old" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='old-ports: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^recipes: [0-9]+ passed, [0-9]+ failed' "$recipes" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='recipes: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-selftest: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-selftest: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-model-selftest: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-model-selftest: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-model: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-model: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-smollm2: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-smollm2: 0 passed, 1 failed (no closing line)'
for name in kvpress-model-bfloat16 kvpress-model-float16 kvpress-model-float32 kvpress-model-planted; do
  extra+=("$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$kvpress" | tail -1 || true)")
  [[ -n "${extra[-1]}" ]] || extra[-1]="$name: 0 passed, 1 failed (no closing line)"
done
extra+=("$(grep -E '^kvpress-decoding-selftest: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-decoding-selftest: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-decoding: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-decoding: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-decoding-model-selftest: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-decoding-model-selftest: 0 passed, 1 failed (no closing line)'
extra+=("$(grep -E '^kvpress-decoding-model: [0-9]+ passed, [0-9]+ failed' "$kvpress" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-decoding-model: 0 passed, 1 failed (no closing line)'
for name in kvpress-simlayerkv-vectors kvpress-simlayerkv-selftest kvpress-simlayerkv-model kvpress-simlayerkv-smollm2; do
  extra+=("$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$kvpress" | tail -1 || true)")
  [[ -n "${extra[-1]}" ]] || extra[-1]="$name: 0 passed, 1 failed (no closing line)"
done
for name in python-api-vectors python-api; do
  extra+=("$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$python_api" | tail -1 || true)")
  [[ -n "${extra[-1]}" ]] || extra[-1]="$name: 0 passed, 1 failed (no closing line)"
done
for engine in transformers mlx-lm kvpress-float32 kvpress-bfloat16 kvpress-float16; do
  extra+=("$(grep -E "^$engine-adapter: [0-9]+ passed, [0-9]+ failed" "$engines" | tail -1 || true)")
  [[ -n "${extra[-1]}" ]] || extra[-1]="$engine-adapter: 0 passed, 1 failed (no closing line)"
done
extra+=("$(grep -E '^kvpress-planted: [0-9]+ passed, [0-9]+ failed' "$engines" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='kvpress-planted: 0 passed, 1 failed (no closing line)'
# llama.cpp: run when its setup.sh has built llama-cpp-python (21 minutes,
# not in CI); otherwise its check says so in a "not run (...)" line.
extra+=("$(grep -E '^llama\.cpp-adapter: ([0-9]+ passed, [0-9]+ failed|not run \()' "$engines" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='llama.cpp-adapter: 0 passed, 1 failed (no closing line)'
# OpenVINO GenAI: run where its setup.sh has compiled GenAI's cache eviction
# from a GenAI checkout (not in CI); otherwise "not run (...)".
extra+=("$(grep -E '^openvino-genai-adapter: ([0-9]+ passed, [0-9]+ failed|not run \()' "$engines" | tail -1 || true)")
[[ -n "${extra[-1]}" ]] || extra[-1]='openvino-genai-adapter: 0 passed, 1 failed (no closing line)'
for name in docs-links-selftest docs-links; do
  extra+=("$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$docs" | tail -1 || true)")
  [[ -n "${extra[-1]}" ]] || extra[-1]="$name: 0 passed, 1 failed (no closing line)"
done
echo "| stage | wall time |"
echo "| --- | ---: |"
for i in "${!stage_names[@]}"; do
  printf '| %s | %d min %02d s |\n' "${stage_names[$i]}" \
    $((stage_seconds[i] / 60)) $((stage_seconds[i] % 60))
done
printf '| all of tools/test.sh | %d min %02d s |\n\n' \
  $(((SECONDS - all_start) / 60)) $(((SECONDS - all_start) % 60))
python3 tools/test_summary.py "$log" "$(bazel info bazel-testlogs 2>/dev/null)" "${extra[@]}"
[[ $status -eq 0 && $determinism_status -eq 0 && $fuzz_status -eq 0 \
   && $ports_status -eq 0 && $search_status -eq 0 \
   && $old_status -eq 0 \
   && $recipes_status -eq 0 && $kvpress_status -eq 0 && $python_api_status -eq 0 \
   && $engines_status -eq 0 \
   && $docs_status -eq 0 ]]
