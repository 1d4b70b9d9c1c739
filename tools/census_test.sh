#!/bin/bash
# Every flag decides the cases it is on, and every required (flag, policy)
# decides at least one case (spec/vectors.md#flags).
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
tools/audit --census --vectors=vectors
