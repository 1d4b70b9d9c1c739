#!/bin/bash
# Runs drift_check (drift_test.cc), built -c opt, from the runfiles root,
# where it reads vectors/ and spec/ (see BUILD).
cd "$TEST_SRCDIR/kvspec" || exit 1
exec tools/vectors/drift_opt "$@"
