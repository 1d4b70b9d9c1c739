#!/bin/bash
# Fuzzes the conformance frame decoder, the frames-as-text decoder (runner
# --decode) and the vector loader with libFuzzer
# (Debian's clang), AddressSanitizer and UBSan, for SECONDS each (default
# 60), and prints how many inputs each ran and what it found.
#
#   tools/fuzz.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
work="$(mktemp -d)"
trap 'rm -rf "$work" /dev/shm/kvspec-fuzz-*' EXIT
protoc --proto_path=. --cpp_out="$work" spec/kvspec.proto spec/conformance.proto || exit 2
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. -I"$work" -w)
libs="$(pkg-config --libs absl_statusor absl_str_format absl_strings) -lprotobuf -pthread"

clang++ "${flags[@]}" conformance/fuzz/frame_fuzzer.cc conformance/frame.cc \
  -o "$work/frame_fuzzer" || exit 2
clang++ "${flags[@]}" conformance/fuzz/vector_loader_fuzzer.cc \
  tools/vectors/load.cc cc/sha256.cc "$work/spec/kvspec.pb.cc" $libs \
  -o "$work/vector_loader_fuzzer" || exit 2
clang++ "${flags[@]}" conformance/fuzz/decode_fuzzer.cc conformance/decode.cc \
  conformance/frame.cc "$work/spec/kvspec.pb.cc" "$work/spec/conformance.pb.cc" $libs \
  -o "$work/decode_fuzzer" || exit 2

# Seeds: real frames and real vector files.
mkdir -p "$work/frames" "$work/files"
printf '\x05\x00\x00\x00hello\x00\x00\x00\x00' >"$work/frames/two"
cp vectors/harness.pb vectors/full.pb vectors/MANIFEST.json "$work/files/"
mkdir -p "$work/dumps"
cp conformance/fuzz/seed-dump.bin "$work/dumps/"

status=0
for target in frame_fuzzer:frames vector_loader_fuzzer:files decode_fuzzer:dumps; do
  name="${target%%:*}"; corpus="$work/${target##*:}"
  "$work/$name" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/" \
    -max_len=65536 "$corpus" >"$work/$name.log" 2>&1
  code=$?
  runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$name.log" | grep -o '[0-9]*$')"
  crashes="$(ls "$work"/crash-* 2>/dev/null | wc -l)"
  echo "$name: ${runs:-?} executions in ${seconds} s, exit $code, $crashes crash files"
  [[ $code -ne 0 ]] && { status=1; tail -30 "$work/$name.log"; }
done
exit $status
