#!/bin/bash
# End to end, attention from a real model: builds a tiny random Llama
# (4 query heads, 2 KV heads, 2 layers, no tokenizer), captures one layer's
# whole causal matrix with tools/attention/capture_attention.py --matrix, imports it
# with tools/attention/import_attention --kv_heads=2, checks the scenario carries the
# captured weights bit for bit, and runs every policy over it with
# tools/simulate. Then the observation-window capture: a 600-token prompt
# given as token ids, two layers' window rows computed a block of rows at a
# time, compared bit for bit with transformers' own eager attention
# (output_attentions) and, under --attention sdpa, with kvpress's own
# SnapKVPress.compute_window_attention in an sdpa run; imported as a
# prefill scenario and run with the kvpress presets; and the refusals.
# Then a chunked prefill (--prefill_chunk 256) of the same prompt: each
# chunk's rows checked the same way, the last chunk's against the window's,
# imported as one prefill step per chunk and run by simulate. And
# tools/bench/captured_blocks.py on one layer's matrix, window's figures
# checked against its rule. And --keys and --values: each layer's keys and
# values against transformers' DynamicCache, bit for bit, imported and run
# by knorm (keys) and lagkv (keys and values).
#
# Needs a Python with torch, transformers and safetensors:
# $KVSPEC_CAPTURE_PYTHON, else tools/.venv-torch/bin/python in the
# repository (`tools/setup.sh --tests` makes it; plain tools/setup.sh does
# not). Without one the test FAILS.
set -u
RUNFILES="$TEST_SRCDIR/kvspec"
SIMULATE="$RUNFILES/tools/simulate/simulate"
IMPORT="$RUNFILES/tools/attention/import_attention"
CAPTURE="$RUNFILES/tools/attention/capture_attention.py"
REPORT="$RUNFILES/tools/attention/attention_report.py"
BLOCKS="$RUNFILES/tools/bench/captured_blocks.py"
SMOLLM2="$RUNFILES/tools/attention/smollm2.py"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
start=$SECONDS

# The runfiles hold symlinks to the sources: the repository is three levels
# above capture_attention.py's real path.
REPO="$(dirname "$(dirname "$(dirname "$(readlink -f "$CAPTURE")")")")"
PYTHON="${KVSPEC_CAPTURE_PYTHON:-$REPO/tools/.venv-torch/bin/python}"
if [[ ! -x "$PYTHON" ]]; then
  echo "FAIL: no Python for capture_attention at $PYTHON."
  echo "Run tools/setup.sh --tests (it creates tools/.venv-torch with"
  echo "tools/requirements-torch.txt; tools/setup.sh without --tests does"
  echo "not), or set KVSPEC_CAPTURE_PYTHON to a Python with torch,"
  echo "transformers and safetensors."
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
    echo "tools/setup.sh --tests (pip install -r tools/requirements-torch.txt"
    echo "into tools/.venv-torch), or set KVSPEC_CAPTURE_PYTHON."
  fi
  exit 1
fi

printf 'KV caches forget; the spec says which positions go first.\n' \
  >"$TMP/text.txt"  # 58 bytes: 58 tokens, 48 kept

# Two shards (BUILD: shard_count = 2), run at once on two cores: shard 0
# the matrix, the window, the chunks, the refusals and the keys and values;
# shard 1 attention_report, captured_blocks, smollm2.py's refusals and the
# totals. Each makes the tiny model above; shard 1 makes the 600 token ids
# and the window capture again. Run by hand (no TEST_SHARD_INDEX), both.
shard="${TEST_SHARD_INDEX:-all}"
[[ -n "${TEST_SHARD_STATUS_FILE:-}" ]] && touch "$TEST_SHARD_STATUS_FILE"
if [[ $shard != 1 ]]; then
# --output is written only over a regular file, never over an input: an
# existing FIFO, symlink or device is refused and left as it was, and so is
# the --text file or a model file under another name (each used to be
# replaced by the capture). Refused before torch is imported.
mkfifo "$TMP/fifo.safetensors"
echo keep >"$TMP/target.safetensors"
ln -s "$TMP/target.safetensors" "$TMP/link.safetensors"
cp "$TMP/text.txt" "$TMP/text.orig"
cp "$TMP/model/config.json" "$TMP/config.orig"
refuse_output() {  # what output expected-message
  timeout 600 "$PYTHON" "$CAPTURE" --model "$TMP/model" --text "$TMP/text.txt" \
    --layer 0 --matrix --max_tokens 8 --output "$2" >"$TMP/out-refused" 2>&1
  local status=$?
  [[ $status -eq 2 ]] && grep -qF -- "$3" "$TMP/out-refused" \
    || fail "capture --output=$1: exit $status: $(cat "$TMP/out-refused")"
}
refuse_output "a FIFO" "$TMP/fifo.safetensors" \
  "--output=$TMP/fifo.safetensors exists and is a FIFO: refusing to replace it"
[[ -p "$TMP/fifo.safetensors" ]] || fail "the FIFO --output was replaced"
refuse_output "a symlink" "$TMP/link.safetensors" \
  "--output=$TMP/link.safetensors exists and is a symbolic link: refusing to replace it"
[[ -L "$TMP/link.safetensors" && "$(cat "$TMP/target.safetensors")" == keep ]] \
  || fail "the symlink --output or its target was replaced"
refuse_output "/dev/null" /dev/null \
  "--output=/dev/null exists and is a character device: refusing to replace it"
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"
refuse_output "the --text file" "$TMP/./text.txt" \
  "--output=$TMP/./text.txt is the input --text=$TMP/text.txt: writing it would destroy the input"
cmp -s "$TMP/text.txt" "$TMP/text.orig" || fail "the --text file was overwritten"
refuse_output "a model file" "$TMP/model/../model/config.json" \
  "--output=$TMP/model/../model/config.json is the input $TMP/model/config.json (in --model): writing it would destroy the input"
cmp -s "$TMP/model/config.json" "$TMP/config.orig" \
  || fail "the model's config.json was overwritten"
[[ -z "$(ls "$TMP" "$TMP/model" | grep '\.tmp$')" ]] \
  || fail "a refused --output left a temporary file"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --text "$TMP/text.txt" --layer 1 \
  --matrix --output "$TMP/attn.safetensors" --max_tokens 48 \
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

# The protobuf wire format read by hand (this Python need not have
# protobuf), for the checks below: $TMP/wire.py.
cat >"$TMP/wire.py" <<'PYEOF'
"""Protobuf wire format: varints and (field, value) pairs."""


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
PYEOF

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

sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])  # $TMP/wire.py
from wire import fields  # noqa: E402

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
# Without --kv_heads, the model's num_key_value_heads (2) from the capture's
# metadata; a --kv_heads that contradicts it is refused.
"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/meta.pb" >"$TMP/meta" 2>&1 \
  && grep -q "48 steps, 4 query head(s), 2 kv head(s)" "$TMP/meta" \
  || fail "import without --kv_heads: $(cat "$TMP/meta")"
"$IMPORT" --input="$TMP/attn.safetensors" --output="$TMP/bad.pb" --kv_heads=1 \
  >"$TMP/err7" 2>&1
[[ $? -eq 1 && ! -e "$TMP/bad.pb" ]] \
  && grep -qF 'attn.safetensors: --kv_heads=1 contradicts __metadata__ num_key_value_heads = "2"' "$TMP/err7" \
  || fail "import --kv_heads=1 against the metadata's 2: $(cat "$TMP/err7")"
"$IMPORT" --help >"$TMP/help" 2>&1
for flag in input output layer heads kv_heads id; do
  grep -q -- "--$flag" "$TMP/help" || fail "--help does not explain --$flag"
done

# --- The observation window: what a prefill step needs, never the square ---
# A 600-token prompt given as token ids, two layers (0 and 1: layer 1's input
# is layer 0's output, computed a block of 64 rows at a time and its MLP 100
# tokens at a time), the last 40 queries' rows.
"$PYTHON" -c 'import random; random.seed(5); print(" ".join(str(random.randrange(64)) for _ in range(600)))' >"$TMP/ids.txt"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 40 --block_rows 64 --chunk_rows 100 \
  --output "$TMP/win.safetensors" >"$TMP/wcapture" 2>"$TMP/wcapture.err" \
  || fail "window capture exited $?: $(cat "$TMP/wcapture.err")"
grep -q "wrote window.0, window.1 \[4, 40, 600\]" "$TMP/wcapture" \
  || fail "window capture summary: $(cat "$TMP/wcapture")"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 40 --attention sdpa \
  --output "$TMP/sdpa.safetensors" >"$TMP/scapture" 2>"$TMP/scapture.err" \
  || fail "sdpa capture exited $?: $(cat "$TMP/scapture.err")"
# A chunked prefill of 256 tokens a chunk: chunks end at 256, 512 and 600,
# each with the rows of its last 40 queries (216..255, 472..511, 560..599).
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 40 --block_rows 64 --chunk_rows 100 \
  --prefill_chunk 256 --output "$TMP/chunks.safetensors" \
  >"$TMP/ccapture" 2>"$TMP/ccapture.err" \
  || fail "chunked capture exited $?: $(cat "$TMP/ccapture.err")"
grep -q "wrote 3 chunk tensors per layer for layers 0, 1: chunk.<n>.<e> \[4, min(40, chunk), e\], e = 256, 512, 600" "$TMP/ccapture" \
  || fail "chunked capture summary: $(cat "$TMP/ccapture")"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 40 --attention sdpa --prefill_chunk 256 \
  --output "$TMP/schunks.safetensors" >"$TMP/sccapture" 2>"$TMP/sccapture.err" \
  || fail "sdpa chunked capture exited $?: $(cat "$TMP/sccapture.err")"
# Bit for bit: eager rows against transformers' own eager attention
# (output_attentions=True on the whole prompt), sdpa rows against kvpress's
# own SnapKVPress.compute_window_attention inside an sdpa run (its keys from
# the cache, its hidden states and RoPE from the layer's call).
"$PYTHON" - "$TMP" <<'PYEOF' || fail "window rows against transformers and kvpress"
import sys, torch, transformers
from safetensors import safe_open
from transformers import AutoModelForCausalLM, DynamicCache
transformers.utils.logging.disable_progress_bar()
tmp = sys.argv[1]
ids = torch.tensor([[int(x) for x in open(f"{tmp}/ids.txt").read().split()]])
eager = AutoModelForCausalLM.from_pretrained(f"{tmp}/model", attn_implementation="eager").eval()
with torch.no_grad():
    attentions = eager(input_ids=ids, output_attentions=True, use_cache=False).attentions
with safe_open(f"{tmp}/win.safetensors", "pt") as f:
    meta = f.metadata()
    assert sorted(f.keys()) == ["window.0", "window.1"], list(f.keys())
    for n in (0, 1):
        rows = f.get_tensor(f"window.{n}")
        assert rows.dtype == torch.float32 and tuple(rows.shape) == (4, 40, 600)
        assert torch.equal(rows, attentions[n][0, :, -40:, :]), f"eager layer {n}"
assert meta["layout"] == "window" and meta["window_rows"] == "40", meta
assert meta["tokens"] == "600" and meta["layers"] == "0,1", meta
assert meta["attention"] == "eager" and len(meta["token_ids_sha256"]) == 64, meta

# The chunked capture: chunk.<n>.<e> [4, 40, e], the rows of queries
# e-40 .. e-1 over keys 0..e-1, are transformers' rows cut at e (zero
# beyond); the last chunk's are the window's.
spans = [(216, 256), (472, 512), (560, 600)]
with safe_open(f"{tmp}/chunks.safetensors", "pt") as f, \
        safe_open(f"{tmp}/win.safetensors", "pt") as w:
    meta = f.metadata()
    assert sorted(f.keys()) == sorted(f"chunk.{n}.{e}" for n in (0, 1)
                                      for _, e in spans), list(f.keys())
    for n in (0, 1):
        for first, end in spans:
            rows = f.get_tensor(f"chunk.{n}.{end}")
            assert rows.dtype == torch.float32 and tuple(rows.shape) == (4, 40, end)
            assert torch.equal(rows, attentions[n][0, :, first:end, :end]), f"eager chunk.{n}.{end}"
            assert not attentions[n][0, :, first:end, end:].any()
        assert torch.equal(f.get_tensor(f"chunk.{n}.600"), w.get_tensor(f"window.{n}"))
assert meta["layout"] == "chunks" and meta["prefill_chunk"] == "256", meta
assert meta["chunks"] == "3" and meta["window_rows"] == "40", meta
assert meta["tokens"] == "600" and meta["attention"] == "eager", meta

from kvpress.presses.snapkv_press import SnapKVPress
sdpa = AutoModelForCausalLM.from_pretrained(f"{tmp}/model", attn_implementation="sdpa").eval()
inputs = {}
def keep(module, args, kwargs):
    inputs[module.layer_idx] = (kwargs["hidden_states"], kwargs["position_embeddings"])
