#!/bin/bash
# Runs the conformance runner for a conformance_test target (defs.bzl):
#   run_conformance.sh <port executable> <expectation file>
set -u
cd "$TEST_SRCDIR/kvspec" || exit 2
exec conformance/runner --port="$PWD/$1" --expectations="$2" \
  --vectors=vectors ${XML_OUTPUT_FILE:+--junit="$XML_OUTPUT_FILE"}
