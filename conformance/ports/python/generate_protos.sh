#!/bin/sh
# Regenerates kvspec_port/_gen/spec/*_pb2.py from spec/*.proto with Debian's
# protoc 3.21.12 (matching the protobuf==4.21.12 runtime pin).
# Usage: generate_protos.sh [OUT_DIR]   (default: kvspec_port/_gen next to this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$here/kvspec_port/_gen}
PROTOC=${PROTOC:-/usr/bin/protoc}
mkdir -p "$out"
cd "$root"
"$PROTOC" --proto_path=. --python_out="$out" spec/kvspec.proto spec/conformance.proto
