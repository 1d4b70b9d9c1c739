// Re-run upstream test case "less_zeroed_than_to_evict" (tests/cpp/cache_eviction.cpp:872-877) in NORM_SUM and SUM,
// printing the evicted blocks: does the lower-index preference come from the tie rule or from NORM_SUM's counters?
#include "continuous_batching/cache/cache_eviction.hpp"
#include <iostream>
using namespace ov::genai;
int main() {
    for (auto mode : {AggregationMode::NORM_SUM, AggregationMode::SUM}) {
        CacheEvictionConfig cfg(32, 32, 192, mode, false, 0);
        CacheEvictionAlgorithm algo(cfg, 4, 2, 1);
        size_t n = algo.get_max_cache_size_after_eviction() + 5 * 4 + 2;
        AttentionScoresForEachDecoderLayer s;
        std::vector<std::set<size_t>> zero = {{}, {30, 22}};
        for (size_t l = 0; l < 2; l++) {
            s.push_back(ov::Tensor(ov::element::f32, {n}));
            float* d = s.back().data<float>();
            for (size_t i = 0; i < n; i++) d[i] = 1.0f;
            for (auto b : zero[l]) for (size_t i = 4 * b; i < 4 * b + 4; i++) d[i] = 0.0f;
        }
        algo.register_new_token_scores(s);
        auto ev = algo.evict_logical_blocks();
        std::cout << (mode == AggregationMode::SUM ? "SUM     " : "NORM_SUM");
        for (auto& e : ev) { std::cout << " {"; for (auto x : e) std::cout << x << ","; std::cout << "}"; }
        std::cout << "\n";
    }
}
