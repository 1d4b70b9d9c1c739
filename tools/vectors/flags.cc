#include "tools/vectors/flags.h"

namespace kvspec {
namespace vectors {

const std::vector<FlagInfo>& Flags() {
  static const auto* flags = new std::vector<FlagInfo>{
      {"tie.lower-position", "harness.md#victims",
       "a tie at the cut: equal scores, and the lower position is evicted",
       {"h2o", "tova", "snapkv"}},
      {"victims.ascending", "harness.md#victims",
       "victims ranked in an order other than ascending are reported ascending",
       {"h2o", "tova", "snapkv"}},
      {"recent-window.protected", "harness.md#protected-positions",
       "a recent-window position would be a victim if it were not protected",
       {"h2o", "tova", "snapkv", "random"}},
      {"sinks.protected", "policies/streamingllm.md#how-it-works",
       "a sink would be evicted if it were not protected",
       {"streamingllm"}},
      {"null-attention.inert", "harness.md#null-attention",
       "treating a null step as a row of zeros would change the victims",
       {"tova", "snapkv"}},
      {"null-attention.still-evicts", "harness.md#null-attention",
       "a step with null attention still admits and evicts",
       {"window", "streamingllm", "h2o", "tova", "snapkv", "random"}},
      {"empty-row.recorded", "harness.md#null-attention",
       "treating a present empty row as null would change the victims",
       {"snapkv"}},
      {"unobserved.zero", "harness.md#unobserved-positions",
       "a position never covered by recorded attention is a victim at +0.0",
       {"h2o", "tova", "snapkv"}},
      {"renormalize.none", "harness.md#what-a-policy-sees",
       "renormalizing the gathered weights over the kept set would change "
       "the victims",
       {"h2o"}},
      {"chunk.one-ranking", "harness.md#chunked-admission",
       "one step evicts several positions, all from one ranking",
       {"window", "streamingllm", "h2o", "tova", "snapkv", "random"}},
      {"chunk.evicts-own", "harness.md#chunked-admission",
       "a chunk's own position is evicted in the step that admitted it",
       {"window", "streamingllm"}},
      {"chunk.first-exceeds-cache", "policies/streamingllm.md#chunked-admission",
       "the first chunk is longer than the whole cache; the sinks survive",
       {"streamingllm"}},
      {"chunk.crosses-capacity", "policies/streamingllm.md#chunked-admission",
       "a chunk takes a partly filled cache past capacity",
       {"streamingllm"}},
      {"chunk.longer-than-window", "policies/streamingllm.md#chunked-admission",
       "a chunk longer than the rolling window arrives at a full cache",
       {"streamingllm"}},
      {"chunk.holds-sinks", "policies/streamingllm.md#chunked-admission",
       "a chunk holds some of the sinks and positions past them",
       {"streamingllm"}},
      {"cache-relative", "harness.md#cache-relative-positions",
       "the query sits at S + W once the cache is full",
       {"streamingllm"}},
      {"h2o.binary64-sum", "policies/h2o.md#how-it-works",
       "summing in binary32 instead of binary64 would change the victims",
       {"h2o"}},
      {"snapkv.ring-wrap", "policies/snapkv.md#the-ring",
       "the ring has wrapped: remembering every step would change the victims",
       {"snapkv"}},
      {"snapkv.ring-index-order", "policies/snapkv.md#window-sums",
       "summing the ring in time order instead of index order would change "
       "the victims",
       {"snapkv"}},
      {"snapkv.pool-defends", "policies/snapkv.md#pooling",
       "pooling changes the victims (pool_kernel 1 would evict others)",
       {"snapkv"}},
      {"snapkv.pool-clamp", "policies/snapkv.md#pooling",
       "pooling that wrapped around the ends would change the victims",
       {"snapkv"}},
      {"snapkv.pool-protected-neighbour", "policies/snapkv.md#pooling",
       "pooling among candidates only, without protected neighbours, would "
       "change the victims",
       {"snapkv"}},
      {"random.draw-order", "policies/random.md#draws",
       "victims come from the Rng's draws in the card's order",
       {"random"}},
      {"neighbour.streamingllm-window", "policies/window.md#neighbours",
       "streamingllm with 0 sinks evicts exactly what window evicts",
       {"streamingllm"}},
      {"neighbour.snapkv-tova", "policies/snapkv.md#neighbours",
       "snapkv without pooling evicts exactly what tova evicts (stationary)",
       {"snapkv"}},
      {"neighbour.snapkv-h2o", "policies/snapkv.md#neighbours",
       "snapkv without pooling and with a long window evicts exactly what h2o "
       "evicts",
       {"snapkv"}},
      {"refusal.unknown-policy", "harness.md#configuration",
       "the policy name is not registered", {}},
      {"refusal.invalid-parameter", "harness.md#configuration",
       "a parameter is refused",
       {"full", "window", "streamingllm", "h2o", "tova", "snapkv", "random"}},
      {"refusal.position", "harness.md#refusals",
       "a step admits no position", {}},
      {"refusal.attention-length", "harness.md#refusals",
       "a row has the wrong number of weights", {}},
      {"refusal.attention-value", "harness.md#refusals",
       "a weight is NaN, infinite or negative", {}},
      {"refusal.invalid-trace", "trace.md#parameters",
       "a trace configuration is refused", {}},
      {"canonical-trace", "trace.md#parameters",
       "a long run on the canonical trace",
       {"full", "window", "streamingllm", "h2o", "tova", "snapkv", "random"}},
      {"defaults", "harness.md#budget",
       "the policy runs at its card's defaults",
       {"window", "streamingllm", "h2o", "tova", "snapkv", "random"}},
  };
  return *flags;
}

const FlagInfo* FindFlag(const std::string& name) {
  for (const FlagInfo& flag : Flags()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

}  // namespace vectors
}  // namespace kvspec
