#!/bin/bash
# Runs NVIDIA kvpress 0.5.5's presses at prefill through the conformance
# runner, on the cases of the kvpress-0.5.5 presets (--case=prefill/kvpress/*,
# --nocut), three times: in float32, bfloat16 and float16, each declared in
# the adapter's hello, so the runner judges what the dtype cannot decide as
# `within precision` (spec/protocol.md#precision) and fails the rest unless
# kvpress.expectations lists it (../common/check_adapter.sh). Each run ends
# with "kvpress-<dtype>-adapter: P passed, F failed".
#
# Then the proof that those verdicts still catch a wrong rule: each dtype
# again with a rule error planted in a press (adapter.py --plant: h2o's raw
# sums, snapkv's kernel of 3), on the case of that press that every dtype
# decides robustly; each must be a failure ("mismatch"). Last line:
# "kvpress-planted: P passed, F failed", P the planted errors the runner
# failed, F those it passed or judged within precision.
#
#   conformance/engines/kvpress/check.sh [--device cuda]   (default: the CPU)
set -uo pipefail
device=()
case "${1:-}" in
  "") ;;
  --device) [[ -n "${2:-}" ]] || { echo "check.sh: --device needs a value (cuda, cuda:N)" >&2; exit 2; }
            device=(--device="$2") ;;
  *) echo "check.sh: unknown argument '$1' (expected nothing or --device DEVICE)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [[ ! -x "$root/tools/.venv-torch/bin/python" ]]; then
  for dtype in float32 bfloat16 float16; do
    echo "kvpress-$dtype-adapter: 0 passed, 1 failed (no tools/.venv-torch: run tools/setup.sh --tests)"
  done
  echo "kvpress-planted: 0 passed, 1 failed (no tools/.venv-torch: run tools/setup.sh --tests)"
  exit 1
fi
status=0
for dtype in float32 bfloat16 float16; do
  bash "$here/../common/check_adapter.sh" "kvpress-$dtype-adapter" "$here/port.sh $dtype ${device[*]}" \
    "$here/kvpress.expectations" '--case=prefill/kvpress/*' --nocut || status=1
done
cd "$root" || exit 1
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
caught=0 missed=0
for dtype in float32 bfloat16 float16; do
  for planted in h2o-raw-sums:prefill/kvpress/h2o-separated \
                 snapkv-kernel-3:prefill/kvpress/snapkv-separated; do
    plant=${planted%%:*} case=${planted#*:}
    out="$("$runner" --vectors=vectors --port="$here/port.sh $dtype --plant=$plant ${device[*]}" \
      --case="$case" --nocut 2>&1)"
    verdict="$(echo "$out" | grep -E "^$case: " | head -1)"
    if [[ "$verdict" == "$case: mismatch" ]]; then
      caught=$((caught + 1))
      echo "kvpress-planted: $dtype, $plant: $verdict (caught)"
    else
      missed=$((missed + 1))
      echo "kvpress-planted: $dtype, $plant: ${verdict:-no verdict} (NOT caught)"
      echo "$out" | tail -5
    fi
  done
done
echo "kvpress-planted: $caught passed, $missed failed"
[[ $missed -eq 0 ]] || status=1
exit $status
