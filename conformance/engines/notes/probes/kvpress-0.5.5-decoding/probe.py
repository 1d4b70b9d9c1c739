"""Empirical probe of kvpress 0.5.5 DecodingPress on a tiny random Llama (no download).
Layer-0 keys depend only on (token, position), so cached layer-0 key rows are matched to positions."""
import torch, logging
from transformers import LlamaConfig, LlamaForCausalLM, DynamicCache
from kvpress import DecodingPress, StreamingLLMPress, KnormPress, PrefillDecodingPress, SnapKVPress

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=200, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
model = LlamaForCausalLM(cfg).eval()
N_PROMPT, N_DECODE = 10, 14
ids = torch.arange(1, N_PROMPT + N_DECODE + 1).unsqueeze(0)  # distinct tokens, fed teacher-forced

def ref_keys():
    c = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, past_key_values=c, position_ids=torch.arange(ids.shape[1]).unsqueeze(0))
    return c.layers[0].keys[0, 0]  # [T, D] kv-head 0

REF = ref_keys()

def positions(cache):
    k = cache.layers[0].keys[0, 0]
    out = []
    for row in k:
        d = (REF - row).abs().max(dim=-1).values
        out.append(int(d.argmin()) if d.min() < 1e-4 else -1)
    return out

def run(press, prefill_with_press):
    c = DynamicCache()
    log = []
    with torch.no_grad():
        ctx = press(model) if prefill_with_press else torch.no_grad()
        with ctx:
            model.model(input_ids=ids[:, :N_PROMPT], past_key_values=c)
        log.append(("prefill", c.get_seq_length(0), positions(c)))
        with press(model):
            for t in range(N_PROMPT, N_PROMPT + N_DECODE):
                model(input_ids=ids[:, t:t + 1], past_key_values=c, position_ids=torch.tensor([[t]]))
                log.append((f"decode pos {t}", c.get_seq_length(0), positions(c)))
    return log

for name, press, pf in [
    ("DecodingPress(StreamingLLM n_sink=2), interval 3, target 8", DecodingPress(base_press=StreamingLLMPress(n_sink=2), compression_interval=3, target_size=8, hidden_states_buffer_size=0), False),
    ("DecodingPress(Knorm), interval 4, target 6", DecodingPress(base_press=KnormPress(), compression_interval=4, target_size=6, hidden_states_buffer_size=0), False),
    ("PrefillDecoding(prefill StreamingLLM(0.5,n_sink=2), decode DecodingPress(StreamingLLM n_sink=2) interval 3 target 8)",
     PrefillDecodingPress(prefilling_press=StreamingLLMPress(compression_ratio=0.5, n_sink=2),
                          decoding_press=DecodingPress(base_press=StreamingLLMPress(n_sink=2), compression_interval=3, target_size=8, hidden_states_buffer_size=0)), True),
]:
    print("==", name)
    for step, n, pos in run(press, pf):
        print(f"  {step:14s} kept={n:2d} cache order={pos}")
