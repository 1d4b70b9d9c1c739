#!/bin/bash
# Runs the conformance runner against the transformers engine adapter with its
# expectations (../common/check_adapter.sh); last line:
# "transformers-adapter: P passed, F failed". P: the cases that passed. F: the
# runner's failures, i.e. its "unexpected outcomes" (new failures, unexpected
# passes, stale entries); the outcomes the expectations list (skips, the
# static preset's mismatches) are neither.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../common/check_adapter.sh" transformers-adapter \
  "$here/port.sh" "$here/transformers.expectations"
