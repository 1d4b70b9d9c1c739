#!/bin/bash
# Fuzzes every parser of outside input with libFuzzer (Debian's clang),
# AddressSanitizer and UBSan (every report fatal), for SECONDS each (default
# 60), up to one target per core at a time:
#   frame_fuzzer          conformance/frame.cc: the conformance frames
#   decode_fuzzer         conformance/decode.cc: runner --decode dumps
#   judge_fuzzer          conformance/precision_judge.cc: any log a port of
#                         lower precision sends, judged within its bound
#   vector_loader_fuzzer  tools/vectors/load.cc: vector files, MANIFEST.json
#   import_fuzzer         the attention importer (tools/attention/import_attention_lib.h,
#                         its files in $importer below): .safetensors, .npy
#   scenario_fuzzer       tools/simulate/scenario_file.cc: scenario files (simulate
#                         --scenario), then the harness on small ones
#   case_list_fuzzer      tools/vectors/case_list.cc: the case lists of
#                         vectors_from_scenarios (spec/vectors.md#case-lists)
# Prints how many inputs each ran and what it found, then one line that
# tools/test.sh counts, "fuzz: N passed, M failed": a target passes when it
# ran for SECONDS without a crash, leak, timeout (10 s for one input) or
# out-of-memory. A finding is kept in $KVSPEC_FUZZ_FINDINGS (default
# /tmp/kvspec-fuzz-findings) beside its target's binary: rerun the binary
# with the file as its argument to reproduce it.
#
# Needs clang and its libFuzzer and sanitizer runtime, Debian's
# libclang-rt-14-dev (tools/setup.sh --tests installs both).
#
#   tools/fuzz.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
findings="${KVSPEC_FUZZ_FINDINGS:-/tmp/kvspec-fuzz-findings}"

# Refuses to start without its tools, in the summary line too.
missing() {
  echo "fuzz: $1" >&2
  echo "fuzz: 0 passed, 1 failed ($2)"
  exit 2
}
command -v clang++ >/dev/null ||
  missing "clang++ is not installed: apt-get install clang libclang-rt-14-dev (or tools/setup.sh --tests)" \
    "no clang++"
clang_major="$(clang++ -dumpversion | cut -d. -f1)"
runtime="$(clang++ -print-runtime-dir)"
for lib in fuzzer asan ubsan_standalone; do
  [[ -f "$runtime/libclang_rt.$lib-$(uname -m).a" ]] ||
    missing "clang's libFuzzer and sanitizer runtime is not installed ($runtime/libclang_rt.$lib-$(uname -m).a is missing): apt-get install libclang-rt-$clang_major-dev (or tools/setup.sh --tests)" \
      "libclang-rt-$clang_major-dev is not installed"
done

work="$(mktemp -d)"
trap 'rm -rf "$work" /dev/shm/kvspec-fuzz-*' EXIT
protoc --proto_path=. --cpp_out="$work" spec/kvspec.proto spec/conformance.proto ||
  missing "protoc failed" "protoc failed"
flags=(-std=c++17 -gline-tables-only -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I. -I"$work" -w)
libs=($(pkg-config --libs absl_statusor absl_str_format absl_strings absl_int128) -lprotobuf -pthread)