for layer in sdpa.model.layers:
    layer.self_attn.register_forward_pre_hook(keep, with_kwargs=True)
cache = DynamicCache()
with torch.no_grad():
    sdpa(input_ids=ids, past_key_values=cache, use_cache=True)
    with safe_open(f"{tmp}/sdpa.safetensors", "pt") as f:
        assert f.metadata()["attention"] == "sdpa"
        for n in (0, 1):
            hidden, position_embeddings = inputs[n]
            theirs = SnapKVPress.compute_window_attention(
                sdpa.model.layers[n].self_attn, hidden, cache.layers[n].keys,
                40, position_embeddings)[0]
            ours = f.get_tensor(f"window.{n}")
            # kvpress keeps the keys outside the window only.
            assert torch.equal(ours[:, :, :-40], theirs), f"sdpa layer {n}"
            gap = (ours - attentions[n][0, :, -40:, :]).abs().max().item()
            print(f"layer {n}: eager and kvpress-under-sdpa rows differ by at most {gap:.3g}")
    # Each chunk: kvpress's recomputation at the chunk's end, the forward
    # pass's hidden states, RoPE and keys cut at e.
    with safe_open(f"{tmp}/schunks.safetensors", "pt") as f, \
            safe_open(f"{tmp}/sdpa.safetensors", "pt") as w:
        assert f.metadata()["attention"] == "sdpa"
        for n in (0, 1):
            hidden, (cos, sin) = inputs[n]
            for first, end in spans:
                theirs = SnapKVPress.compute_window_attention(
                    sdpa.model.layers[n].self_attn, hidden[:, :end],
                    cache.layers[n].keys[:, :, :end], 40,
                    (cos[:, :end], sin[:, :end]))[0]
                ours = f.get_tensor(f"chunk.{n}.{end}")
                assert tuple(ours.shape) == (4, 40, end)
                assert torch.equal(ours[:, :, :-40], theirs), f"sdpa chunk.{n}.{end}"
            assert torch.equal(f.get_tensor(f"chunk.{n}.600"), w.get_tensor(f"window.{n}"))
print("bit for bit: eager rows = transformers' eager, sdpa rows = kvpress's recomputation, windows and chunks")
PYEOF

# The window as a prefill scenario: one step admitting the 600 positions with
# the 40 queries' rows (query q's row has q + 1 weights, its own last), and
# with --decode=8 a prefill of 592 positions (rows of queries 560..591) then
# 8 decode steps each carrying its row without the diagonal.
"$IMPORT" --input="$TMP/win.safetensors" --layer=1 --kv_heads=2 \
  --output="$TMP/win.pb" >"$TMP/wimport" 2>&1 \
  || fail "import of the window: $(cat "$TMP/wimport")"
"$IMPORT" --input="$TMP/win.safetensors" --layer=1 --kv_heads=2 \
  --window_rows=32 --decode=8 --output="$TMP/wdec.pb" >"$TMP/wdimport" 2>&1 \
  || fail "import of the window with --decode=8: $(cat "$TMP/wdimport")"
# The chunks: one prefill step per chunk (256, 256 and 88 positions, 40
# query rows per head each); with --decode=8 --window_rows=16 the last
# chunk's step admits 80 with the rows of queries 576..591, then 8 decode
# steps.
"$IMPORT" --input="$TMP/chunks.safetensors" --layer=1 --kv_heads=2 \
  --output="$TMP/chunks.pb" >"$TMP/cimport" 2>&1 \
  || fail "import of the chunks: $(cat "$TMP/cimport")"
grep -q "3 steps (3 prefill steps, one per chunk, admitting 600 positions with 120 query rows per head in all, 0 decode step(s))" "$TMP/cimport" \
  || fail "chunked import summary: $(cat "$TMP/cimport")"
"$IMPORT" --input="$TMP/chunks.safetensors" --layer=1 --kv_heads=2 \
  --window_rows=16 --decode=8 --output="$TMP/cdec.pb" >"$TMP/cdimport" 2>&1 \
  || fail "import of the chunks with --decode=8: $(cat "$TMP/cdimport")"
grep -q "11 steps (3 prefill steps, one per chunk, admitting 592 positions with 48 query rows per head in all, 8 decode step(s))" "$TMP/cdimport" \
  || fail "chunked import summary with --decode=8: $(cat "$TMP/cdimport")"
"$PYTHON" - "$TMP" <<'PYEOF' || fail "the prefill scenarios"
import struct, sys
from safetensors import safe_open
tmp = sys.argv[1]
with safe_open(f"{tmp}/win.safetensors", "pt") as f:
    rows = f.get_tensor("window.1")

sys.path.insert(0, tmp)  # $TMP/wire.py
from wire import fields  # noqa: E402

def steps(path):
    scenario = list(fields(open(path, "rb").read()))
    assert dict((n, v) for n, v in scenario if n in (4, 5)) == {4: 4, 5: 2}
    return [list(fields(v)) for n, v in scenario if n == 2]

def floats(row):
    return b"".join(v for n, v in fields(row) if n == 1)

def want(h, q, count):  # window.1 holds queries 560..599
    return struct.pack(f"<{count}f", *rows[h, q - 560, :count].tolist())

# One prefill step: 600 admitted, 4 heads x 40 query rows, head 0's first.
(step,) = steps(f"{tmp}/win.pb")
assert (1, 600) in step, step[:2]
queries = [v for n, v in step if n == 4]
assert len(queries) == 160 and not any(n in (2, 3) for n, _ in step)
for h in range(4):
    for j in range(40):
        q = 560 + j
        assert floats(queries[h * 40 + j]) == want(h, q, q + 1), (h, q)

# --decode=8: a prefill of 592 with queries 560..591, then 8 decode steps.
prefill, *decode = steps(f"{tmp}/wdec.pb")
assert (1, 592) in prefill and len(decode) == 8
queries = [v for n, v in prefill if n == 4]
assert len(queries) == 4 * 32
for h in range(4):
    for j in range(32):
        q = 560 + j
        assert floats(queries[h * 32 + j]) == want(h, q, q + 1), (h, q)
for t, step in enumerate(decode):
    q = 592 + t
    assert (1, 1) in step
    heads = [v for n, v in step if n == 3]
    assert len(heads) == 4, (q, len(heads))
    for h in range(4):
        assert floats(heads[h]) == want(h, q, q), (h, q)
print("bit for bit: the prefill step's 160 query rows; 128 rows and 8 decode steps")

with safe_open(f"{tmp}/chunks.safetensors", "pt") as f:
    chunks = {e: f.get_tensor(f"chunk.1.{e}") for e in (256, 512, 600)}

