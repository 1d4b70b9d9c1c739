// KVCrush steady state (CE:364-394): does it engage when the first eviction removes fewer blocks than its budget?
#include "continuous_batching/cache/cache_eviction.hpp"
#include <iostream>
using namespace ov::genai;
static AttentionScoresForEachDecoderLayer mk(size_t n, unsigned salt) {
    AttentionScoresForEachDecoderLayer r; r.push_back(ov::Tensor(ov::element::f32, {n}));
    for (size_t i = 0; i < n; i++) r.back().data<float>()[i] = float(((i * 2654435761u + salt) >> 7) % 1000) / 1000.0f;
    return r;
}
int main() {
    const size_t B = 4;
    for (size_t prompt : {20, 60}) {
        CacheEvictionConfig cfg(8, 8, 32, AggregationMode::SUM, false, 0, KVCrushConfig(2, KVCrushAnchorPointMode::MEAN));
        CacheEvictionAlgorithm algo(cfg, B, 1, 1);
        size_t kept = prompt;
        algo.register_new_token_scores(mk(kept, 1));
        std::cout << "prompt " << prompt << ":";
        for (int step = 0; step < 24; step++) {
            kept += 1;
            algo.register_new_token_scores(mk(kept, step));
            auto ev = algo.evict_logical_blocks();
            if (!ev[0].empty()) { kept -= ev[0].size() * B; std::cout << " [step " << step << " -" << ev[0].size() << " -> " << kept << "]"; }
        }
        std::cout << " final kept " << kept << "\n";
    }
}
