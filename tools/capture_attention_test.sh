#!/bin/bash
# End to end, attention from a real model: builds a tiny random Llama
# (4 query heads, 2 KV heads, 2 layers, no tokenizer), captures one layer's
# attention with tools/capture_attention.py, imports it with
# tools/import_attention --kv_heads=2, checks the scenario carries the
# captured weights bit for bit, and runs every policy over it with
# tools/simulate.
#
# Needs a Python with torch, transformers and safetensors:
# $KVSPEC_CAPTURE_PYTHON, else tools/.venv-torch/bin/python in the
# repository (tools/setup.sh makes it). Without one the test FAILS.
set -u
RUNFILES="$TEST_SRCDIR/kvspec"
SIMULATE="$RUNFILES/tools/simulate"
IMPORT="$RUNFILES/tools/import_attention"
CAPTURE="$RUNFILES/tools/capture_attention.py"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
start=$SECONDS

# The runfiles hold symlinks to the sources: the repository is two levels
# above capture_attention.py's real path.
REPO="$(dirname "$(dirname "$(readlink -f "$CAPTURE")")")"
PYTHON="${KVSPEC_CAPTURE_PYTHON:-$REPO/tools/.venv-torch/bin/python}"
if [[ ! -x "$PYTHON" ]]; then
  echo "FAIL: no Python for capture_attention at $PYTHON."
  echo "Run tools/setup.sh (it creates tools/.venv-torch with"
  echo "tools/requirements-torch.txt), or set KVSPEC_CAPTURE_PYTHON to a"
  echo "Python with torch, transformers and safetensors."
  exit 1
fi
# Caches and offline mode: nothing is written to $HOME, nothing downloaded.
export HF_HOME="$TMP/hf" XDG_CACHE_HOME="$TMP/cache" HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1

# The tiny model, saved as a user's model directory would be. (This is also
# where a Python without torch or transformers is found out.)
if ! "$PYTHON" - "$TMP/model" <<'EOF' >"$TMP/model.log" 2>&1; then
import sys
try:
    import safetensors
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as e:
    sys.exit(f"ImportError: {e}")
transformers.utils.logging.disable_progress_bar()
torch.manual_seed(1234)
config = LlamaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2,
                     intermediate_size=64)
LlamaForCausalLM(config).save_pretrained(sys.argv[1])
EOF
  echo "FAIL: building the tiny model with $PYTHON:"
  tail -3 "$TMP/model.log"
  if grep -q "ImportError" "$TMP/model.log"; then
    echo "This Python lacks torch, transformers or safetensors. Run"
    echo "tools/setup.sh (pip install -r tools/requirements-torch.txt into"
    echo "tools/.venv-torch), or set KVSPEC_CAPTURE_PYTHON."
  fi
  exit 1
fi

printf 'KV caches forget; the spec says which positions go first.\n' \
  >"$TMP/text.txt"  # 58 bytes: 58 tokens, 48 kept
"$PYTHON" "$CAPTURE" --model "$TMP/model" --text "$TMP/text.txt" --layer 1 \
  --output "$TMP/attn.safetensors" --max_tokens 48 \
  >"$TMP/capture" 2>"$TMP/capture.err" \
  || fail "capture_attention exited $?: $(cat "$TMP/capture.err")"
grep -q "has no tokenizer; using the UTF-8 bytes of the text" "$TMP/capture.err" \
  || fail "the byte fallback is not reported: $(cat "$TMP/capture.err")"
grep -q "keeping the first 48 of 58 tokens" "$TMP/capture.err" \
  || fail "--max_tokens: $(cat "$TMP/capture.err")"
grep -q "import_attention -- --input=$TMP/attn.safetensors .*--kv_heads=2" \
  "$TMP/capture" || fail "suggested command: $(cat "$TMP/capture")"
[[ -z "$(ls "$TMP" | grep '\.tmp$')" ]] || fail "a temporary file was left"

"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/attn.pb" \
  --kv_heads=2 >"$TMP/import" 2>&1 || fail "import_attention: $(cat "$TMP/import")"
grep -q "48 steps, 4 query head(s), 2 kv head(s)" "$TMP/import" \
  || fail "import summary: $(cat "$TMP/import")"

# The captured file as import_attention reads it, and the scenario: row q of
# each head without its diagonal, bit for bit. (The protobuf wire format is
# read by hand: this Python need not have protobuf.)
"$PYTHON" - "$TMP/attn.safetensors" "$TMP/attn.pb" <<'EOF' || fail "the captured file or the scenario"
import struct, sys
from safetensors import safe_open
with safe_open(sys.argv[1], "pt") as f:
    meta = f.metadata()
    assert list(f.keys()) == ["layer.1"], list(f.keys())
    a = f.get_tensor("layer.1")
assert str(a.dtype) == "torch.float32" and tuple(a.shape) == (4, 48, 48), a.shape
assert meta["layer"] == "1" and meta["num_attention_heads"] == "4", meta
assert meta["num_key_value_heads"] == "2" and meta["tokens"] == "48", meta
assert meta["model"].endswith("/model"), meta
data = open(sys.argv[2], "rb").read()

def varint(b, i):
    value, shift = 0, 0
    while True:
        value |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return value, i

def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(b, i)
        elif kind == 2:
            n, i = varint(b, i)
            value, i = b[i:i + n], i + n
        else:
            raise ValueError(f"wire type {kind}")
        yield number, value