def chunk_row(h, q, e, count):  # chunk.1.<e> holds queries e-40 .. e-1
    return struct.pack(f"<{count}f", *chunks[e][h, q - (e - 40), :count].tolist())

def check_prefill(step, admit, e, first, stop):
    assert (1, admit) in step, step[:2]
    assert not any(n in (2, 3) for n, _ in step)
    queries = [v for n, v in step if n == 4]
    m = stop - first
    assert len(queries) == 4 * m, (e, len(queries))
    for h in range(4):
        for j, q in enumerate(range(first, stop)):
            assert floats(queries[h * m + j]) == chunk_row(h, q, e, q + 1), (e, h, q)

steps_ = steps(f"{tmp}/chunks.pb")
assert len(steps_) == 3
for step, (admit, e) in zip(steps_, [(256, 256), (256, 512), (88, 600)]):
    check_prefill(step, admit, e, e - 40, e)
steps_ = steps(f"{tmp}/cdec.pb")
prefill, last, decode = steps_[:2], steps_[2], steps_[3:]
check_prefill(prefill[0], 256, 256, 240, 256)
check_prefill(prefill[1], 256, 512, 496, 512)
check_prefill(last, 80, 600, 576, 592)
assert len(decode) == 8
for t, step in enumerate(decode):
    q = 592 + t
    heads = [v for n, v in step if n == 3]
    assert (1, 1) in step and len(heads) == 4, (q, len(heads))
    for h in range(4):
        assert floats(heads[h]) == chunk_row(h, q, 600, q), (h, q)
print("bit for bit: 3 chunked prefill steps of 160 query rows; 3 of 64 and 8 decode steps")
PYEOF
for scenario in chunks cdec; do
  for policy in "snapkv preset=kvpress-0.5.5,ratio_ppm=500000" \
                "tova preset=kvpress-0.5.5,ratio_ppm=500000"; do
    set -- $policy
    out="$TMP/sim-$scenario-$1"
    steps=$([[ $scenario == chunks ]] && echo 3 || echo 11)
    if ! "$SIMULATE" --scenario="$TMP/$scenario.pb" --policy="$1" --params="$2" \
        --quiet >"$out" 2>&1; then
      fail "simulate $1 over the chunked $scenario.pb exited non-zero: $(tail -3 "$out")"
    elif ! grep -q "^$steps steps, " "$out"; then
      fail "simulate $1 over $scenario.pb: no '$steps steps' in: $(cat "$out")"
    else
      echo "ok: $1 over the chunked prefill $scenario.pb: $(grep "steps, " "$out")"
    fi
  done
done

# Refusals before anything large is allocated, each naming what to change;
# none writes its output.
refuse() {  # what expected-message args...
  local what="$1" message="$2"
  shift 2
  "$PYTHON" "$CAPTURE" --model "$TMP/model" --output "$TMP/no.safetensors" \
    "$@" >"$TMP/refused" 2>&1
  local status=$?
  [[ $status -eq 2 ]] && grep -qF -- "$message" "$TMP/refused" \
    || fail "$what: exit $status: $(cat "$TMP/refused")"
}
echo "[1, 2, 64]" >"$TMP/ids-out-of-range.txt"
echo "1 x" >"$TMP/ids-not-a-number.txt"
refuse "memory" "this run needs about" --token_ids "$TMP/ids.txt" \
  --memory_limit_gib 0.01
refuse "token out of range" "entry 2 is 64, outside the vocabulary 0..63" \
  --token_ids "$TMP/ids-out-of-range.txt"
refuse "not a token" "entry 1 is not an integer: 'x'" \
  --token_ids "$TMP/ids-not-a-number.txt"
refuse "window 0" "--window must be at least 1, got 0" \
  --token_ids "$TMP/ids.txt" --window 0
refuse "matrix under sdpa" "kvpress recomputes only the observation window" \
  --token_ids "$TMP/ids.txt" --matrix --attention sdpa
refuse "prefill_chunk 0" "--prefill_chunk must be at least 1, got 0" \
  --token_ids "$TMP/ids.txt" --prefill_chunk 0
refuse "prefill_chunk with matrix" "give --prefill_chunk or --matrix, not both" \
  --token_ids "$TMP/ids.txt" --prefill_chunk 64 --matrix
refuse "layer twice" "names a layer twice" --token_ids "$TMP/ids.txt" \
  --layers 1,1
refuse "bad device" "--device nowhere" --token_ids "$TMP/ids.txt" \
  --device nowhere
[[ ! -e "$TMP/no.safetensors" ]] || fail "a refused capture wrote its output"
[[ -z "$(ls "$TMP" | grep '\.tmp$')" ]] || fail "a temporary file was left"


# --- Keys and values (--keys, --values, spec/tensors.md) ---
# keys.<n> F32 [2, 600, 8] and values.<n> F32 [2, 600, 8] beside the window
# (eager and sdpa) and the chunks, and values.<n> alone beside a window: bit
# for bit the DynamicCache's keys and values of transformers' own forward
# pass with the same attention; the rows are those captured without them,
# and a capture without --keys (--values) has no keys.<n> (values.<n>).
for keys in "kwin --keys --values" "kchunks --keys --values --prefill_chunk 256" \
    "ksdpa --keys --values --attention sdpa" "vwin --values"; do
  set -- $keys
  "$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
    --layers 0,1 --window 40 --block_rows 64 --chunk_rows 100 \
    "${@:2}" --output "$TMP/$1.safetensors" >/dev/null 2>"$TMP/$1.err" \
    || fail "capture ${*:2} exited $?: $(cat "$TMP/$1.err")"
