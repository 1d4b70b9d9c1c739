#!/bin/bash
# Every flag decides the cases it is on, every required (flag, policy)
# decides at least one case, and every bound, check order and default has a
# case (spec/vectors.md#flags, #bounds). Then: the census is not vacuous, it
# fails on a suite missing one bound, one check order or one default.
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
tools/census/audit_opt --census --vectors=vectors --spec=spec || exit 1

status=0
# Each run without some cases leaves out the checks that re-run every case
# (features, precision, combinations: about 9 of the census's 11 s) unless
# its expected failure is theirs; the full census ran above.
expect_failure() {  # what the census must then say, cases to drop[, checks to skip]
  local want="$1" drop="$2" skip="${3-features,precision,combinations}" out
  out="$(tools/census/audit_opt --census --vectors=vectors --spec=spec --drop="$drop" \
           ${skip:+--skip="$skip"} 2>&1)"
  if [[ $? -eq 0 ]] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: without $drop the census should fail with: $want"
    echo "$out" | grep -E '^FAIL|census failures' | head -10
    status=1
  else
    echo "ok: without $drop the census says: $want"
  fi
}
expect_failure "no case has window budget at its highest value 4294967295 accepted" \
  window/bounds/budget-max
expect_failure "no case has snapkv pool_kernel at its one above the highest value 65536 refused" \
  snapkv/bounds/pool-kernel-above-max
expect_failure "no case has trace noise at below-min refused" \
  harness/trace-bounds/noise-below-min,harness/refusal/trace-noise-minus-zero
expect_failure "names \`tova/ties/example-4-9-12\`, which the suite does not have" \
  tova/ties/example-4-9-12
expect_failure "later heads: no case is refused ATTENTION_VALUE for the column totals" \
  prefill/refusal/totals-nan-in-head-1
expect_failure "flag order.position-before-length decided no case in the suite" \
  harness/order/position-before-length
expect_failure "flag order.steps-in-sequence decided no case in the suite" \
  harness/order/steps-in-sequence,harness/heads/order-steps-in-sequence
expect_failure "flag heads.mean-rounding decided no h2o case" \
  h2o/heads/mean-rounding-ties
expect_failure "flag heads.floor-at-least-one decided no h2o case" \
  h2o/adakv/floor-one-binds,h2o/adakv/floor-one-binds-at-safeguard-one
expect_failure "flag heads.floor-zero-when-safeguard-zero decided no h2o case" \
  h2o/adakv/safeguard-zero-empties-head-0
expect_failure "flag heads.floor-rounds-down decided no h2o case" \
  h2o/adakv/floor-rounds-down
expect_failure "flag heads.scores-then-combine decided no snapkv case" \
  snapkv/heads/scores-then-combine,snapkv/heads/scores-then-combine-sum
# spec/vectors.md#precision: the rule's only case robust at bfloat16 read
# into binary32 sums (exact there: no mean over heads).
expect_failure "flag heads.scores-then-combine: none of the 1 cases it decides is robust at bfloat16 (accumulate binary32)" \
  snapkv/heads/scores-then-combine-sum features,combinations
expect_failure "flag order.heads-length-before-weights decided no case in the suite" \
  harness/heads/order-length-before-weights
expect_failure "default: snapkv's pool_kernel decides no defaults.decides case" \
  snapkv/defaults/budget-24,snapkv/defaults/budget-512,snapkv/adakv/floor-at-default,snapkv/adakv/canonical-kv-head
expect_failure "default: trace field heavy_count decides no trace.defaults case" \
  tova/trace/absent-fields-budget-512
expect_failure "parameter matrix: no case gives tova the parameter 'normalize' (another policy's)" \
  harness/foreign-parameter/tova-normalize
expect_failure "combination trace + ratio: " \
  search/combination/trace-with-ratio features,precision
expect_failure "no case is refused with subject \`rule pool_kernel\`" \
  snapkv/refusal/pool-kernel-even
exit $status