scenario = list(fields(data))
steps = [v for n, v in scenario if n == 2]
assert dict((n, v) for n, v in scenario if n in (4, 5)) == {4: 4, 5: 2}
assert len(steps) == 48
for q, step in enumerate(steps):
    parts = list(fields(step))
    assert (1, 1) in parts and not any(n == 2 for n, _ in parts)
    rows = [v for n, v in parts if n == 3]
    assert len(rows) == 4, (q, len(rows))
    for h, row in enumerate(rows):
        packed = b"".join(v for n, v in fields(row) if n == 1)
        want = struct.pack(f"<{q}f", *a[h, q, :q].tolist())
        assert packed == want, (q, h)
print("bit for bit: 48 steps x 4 heads")
EOF

# Every policy over the imported scenario.
run() {  # name params what-to-grep
  local out="$TMP/sim-$1-$2"
  if ! "$SIMULATE" --scenario="$TMP/attn.pb" --policy="$1" ${2:+--params=$2} \
      --quiet >"$out" 2>&1; then
    fail "simulate --policy=$1 --params=$2 exited non-zero: $(tail -3 "$out")"
  elif ! grep -q "$3" "$out"; then
    fail "simulate --policy=$1 --params=$2: no '$3' in: $(cat "$out")"
  else
    echo "ok: $1 $2: $(grep "$3" "$out")"
  fi
}
run full "" "48 steps, 1 kept set(s)"
run window budget=8 "48 steps, 1 kept set(s)"
run streamingllm budget=8,sinks=2 "48 steps, 1 kept set(s)"
run random budget=8,recent_window=2 "48 steps, 1 kept set(s)"
# One kept set per KV head by default, per query head on request.
run h2o budget=8,recent_window=2 "48 steps, 2 kept set(s)"
run h2o budget=8,recent_window=2,granularity=query_head "48 steps, 4 kept set(s)"
run h2o budget=8,recent_window=2,granularity=layer,aggregation=max "48 steps, 1 kept set(s)"
run tova budget=8,recent_window=2 "48 steps, 2 kept set(s)"
run tova budget=8,recent_window=2,granularity=query_head "48 steps, 4 kept set(s)"
run snapkv budget=8,recent_window=2 "48 steps, 2 kept set(s)"
run snapkv budget=8,recent_window=2,obs_window=4,pool_kernel=3,granularity=query_head "48 steps, 4 kept set(s)"

# Refusals: clear messages, the right exit status, no output file.
"$PYTHON" "$CAPTURE" --model "$TMP/no-model" --text "$TMP/text.txt" --layer 0 \
  --output "$TMP/x.safetensors" >"$TMP/err1" 2>&1
[[ $? -eq 2 ]] && grep -q "is not a directory" "$TMP/err1" \
  || fail "missing model dir: $(cat "$TMP/err1")"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --text "$TMP/text.txt" --layer 2 \
  --output "$TMP/x.safetensors" >"$TMP/err2" 2>&1
[[ $? -eq 2 ]] && grep -q "layer 2 is out of range: the model has 2 layers (0..1)" "$TMP/err2" \
  || fail "layer out of range: $(cat "$TMP/err2")"
: >"$TMP/empty.txt"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --text "$TMP/empty.txt" --layer 0 \
  --output "$TMP/x.safetensors" >"$TMP/err3" 2>&1
[[ $? -eq 2 ]] && grep -q "is empty" "$TMP/err3" \
  || fail "empty text: $(cat "$TMP/err3")"
[[ ! -e "$TMP/x.safetensors" ]] || fail "a refused capture wrote its output"

"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/bad.pb" \
  --kv_heads=3 >"$TMP/err4" 2>&1
[[ $? -eq 1 ]] && grep -qF "$TMP/attn.safetensors: --kv_heads=3 does not divide the 4 selected query heads" "$TMP/err4" \
  || fail "import --kv_heads=3: $(cat "$TMP/err4")"
"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/bad.pb" \
  --layer=0 >"$TMP/err5" 2>&1
[[ $? -eq 1 ]] && grep -qF "$TMP/attn.safetensors: --layer=0: the file has no tensor layer.0 (it holds layer.1)" "$TMP/err5" \
  || fail "import --layer=0: $(cat "$TMP/err5")"
"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/bad.pb" \
  --heads=0,x >"$TMP/err6" 2>&1
[[ $? -eq 2 ]] || fail "a malformed --heads must exit 2: $(cat "$TMP/err6")"
"$IMPORT" --output="$TMP/bad.pb" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "a missing --input must exit 2"
[[ ! -e "$TMP/bad.pb" ]] || fail "a refused import wrote its output"
"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/one.pb" \
  --heads=3 --id=head3 >"$TMP/one" 2>&1 \
  && grep -q "48 steps, 1 query head(s), 1 kv head(s), id 'head3'" "$TMP/one" \
  || fail "import --heads=3: $(cat "$TMP/one")"
"$IMPORT" --help >"$TMP/help" 2>&1
for flag in input output layer heads kv_heads id; do
  grep -q -- "--$flag" "$TMP/help" || fail "--help does not explain --$flag"
done

echo "capture_attention_test took $((SECONDS - start)) s"
if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all capture_attention checks passed"