done
"$PYTHON" - "$TMP" <<'PYEOF' || fail "keys and values against transformers' cache"
import sys, torch, transformers
from safetensors import safe_open
from transformers import AutoModelForCausalLM, DynamicCache
transformers.utils.logging.disable_progress_bar()
tmp = sys.argv[1]
ids = torch.tensor([[int(x) for x in open(f"{tmp}/ids.txt").read().split()]])
both, values_only = ("keys", "values"), ("values",)
for attention, triples in (("eager", (("kwin", "win", both), ("kchunks", "chunks", both),
                                      ("vwin", "win", values_only))),
                           ("sdpa", (("ksdpa", "sdpa", both),))):
    model = AutoModelForCausalLM.from_pretrained(f"{tmp}/model", attn_implementation=attention).eval()
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    for name, plain, kinds in triples:
        with safe_open(f"{tmp}/{name}.safetensors", "pt") as f, \
                safe_open(f"{tmp}/{plain}.safetensors", "pt") as p:
            meta = f.metadata()
            assert meta["attention"] == attention, meta
            for kind in ("keys", "values"):
                assert (meta.get(kind) == "1") == (kind in kinds), (name, meta)
                assert kind not in p.metadata() and not [k for k in p.keys() if k.startswith(kind + ".")]
            added = [f"{kind}.{n}" for kind in kinds for n in (0, 1)]
            assert sorted(f.keys()) == sorted([*p.keys(), *added]), list(f.keys())
            for kind in kinds:
                for n in (0, 1):
                    got = f.get_tensor(f"{kind}.{n}")
                    assert got.dtype == torch.float32 and tuple(got.shape) == (2, 600, 8), got.shape
                    want = getattr(cache.layers[n], kind)[0]
                    assert torch.equal(got, want), f"{name}: {kind}.{n}"
            for k in p.keys():
                assert torch.equal(f.get_tensor(k), p.get_tensor(k)), f"{name}: {k}"
print("bit for bit: keys.0, keys.1, values.0 and values.1 = the cache's, "
      "eager (window, chunks, values alone) and sdpa")
PYEOF