# Every source once, one compiler per core; then each target is linked.
reference=($(ls cc/*.cc cc/policies/*.cc | grep -v '_test\.cc$'))
# The attention importer, //tools/attention:import_attention_lib's srcs.
importer=(tools/attention/import_attention_lib.cc tools/attention/import_internal.cc
          tools/attention/import_json.cc tools/attention/import_npy.cc
          tools/attention/import_plan.cc tools/attention/import_safetensors.cc
          tools/attention/import_sizes.cc tools/attention/import_tensors.cc
          tools/attention/import_weights.cc tools/attention/import_write.cc)
sources=(conformance/frame.cc conformance/decode.cc conformance/precision_judge.cc
         tools/vectors/load.cc tools/vectors/case_list.cc tools/vectors/case_id.cc
         "${importer[@]}" tools/simulate/scenario_file.cc tools/files/files.cc
         "$work/spec/kvspec.pb.cc" "$work/spec/conformance.pb.cc"
         conformance/fuzz/*.cc tools/fuzz/*.cc "${reference[@]}")
mkdir -p "$work/obj"
object() { local name="${1#"$work"/}"; echo "$work/obj/${name//\//_}.o"; }
for source in "${sources[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $(nproc) ]]; do wait -n; done
  ( clang++ "${flags[@]}" -c "$source" -o "$(object "$source")" \
      2>"$(object "$source").log" || touch "$(object "$source").failed" ) &
done
wait
for failed in "$work"/obj/*.failed; do
  [[ -e "$failed" ]] || continue
  cat "${failed%.failed}.log" >&2
  missing "cannot compile ${failed##*/}" "compile error"
done
link() {  # target, sources
  local target="$1"; shift
  local objects=()
  for source in "$@"; do objects+=("$(object "$source")"); done
  clang++ "${flags[@]}" "${objects[@]}" "${libs[@]}" -o "$work/$target" ||
    missing "cannot link $target" "link error"
}
link frame_fuzzer conformance/fuzz/frame_fuzzer.cc conformance/frame.cc
link vector_loader_fuzzer conformance/fuzz/vector_loader_fuzzer.cc \
  tools/vectors/load.cc tools/files/files.cc cc/sha256.cc "$work/spec/kvspec.pb.cc"
link decode_fuzzer conformance/fuzz/decode_fuzzer.cc conformance/decode.cc \
  conformance/frame.cc "$work/spec/kvspec.pb.cc" "$work/spec/conformance.pb.cc"
link judge_fuzzer conformance/fuzz/judge_fuzzer.cc conformance/precision_judge.cc \
  "$work/spec/kvspec.pb.cc" "${reference[@]}"
link import_fuzzer tools/fuzz/import_fuzzer.cc "${importer[@]}" \
  tools/files/files.cc "$work/spec/kvspec.pb.cc" "${reference[@]}"
link scenario_fuzzer tools/fuzz/scenario_fuzzer.cc tools/simulate/scenario_file.cc \
  "$work/spec/kvspec.pb.cc" "${reference[@]}"
link case_list_fuzzer tools/fuzz/case_list_fuzzer.cc tools/vectors/case_list.cc tools/vectors/case_id.cc
echo "fuzz: 7 targets built in $SECONDS s ($(nproc) cores); fuzzing each for $seconds s"

# Seeds: real frames, real vector files, a real dump.
mkdir -p "$work/frames" "$work/files" "$work/dumps" "$work/attention" "$work/scenarios" "$work/logs" \
  "$work/lists"
printf '# a case list\nmodel/eager/a layer0.pb h2o budget=6,sinks=2\nmodel/x/b /l1.pb full -\nx/y/z s.pb random seed=7\n' \
  >"$work/lists/seed"
# The judge's seeds: each of its cases' expected logs, written by itself.
KVSPEC_JUDGE_SEEDS="$work/logs" "$work/judge_fuzzer" -runs=0 "$work/logs" >/dev/null 2>&1 ||
  missing "judge_fuzzer could not write its seeds" "seed error"
printf '\x05\x00\x00\x00hello\x00\x00\x00\x00' >"$work/frames/two"
cp vectors/harness.pb vectors/full.pb vectors/MANIFEST.json "$work/files/"
cp conformance/fuzz/seed-dump.bin "$work/dumps/"
# Attention files in the layouts tools/attention/capture_attention.py saves (uniform
# causal rows), each behind import_fuzzer's 5 control bytes (tools/fuzz/
# import_fuzzer.cc): a .npy matrix, layer.<n> matrices, a window.<n> with
# its __metadata__, a file with both, chunk.<n>.<e> tensors with their
# __metadata__, chunks beside a window, keys and values beside them,
# step.<t> rows.
python3 - "$work/attention" <<'EOF' || missing "cannot write the attention seeds" "seed error"
import json, struct, sys

def row(q, keys):  # query q's causal row over `keys` keys
    return [1.0 / (q + 1) if k <= q else 0.0 for k in range(keys)]

def matrix(heads, length):
    return [w for h in range(heads) for q in range(length) for w in row(q, length)]

def window(heads, rows, length):
    return [w for h in range(heads) for r in range(rows)
            for w in row(length - rows + r, length)]

def chunks(layer, heads, rows, size, length):  # capture --prefill_chunk
    tensors, start = [], 0
    while start < length:
        end = min(start + size, length)
        m = min(rows, end - start)
        tensors.append(("chunk.%d.%d" % (layer, end), [heads, m, end],
                        window(heads, m, end)))
        start = end
    return tensors

def f32(values):
    return struct.pack("<%df" % len(values), *values)

def npy(shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + f32(values)

def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, shape, values in tensors:
        f64 = name.startswith("totals.")  # column totals are F64
        packed = struct.pack("<%dd" % len(values), *values) if f64 else f32(values)
        header[name] = {"dtype": "F64" if f64 else "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(packed)]}
        data += packed
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data

seeds = {
    # .npy [2, 4, 4], no option; [4, 3, 3] with heads 2,0 and kv_heads 2.
    "npy": (b"\x00\x00\x00\x00\x00", npy([2, 4, 4], matrix(2, 4))),
    "npy-heads": (b"\x00\x00\xd5\x00\x00", npy([4, 3, 3], matrix(4, 3))),
    # layer.0 [2, 5, 5], layer.3 [1, 2, 2] and totals.0: --layer=0.
    "layers": (b"\x01\x80\x00\x00\x00", safetensors([
        ("layer.0", [2, 5, 5], matrix(2, 5)),
        ("layer.3", [1, 2, 2], matrix(1, 2)),
        ("totals.0", [2, 5], [1.0] * 10)])),
    # window.2 [2, 3, 6] with its metadata: --window_rows=2 --decode=1.
    "window": (b"\x01\x00\x00\x82\x81", safetensors(
        [("window.2", [2, 3, 6], window(2, 3, 6))],
        {"tokens": "6", "window_rows": "3", "num_attention_heads": "2"})),
    # window.0 [2, 3, 6] and totals.0 [2, 6] (F64): --totals.
    "window-totals": (b"\x01\x08\x00\x00\x00", safetensors([
        ("window.0", [2, 3, 6], window(2, 3, 6)),
        ("totals.0", [2, 6], [3.0, 2.5, 2.0, 1.5, 1.0, 0.5] * 2)])),
    # window.0 [2, 3, 6] and totals.0 [2, 5] (capture --totals_decode 1):
    # --totals --decode=1.
    "window-totals-decode": (b"\x01\x08\x00\x00\x81", safetensors([
        ("window.0", [2, 3, 6], window(2, 3, 6)),
        ("totals.0", [2, 5], [2.5, 2.0, 1.5, 1.0, 0.5] * 2)])),
    # layer.1 [1, 4, 4] and window.1 [1, 2, 4]: --decode=1 picks the window.
    "both": (b"\x01\x00\x00\x00\x81", safetensors([
        ("layer.1", [1, 4, 4], matrix(1, 4)),
        ("window.1", [1, 2, 4], window(1, 2, 4))])),
    # chunk.1.3, chunk.1.6, chunk.1.8 [2, 2, e] with their metadata:
    # --window_rows=1 --decode=1.
    "chunks": (b"\x01\x00\x00\x81\x81", safetensors(
        chunks(1, 2, 2, 3, 8),
        {"tokens": "8", "window_rows": "2", "prefill_chunk": "3",
         "num_attention_heads": "2", "layout": "chunks"})),
    # chunk.0.<e> beside window.0: --layout=chunks.
    "chunks-window": (b"\x01\x30\x00\x00\x00", safetensors(
        chunks(0, 1, 2, 2, 5) + [("window.0", [1, 2, 5], window(1, 2, 5))])),
    # window.0 [4, 2, 5] over 2 KV heads and keys.0 [2, 5, 3]: --keys
    # --heads=3,2 (KV head 1 only) --decode=1.
    "window-keys": (b"\x01\x04\xcc\x00\x81", safetensors([
        ("window.0", [4, 2, 5], window(4, 2, 5)),
        ("keys.0", [2, 5, 3], [0.5 * i - 7.0 for i in range(30)])],
        {"num_key_value_heads": "2", "num_attention_heads": "4"})),
    # layer.0 [2, 4, 4] over 1 KV head and keys.0 [1, 4, 2]: --keys.
    "matrix-keys": (b"\x01\x04\x00\x00\x00", safetensors([
        ("layer.0", [2, 4, 4], matrix(2, 4)),
        ("keys.0", [1, 4, 2], [3.0, 4.0, 0.0, 2.0, -1.0, 0.0, 1e-3, -2.5])],
        {"num_key_value_heads": "1"})),
    # window.0 [4, 2, 6] over 2 KV heads, keys.0 [2, 6, 3] and values.0
    # [2, 6, 2]: --keys --values --kv_heads=2 (lagkv judges a partition).
    "window-values": (b"\x01\x44\x10\x00\x00", safetensors([
        ("window.0", [4, 2, 6], window(4, 2, 6)),
        ("keys.0", [2, 6, 3], [0.25 * ((5 * i) % 13) - 1.5 for i in range(36)]),
        ("values.0", [2, 6, 2], [((7 * i) % 11) - 5.0 for i in range(24)])],
        {"num_key_value_heads": "2", "num_attention_heads": "4"})),
    # chunk.1.3, chunk.1.6, chunk.1.8 [1, 2, e], keys.1 [1, 8, 2] and
    # values.1 [1, 8, 1]: --keys --values --decode=1 (value_dim 1: lagkv
    # refuses).
    "chunks-values": (b"\x01\x44\x00\x00\x81", safetensors(
        chunks(1, 1, 2, 3, 8) + [
            ("keys.1", [1, 8, 2], [3.0, -1.0, 0.5, 2.0, -0.0, 1.0, 4.0, 4.0,
                                   1e-3, -2.5, 0.0, 0.0, 2.0, 1.0, -1.0, 0.5]),
            ("values.1", [1, 8, 1], [1.0, 2.0, 0.5, -3.0, 0.0, 7.0, 1.5, -1.0])],
        {"num_key_value_heads": "1", "layout": "chunks"})),
    # step.0 .. step.4, [2, t + 1]: heads 1,0.
    "steps": (b"\x01\x00\xc3\x00\x00", safetensors([
        ("step.%d" % t, [2, t + 1], row(t, t + 1) * 2) for t in range(5)])),
}
for name, (control, data) in seeds.items():
    with open("%s/%s" % (sys.argv[1], name), "wb") as out:
        out.write(control + data)
EOF
# The words of both formats' headers, for import_fuzzer's mutations.
printf '%s\n' '"\x93NUMPY"' '"descr"' '"<f4"' '"fortran_order"' '"False"' '"True"' \
  '"shape"' '"layer."' '"window."' '"chunk."' '"step."' '"totals."' '"dtype"' \
  '"F32"' '"F64"' '"data_offsets"' '"__metadata__"' '"tokens"' '"window_rows"' \
  '"prefill_chunk"' '"num_attention_heads"' '"keys."' '"values."' \
  '"num_key_value_heads"' '"\\u"' >"$work/attention.dict"
# Scenarios (spec/kvspec.proto): decode steps with one head, a chunk and
# null attention; a prefill step with query rows and decode steps with two
# heads; keys of two KV heads (spec/tensors.md); keys and values, which
# lagkv reads; a canonical trace with two heads.
encode() { protoc --proto_path=. --encode=kvspec.v1.Scenario spec/kvspec.proto >"$work/scenarios/$1" ||
             missing "cannot encode the scenario seed $1" "seed error"; }
encode decode <<'EOF'
id: "decode"
steps { admit: 3 }
steps { admit: 1 attention { weights: [0.5, 0.25, 0.25] } }
steps { admit: 1 attention { weights: [0.5, 0.125, 0.125, 0.25] } }
steps { admit: 2 }
steps { admit: 1 attention { weights: [0.25, 0, 0.25, 0.125, 0.125, 0.125, 0.125] } }
EOF
encode prefill <<'EOF'
id: "prefill"
query_heads: 2
kv_heads: 1
steps {
  admit: 3
  queries { weights: [0.5, 0.5] }
  queries { weights: [0.25, 0.25, 0.5] }
  queries { weights: [0.75, 0.25] }
  queries { weights: [0.5, 0.25, 0.25] }
}
steps { admit: 1 heads { weights: [0.5, 0.25, 0.25] } heads { weights: [0.25, 0.5, 0.25] } }
steps { admit: 1 heads { weights: [0.5, 0.25, 0.125, 0.125] } heads { weights: [0, 0.5, 0.25, 0.25] } }
EOF
encode totals <<'EOF'
id: "totals"
query_heads: 2
kv_heads: 1
steps { admit: 2 }
steps {
  admit: 2
  queries { weights: [0.25, 0.25, 0.25, 0.25] }
  queries { weights: [0.5, 0, 0.25, 0.25] }
  totals { sums: [0.5, 0.5, 0.5, 0.5] }
  totals { sums: [1, 0, 0.5, 0.5] }
  total_rows: 2
}
EOF
encode keys <<'EOF'
id: "keys"
query_heads: 2
kv_heads: 2
head_dim: 2
steps { admit: 2 keys { values: [3, 4, 0, 1] } keys { values: [0, 1, 6, 8] } }
steps { admit: 1 heads { weights: [0.5, 0.5] } heads { weights: [0.25, 0.75] }
        keys { values: [1, -1] } keys { values: [-0, 2] } }
EOF
encode values <<'EOF'
id: "values"
head_dim: 2
value_dim: 2
steps { admit: 5 keys { values: [9, 9, 0, 1, 0.5, 0.5, 0, 0, 1, 1] }
        values { values: [9, 9, 0.5, 0.5, 0.5, 0.5, 0, 0, 1, 1] } }
steps { admit: 1 attention { weights: [0.5, 0.25, 0.125, 0.125, 0] }
        keys { values: [2, -1] } values { values: [-0, 3] } }
EOF
encode trace <<'EOF'
id: "trace"
query_heads: 2
kv_heads: 2
trace { seed: 7 steps: 24 sinks: 2 recent_length: 4 heavy_count: 2 epoch_length: 8 }
EOF

mkdir -p "$findings"
run() {  # target, corpus
  local name="$1" dict=()
  [[ -f "$work/$2.dict" ]] && dict=(-dict="$work/$2.dict")
  mkdir -p "$work/artifacts-$name"
  "$work/$name" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts-$name/" -max_len=65536 "${dict[@]}" "$work/$2" \
    >"$work/$name.log" 2>&1
  echo $? >"$work/$name.exit"
}
targets=(frame_fuzzer:frames vector_loader_fuzzer:files decode_fuzzer:dumps
         judge_fuzzer:logs import_fuzzer:attention scenario_fuzzer:scenarios
         case_list_fuzzer:lists)
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $(nproc) ]]; do wait -n; done
  run "${target%%:*}" "${target##*:}" &
done
wait

passed=0 failed=0
for target in "${targets[@]}"; do
  name="${target%%:*}"
  code="$(cat "$work/$name.exit" 2>/dev/null || echo '?')"
  runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$name.log" | grep -o '[0-9]*$')"
  found=("$work/artifacts-$name"/*)
  [[ -e "${found[0]}" ]] || found=()
  echo "$name: ${runs:-?} executions in ${seconds} s, exit $code, ${#found[@]} findings"
  if [[ "$code" == 0 && ${#found[@]} -eq 0 ]]; then
    passed=$((passed + 1))
    continue
  fi
  failed=$((failed + 1))
  tail -30 "$work/$name.log"
  cp "$work/$name" "$findings/"
  for file in "${found[@]}"; do
    cp "$file" "$findings/$name-${file##*/}"
    echo "  reproduce: $findings/$name $findings/$name-${file##*/}"
  done
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
