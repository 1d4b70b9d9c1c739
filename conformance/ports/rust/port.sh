#!/bin/sh
# Launches the kvspec Rust port's conformance testee (spec/protocol.md).
# Build first: cargo build --release (in this directory).
dir=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
exec "$dir/target/release/testee" "$@"