# import_attention --keys makes scenarios knorm runs (kvpress's preset at a
# ratio of 0.5, each prefill step keeping floor(half) of its cache,
# spec/prefill.md#budgets-from-a-ratio): the window's one step keeps 300 of
# 600 per KV head; the chunks' 128 of 256, 192 of 128 + 256, 140 of
# 192 + 88. Without --keys knorm refuses the scenario, naming head_dim.
for pair in kwin:300 kchunks:140; do
  name=${pair%:*} want=${pair#*:}
  "$IMPORT" --input="$TMP/$name.safetensors" --layer=1 --keys \
    --output="$TMP/$name.pb" >"$TMP/$name-import.err" 2>&1 \
    || fail "import --keys $name: $(cat "$TMP/$name-import.err")"
  "$SIMULATE" --scenario="$TMP/$name.pb" --policy=knorm \
    --params=preset=kvpress-0.5.5,ratio_ppm=500000 --json="$TMP/$name.json" \
    --quiet >"$TMP/$name-sim.err" 2>&1 \
    || fail "simulate knorm on $name: $(cat "$TMP/$name-sim.err")"
  "$PYTHON" - "$TMP/$name.json" "$want" <<'PYEOF' || fail "knorm's kept sets on $name"
import json, sys
data = json.load(open(sys.argv[1]))
assert not data.get("refusal"), data["refusal"]
kept = [s["kept"] for s in data["kept_at_end"]]
want = int(sys.argv[2])
assert [len(k) for k in kept] == [want, want], [len(k) for k in kept]
PYEOF
done
"$IMPORT" --input="$TMP/kwin.safetensors" --layer=1 \
  --output="$TMP/kwin-nokeys.pb" >/dev/null 2>&1 \
  || fail "import without --keys"
"$SIMULATE" --scenario="$TMP/kwin-nokeys.pb" --policy=knorm \
  --params=budget=8 >"$TMP/nokeys.out" 2>&1
grep -q "head_dim" "$TMP/nokeys.out" \
  || fail "knorm without keys was not refused naming head_dim: $(cat "$TMP/nokeys.out")"
echo "knorm over import_attention --keys: 300 (window) and 140 (chunks) kept per KV head; refused without keys"

# import_attention --keys --values makes scenarios lagkv runs (sinks 4, lag
# 16, budget 300, at every step, spec/policies/lagkv.md): the window's one
# step of 600 positions evicts 300 per KV head; the chunks' steps of 256,
# 256 and 88 positions evict 0, 212 and 88. Each of the two KV heads'
# victims are its own (granularity kv_head). Refused without values
# (naming value_dim: the --keys import) and without keys (head_dim: a
# --values import).
for pair in kwin:0,300 kchunks:0,212,88; do
  name=${pair%:*} want=${pair#*:}
  "$IMPORT" --input="$TMP/$name.safetensors" --layer=1 --keys --values \
    --output="$TMP/$name-kv.pb" >"$TMP/$name-kv-import.err" 2>&1 \
    || fail "import --keys --values $name: $(cat "$TMP/$name-kv-import.err")"
  "$SIMULATE" --scenario="$TMP/$name-kv.pb" --policy=lagkv \
    --params=budget=300,sinks=4,lag=16 --json="$TMP/$name-lagkv.json" \
    --quiet >"$TMP/$name-lagkv.err" 2>&1 \
    || fail "simulate lagkv on $name: $(cat "$TMP/$name-lagkv.err")"
  "$PYTHON" - "$TMP/$name-lagkv.json" "$want" <<'PYEOF' || fail "lagkv's victims on $name"
import json, sys
data = json.load(open(sys.argv[1]))
assert not data.get("refusal"), data["refusal"]
want = [int(x) for x in sys.argv[2].split(",")]
if want[0] == 0:
    want = want[1:]
steps = data["steps"]
evicted = [[len(s["victims"]) for s in step["sets"]] for step in steps]
assert [e for e in evicted if any(e)] == [[w, w] for w in want], evicted
kept = [s["kept"] for s in data["kept_at_end"]]
assert [len(k) for k in kept] == [300, 300], [len(k) for k in kept]
# lagkv keeps the 4 sinks and the newest positions (the last partition and
# the remainder after it) whatever the tensors.
for k in kept:
    assert k[:4] == [0, 1, 2, 3] and k[-16:] == list(range(584, 600)), k
PYEOF
done
"$SIMULATE" --scenario="$TMP/kwin.pb" --policy=lagkv \
  --params=budget=300,sinks=4,lag=16 >"$TMP/novalues.out" 2>&1
grep -q "value_dim" "$TMP/novalues.out" \
  || fail "lagkv without values was not refused naming value_dim: $(cat "$TMP/novalues.out")"
"$IMPORT" --input="$TMP/vwin.safetensors" --layer=1 --values \
  --output="$TMP/vwin.pb" >"$TMP/vwin-import.err" 2>&1 \
  || fail "import --values vwin: $(cat "$TMP/vwin-import.err")"
"$SIMULATE" --scenario="$TMP/vwin.pb" --policy=lagkv \
  --params=budget=300,sinks=4,lag=16 >"$TMP/nokeys-lagkv.out" 2>&1
grep -q "head_dim" "$TMP/nokeys-lagkv.out" \
  || fail "lagkv without keys was not refused naming head_dim: $(cat "$TMP/nokeys-lagkv.out")"
echo "lagkv over import_attention --keys --values: 300 of 600 kept per KV head (window, chunks); refused without values or keys"
fi  # shard 0

if [[ $shard != 0 ]]; then
# The totals' check below reads shard 0's window capture too.
[[ -f "$TMP/ids.txt" ]] || "$PYTHON" -c 'import random; random.seed(5); print(" ".join(str(random.randrange(64)) for _ in range(600)))' >"$TMP/ids.txt"
[[ -f "$TMP/win.safetensors" ]] || "$PYTHON" "$CAPTURE" --model "$TMP/model" \
  --token_ids "$TMP/ids.txt" --layers 0,1 --window 40 --block_rows 64 --chunk_rows 100 \
  --output "$TMP/win.safetensors" >"$TMP/wcapture" 2>"$TMP/wcapture.err" \
  || fail "window capture (shard 1) exited $?: $(cat "$TMP/wcapture.err")"

# --- tools/attention/attention_report.py: model and prompt to policies x ratios ---
# The 600-token prompt: a prefill of 568 (the last 64 queries' rows), then
# 32 decode queries. kvpress's budget is max(1, int(568 * (1 - r))): 426,
# 284, 142 and 56 kept for r = 0.25, 0.5, 0.75, 0.9, in every set; the
# retained mass is a share, so in [0, 1], and it cannot grow as the ratio
# removes more.
"$PYTHON" "$REPORT" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 64 --decode 32 --policies snapkv,tova,streamingllm,knorm \
  --out "$TMP/report" \
  --import_attention "$IMPORT" --simulate "$SIMULATE" >"$TMP/report.out" 2>&1 \
  || fail "attention_report exited $?: $(tail -5 "$TMP/report.out")"
# Without --policies: all seven under eager attention, h2o left out under
# sdpa (whose weights the totals cannot be summed from).
"$PYTHON" - "$REPORT" "$TMP" <<'PYEOF' || fail "attention_report's default policies"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("attention_report", sys.argv[1])
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)
for extra, want in (([], ["snapkv", "tova", "streamingllm", "h2o", "knorm", "keydiff",
                          "lagkv"]),
                    (["--attention", "sdpa"], ["snapkv", "tova", "streamingllm", "knorm",
                                               "keydiff", "lagkv"])):
    args = report.parse_args(["--out", f"{sys.argv[2]}/defaults-out", *extra])
    _, policies = report.validate(args)
    assert policies == want, (extra, policies)
PYEOF
"$PYTHON" - "$TMP/report" <<'PYEOF' || fail "attention_report's files"
import json, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
data = json.load(open(f"{out}/report.json"))
assert data["tokens"] == 600 and data["prefill"] == 568 and data["decode"] == 32
results = data["results"]
assert len(results) == 2 * 4 * 4, len(results)
want = {0.25: 426, 0.5: 284, 0.75: 142, 0.9: 56}
for r in results:
    assert set(r["kept_after_prefill"]) == {want[r["ratio"]]}, r
    assert len(r["per_head"]) == 4 and all(0.0 <= v <= 1.0 for v in r["per_head"]), r
    assert r["worst"] == min(r["per_head"]), r
for layer in (0, 1):
    for policy in ("snapkv", "tova", "streamingllm", "knorm"):
        masses = [r["mean"] for r in sorted(results, key=lambda r: r["ratio"])
                  if r["layer"] == layer and r["policy"] == policy]
        assert masses == sorted(masses, reverse=True), (layer, policy, masses)
report = open(f"{out}/report.md").read()
assert report.count("\n| ") == 2 + 32  # header, rule, rows
# The capture's metadata carried: the prompt's hash, in the JSON and the table.
import hashlib, struct
ids = [int(t) for t in open(f"{out}/token_ids.txt").read().split()]
sha = hashlib.sha256(struct.pack(f"<{len(ids)}q", *ids)).hexdigest()
assert len(ids) == 600 and data["token_ids_sha256"] == sha and sha in report, data
# The kvpress column: kvpress's own presses in the model keep kvspec's sets
# at 50 % (568 -> 284 kept, well above SnapKV's window of 64).
# Not knorm at layer 0: RoPE rotates a key without changing its norm, so a
# layer-0 key's norm is its token's (64 token ids over 568 positions here),
# and positions of one token tie but for the rounding of the rotation,
# which kvpress's float32 norm and kvspec's binary64 one break differently.
for r in results:
    assert len(r["kvpress_differ_per_head"]) == 4, r
    if r["ratio"] == 0.5 and (r["policy"], r["layer"]) != ("knorm", 0):
        assert r["kvpress_heads_agreeing"] == 4, r
ET.parse(f"{out}/retained.svg")
assert open(f"{out}/retained.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
csv = open(f"{out}/retained.csv").read().splitlines()
assert csv[0].startswith("layer,policy,ratio,kept_fraction,mean_retained") and len(csv) == 33, csv[:2]
print("attention_report: 32 rows (knorm from the keys too), kept counts as kvpress computes them, kvpress agreeing at 50 %")
PYEOF
grep -q "attention_report: simulate 32 of 32" "$TMP/report.out" \
  && grep -q "capture_attention: layer 1 (2 of 2, captured)" "$TMP/report.out" \
  || fail "attention_report's progress lines: $(head -20 "$TMP/report.out")"
# Its files are written whole, never over a FIFO, a symlink or a device
# (issue 33): write_whole refuses them and leaves no temporary file.
mkfifo "$TMP/wfifo"; ln -s "$TMP/ids.txt" "$TMP/wlink"
"$PYTHON" - "$REPORT" "$TMP" <<'PYEOF' || fail "attention_report's write_whole"
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("attention_report", sys.argv[1])
report = importlib.util.module_from_spec(spec); spec.loader.exec_module(report)
tmp = sys.argv[2]
for path in (f"{tmp}/wfifo", f"{tmp}/wlink", "/dev/null", tmp):
    try:
        report.write_whole(path, "x")
        raise SystemExit(f"write_whole replaced {path}")
    except report.ReportError as error:
        assert "not a regular file" in str(error), error
assert os.path.islink(f"{tmp}/wlink") and open(f"{tmp}/ids.txt").read() != "x"
report.write_whole(f"{tmp}/whole.txt", "whole\n")
assert open(f"{tmp}/whole.txt").read() == "whole\n"
assert not [n for n in os.listdir(tmp) if ".tmp-" in n], os.listdir(tmp)
print("attention_report: write_whole refuses a FIFO, a symlink, a device and a folder")
PYEOF
# h2o beside a window of 40 rows: the report captures the column totals of
# the 568 prefill queries (--totals --totals_decode 32), checked below
# against transformers' rows and against the whole causal matrix; under
# sdpa it refuses (the totals sum eager weights).
"$PYTHON" "$REPORT" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 1 --window 40 --decode 32 --policies h2o,snapkv --ratios 0.5,0.9 \
  --out "$TMP/report-h2o" --import_attention "$IMPORT" --simulate "$SIMULATE" \
  >"$TMP/report-h2o.out" 2>&1 \
  || fail "attention_report --policies h2o,snapkv --window 40: $(tail -5 "$TMP/report-h2o.out")"
grep -q "not run (the scenario carries 40 rows, SnapKVPress's window is 64" "$TMP/report-h2o/report.md" \
  || fail "attention_report --window 40: kvpress's SnapKV (window 64) compared: $(cat "$TMP/report-h2o/report.md")"
"$PYTHON" "$REPORT" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --policies h2o --attention sdpa --out "$TMP/report-h2o-sdpa" \
  --import_attention "$IMPORT" --simulate "$SIMULATE" >"$TMP/report-h2o-sdpa.out" 2>&1
[[ $? -eq 2 ]] && grep -q "h2o reads column totals" "$TMP/report-h2o-sdpa.out" \
  && [[ ! -e "$TMP/report-h2o-sdpa/capture.safetensors" ]] \
  || fail "attention_report --policies h2o --attention sdpa: $(cat "$TMP/report-h2o-sdpa.out")"

# --- tools/bench/captured_blocks.py: blocks against positions on captured rows ---
# Layer 1 of the 600-token prompt, peak 64, blocks of 1 and 8, measured from
# step 100. window's kept set is derived here from its rule, not from
# simulate: with block 1 the last 64 positions before step t; with block 8
# the budget is 56 (the largest multiple of 8 with budget + 7 <= 64) and
# before step t (t positions admitted) it keeps the last 56 + t mod 8; a
# block closes at every step t with (t + 1) mod 8 == 0, and only then does
# it evict 8.
"$PYTHON" "$BLOCKS" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 1 --peak 64 --sizes 1,8 --policies window,h2o --from 100 \
  --out "$TMP/cblocks" --import_attention "$IMPORT" --simulate "$SIMULATE" \
  >"$TMP/cblocks.out" 2>&1 || fail "captured_blocks exited $?: $(tail -5 "$TMP/cblocks.out")"
"$PYTHON" - "$TMP/cblocks" <<'PYEOF' || fail "captured_blocks's figures"
import json, sys, numpy as np
from safetensors import safe_open
out = sys.argv[1]
data = json.load(open(f"{out}/blocks.json"))
assert data["tokens"] == 600 and data["from"] == 100, data
rows = safe_open(f"{out}/capture.safetensors", "np").get_tensor("layer.1")
results = {(r["policy"], r["block"], r["block_score"]): r for r in data["results"]}
assert sorted(results) == [("h2o", 1, ""), ("h2o", 8, "max"), ("h2o", 8, "sum"),
                           ("window", 1, ""), ("window", 8, "")], sorted(results)
for block, keep in ((1, lambda t: 64), (8, lambda t: 56 + t % 8)):
    r = results[("window", block, "")]
    for h in range(4):
        shares = [rows[h, t, t - keep(t):t].astype(np.float64).sum()
                  / rows[h, t, :t].astype(np.float64).sum() for t in range(100, 600)]
        assert abs(r["per_head"][h] - np.mean(shares)) < 1e-12, (block, h, r["per_head"][h])
    evicting = 500 if block == 1 else len([t for t in range(100, 600) if (t + 1) % 8 == 0])
    assert r["evictions_per_1000"] == 1000.0 * evicting / 500, r
    assert r["victims_per_eviction"] == block and r["peak_kept"] == (64 if block == 1 else 63), r
for r in data["results"]:
    assert all(0.0 <= v <= 1.0 for v in r["per_head"]) and r["worst"] == min(r["per_head"]), r
    assert r["peak_kept"] <= 64 and r["kept_sets"] == (1 if r["policy"] == "window" else 2), r
assert open(f"{out}/blocks.md").read().count("\n| ") == 2 + 5 + 2 + 2
print("captured_blocks: window's figures as its rule gives them, 5 rows")
PYEOF
"$PYTHON" "$BLOCKS" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --policies window,nope --out "$TMP/cblocks-bad" \
  --import_attention "$IMPORT" --simulate "$SIMULATE" >"$TMP/cblocks-bad.out" 2>&1
[[ $? -eq 1 ]] && grep -q "policies: 'nope'" "$TMP/cblocks-bad.out" \
  || fail "captured_blocks --policies nope: $(cat "$TMP/cblocks-bad.out")"

# --- tools/attention/smollm2.py: its refusals (the download itself is not
# run here: 93 MB from PyPI) ---
mkdir -p "$TMP/smol-exists"
"$PYTHON" "$SMOLLM2" --out "$TMP/smol-exists" >"$TMP/smol1.out" 2>&1
[[ $? -eq 1 ]] && grep -q "exists: give a new path" "$TMP/smol1.out" \
  || fail "smollm2.py over an existing folder: $(cat "$TMP/smol1.out")"
"$PYTHON" "$SMOLLM2" --out "$TMP/no/such/model" >"$TMP/smol2.out" 2>&1
[[ $? -eq 1 ]] && grep -q "does not exist" "$TMP/smol2.out" && [[ ! -e "$TMP/no" ]] \
  || fail "smollm2.py under a missing folder: $(cat "$TMP/smol2.out")"

# --- Column totals (--totals, spec/prefill.md#column-totals) ---
# The 600-token prompt's two layers again, the window of 40 and the totals
# of all 600 queries: totals.<n> must be transformers' output_attentions
# rows summed in float64 one query after the other from +0.0, bit for bit;
# the window is the one captured without --totals. Imported with --totals
# (one row per head), h2o's victims and cut are those of the whole causal
# matrix carried as 600 query rows.
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layers 0,1 --window 40 --block_rows 64 --chunk_rows 100 --totals \
  --output "$TMP/totals.safetensors" >"$TMP/tcapture" 2>"$TMP/tcapture.err" \
  || fail "totals capture exited $?: $(cat "$TMP/tcapture.err")"
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --layer 1 --window 600 --block_rows 64 --chunk_rows 100 \
  --output "$TMP/all-rows.safetensors" >/dev/null 2>"$TMP/acapture.err" \
  || fail "all-rows capture exited $?: $(cat "$TMP/acapture.err")"
"$PYTHON" - "$TMP" <<'EOF' || fail "totals against transformers' rows"
import sys, numpy, torch, transformers
from safetensors import safe_open
from transformers import AutoModelForCausalLM
transformers.utils.logging.disable_progress_bar()
tmp = sys.argv[1]
ids = torch.tensor([[int(x) for x in open(f"{tmp}/ids.txt").read().split()]])
eager = AutoModelForCausalLM.from_pretrained(f"{tmp}/model", attn_implementation="eager").eval()
with torch.no_grad():
    attentions = eager(input_ids=ids, output_attentions=True, use_cache=False).attentions
with safe_open(f"{tmp}/totals.safetensors", "np") as f, \
        safe_open(f"{tmp}/win.safetensors", "np") as w:
    meta = f.metadata()
    assert sorted(f.keys()) == ["totals.0", "totals.1", "window.0", "window.1"], list(f.keys())
    assert meta["total_rows"] == "600", meta
    for n in (0, 1):
        totals = f.get_tensor(f"totals.{n}")
        assert totals.dtype == numpy.float64 and totals.shape == (4, 600), totals.shape
        rows = attentions[n][0].numpy()
        want = numpy.zeros((4, 600))
        for q in range(600):
            want += rows[:, q, :].astype(numpy.float64)
        assert numpy.array_equal(totals.view(numpy.uint64), want.view(numpy.uint64)), f"totals.{n}"
        assert numpy.array_equal(f.get_tensor(f"window.{n}"), w.get_tensor(f"window.{n}"))
print("totals.0 and totals.1: output_attentions' sums, bit for bit")
# attention_report's capture for h2o (--totals_decode 32): layer 1's totals
# over queries 0..567 at keys 0..567 only.
with safe_open(f"{tmp}/report-h2o/capture.safetensors", "np") as f:
    assert f.metadata()["total_rows"] == "568", f.metadata()
    assert sorted(f.keys()) == ["totals.1", "window.1"], list(f.keys())
    totals = f.get_tensor("totals.1")
    assert totals.shape == (4, 568), totals.shape
    rows = attentions[1][0].numpy()
    want = numpy.zeros((4, 568))
    for q in range(568):
        want += rows[:, q, :568].astype(numpy.float64)
    assert numpy.array_equal(totals.view(numpy.uint64), want.view(numpy.uint64)), "totals.1 of 568"
    assert f.get_tensor("window.1").shape == (4, 72, 600)
print("--totals_decode 32: the first 568 queries' sums over keys 0..567, bit for bit")
EOF
"$IMPORT" --input="$TMP/totals.safetensors" --layer=1 --kv_heads=2 --totals \
  --window_rows=1 --output="$TMP/totals.pb" >"$TMP/timport" 2>&1 \
  || fail "import --totals exited $?: $(cat "$TMP/timport")"
"$IMPORT" --input="$TMP/all-rows.safetensors" --kv_heads=2 \
  --output="$TMP/all-rows.pb" >"$TMP/aimport" 2>&1 \
  || fail "import of all rows exited $?: $(cat "$TMP/aimport")"
for params in preset=kvpress-0.5.5,ratio_ppm=500000 budget=120,recent_window=8; do
  "$SIMULATE" --scenario="$TMP/totals.pb" --policy=h2o --params="$params" \
    | tail -n +2 >"$TMP/t.sim" || fail "simulate h2o $params on totals"
  "$SIMULATE" --scenario="$TMP/all-rows.pb" --policy=h2o --params="$params" \
    | tail -n +2 >"$TMP/a.sim" || fail "simulate h2o $params on all rows"
  grep -q "evict" "$TMP/t.sim" && cmp -s "$TMP/t.sim" "$TMP/a.sim" \
    || fail "h2o $params: totals and all rows differ: $(diff "$TMP/t.sim" "$TMP/a.sim" | head -5)"
done
# The report's h2o kept sets, from one row per head beside the totals, are
# those of the whole causal matrix: all 568 prefill rows as query rows,
# then the 32 decode steps (the same victims and cut scores, step by step).
"$IMPORT" --input="$TMP/all-rows.safetensors" --kv_heads=2 --decode=32 \
  --window_rows=568 --output="$TMP/all-rows-d32.pb" >"$TMP/aimport32" 2>&1 \
  || fail "import of all rows, --decode=32: $(cat "$TMP/aimport32")"
for ppm in 500000 900000; do
  "$SIMULATE" --scenario="$TMP/all-rows-d32.pb" --policy=h2o --quiet \
    --params=preset=kvpress-0.5.5,ratio_ppm=$ppm --json="$TMP/all-h2o-$ppm.json" \
    >/dev/null 2>&1 || fail "simulate h2o ratio $ppm on all rows"
  "$PYTHON" - "$TMP/all-h2o-$ppm.json" "$TMP/report-h2o/layer1-h2o-$ppm.json" <<'EOF' \
    || fail "attention_report's h2o at ratio_ppm $ppm: not the whole matrix's sets"
import json, sys
whole, report = (json.load(open(p)) for p in sys.argv[1:3])
assert whole["steps"] == report["steps"] and whole["kept_at_end"] == report["kept_at_end"]
victims = sum(len(s["victims"]) for s in whole["steps"][0]["sets"])
assert victims > 0
print(f"h2o from totals = h2o from all 568 rows: {victims} victims, {len(whole['steps'])} steps")
EOF
done
# Refusals: the totals are eager, window-layout only.
for extra in "--attention sdpa" "--prefill_chunk 256" "--matrix" \
    "--totals_decode 600" "--totals_decode -1"; do
  # shellcheck disable=SC2086
  "$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
    --layer 0 --totals $extra --output "$TMP/bad-totals.safetensors" \
    >"$TMP/bad-totals" 2>&1
  [[ $? -eq 2 && ! -e "$TMP/bad-totals.safetensors" ]] \
    && grep -q -- "--totals" "$TMP/bad-totals" \
    || fail "capture --totals $extra: $(cat "$TMP/bad-totals")"
done
"$PYTHON" "$CAPTURE" --model "$TMP/model" --token_ids "$TMP/ids.txt" \
  --totals_decode 8 --output "$TMP/bad-totals.safetensors" >"$TMP/bad-totals" 2>&1
[[ $? -eq 2 && ! -e "$TMP/bad-totals.safetensors" ]] \
  && grep -q -- "give --totals too" "$TMP/bad-totals" \
  || fail "capture --totals_decode without --totals: $(cat "$TMP/bad-totals")"
fi  # shard 1

echo "capture_attention_test shard $shard took $((SECONDS - start)) s"
if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all capture_attention checks passed"
