// Probes of OpenVINO GenAI cache_eviction.cpp behaviour (research notes for kvspec issue 35).
#include "continuous_batching/cache/cache_eviction.hpp"
#include <iostream>
#include <random>
using namespace ov::genai;

static AttentionScoresForEachDecoderLayer mk(const std::vector<std::vector<float>>& v) {
    AttentionScoresForEachDecoderLayer r;
    for (auto& x : v) { r.push_back(ov::Tensor(ov::element::f32, {x.size()})); std::copy(x.begin(), x.end(), r.back().data<float>()); }
    return r;
}
static void print_set(const std::set<size_t>& s) { std::cout << "{"; for (auto x : s) std::cout << x << ","; std::cout << "}"; }

int main() {
    const size_t B = 4;
    // 1. decode loop, SUM, all scores equal 1.0: when is the first eviction, how many blocks, which ones, size after
    {
        CacheEvictionConfig cfg(8, 8, 32, AggregationMode::SUM, false, 0);
        CacheEvictionAlgorithm algo(cfg, B, 1, 1);
        size_t kept = 20;  // prompt of 20 tokens, registered in one go (prefill, no snapkv)
        algo.register_new_token_scores(mk({std::vector<float>(kept, 1.0f)}));
        std::cout << "probe1 max_after=" << algo.get_max_cache_size_after_eviction() << "\n";
        for (int step = 0; step < 30; step++) {
            kept += 1;
            algo.register_new_token_scores(mk({std::vector<float>(kept, 1.0f)}));
            auto ev = algo.evict_logical_blocks();
            if (!ev[0].empty()) { std::cout << " step " << step << " kept_before=" << kept << " evicted="; print_set(ev[0]); kept -= ev[0].size() * B; std::cout << " kept_after=" << kept << "\n"; }
        }
    }
    // 2. a long prompt registered at once: how many blocks go at the first eviction
    {
        CacheEvictionConfig cfg(8, 8, 32, AggregationMode::SUM, false, 0);
        CacheEvictionAlgorithm algo(cfg, B, 1, 1);
        algo.register_new_token_scores(mk({std::vector<float>(61, 0.5f)}));
        auto r = algo.get_evictable_block_range();
        auto ev = algo.evict_logical_blocks();
        std::cout << "probe2 L=61 range=[" << r.first << "," << r.second << ") evicted="; print_set(ev[0]); std::cout << " => kept " << 61 - ev[0].size()*B << "\n";
    }
    // 3. max pool direction: window 3, one spike at index 5 of 10 (ignore_first_n_blocks=0)
    {
        EvictionScoreManager m(2, 1, 3, AggregationMode::SUM, 0, 0);
        std::vector<float> s(10, 0.0f); s[5] = 1.0f;
        m.register_new_token_scores(mk({s}), {});
        std::cout << "probe3 pooled:"; for (double x : m.get_scores()[0]) std::cout << " " << x; std::cout << "\n";
    }
    // 4. NORM_SUM counters: snapkv window 4, prompt 10 in chunks 6 (0 window scores) + 4 (4 window scores), then 2 decode steps
    {
        EvictionScoreManager m(2, 1, 1, AggregationMode::NORM_SUM, 0, 4);
        m.register_new_token_scores(mk({std::vector<float>(6, 0.1f)}), {}, 0);
        std::cout << "probe4 after chunk1: counters size " << m.get_counters()[0].size() << " scores size " << m.get_scores()[0].size() << "\n";
        m.register_new_token_scores(mk({std::vector<float>(10, 0.1f)}), {}, 4);
        std::cout << "probe4 after chunk2 counters:"; for (auto c : m.get_counters()[0]) std::cout << " " << c; std::cout << "\n";
        m.register_new_token_scores(mk({std::vector<float>(11, 0.1f)}), {}, 1);
        m.register_new_token_scores(mk({std::vector<float>(12, 0.1f)}), {}, 1);
        std::cout << "probe4 after 2 decode counters:"; for (auto c : m.get_counters()[0]) std::cout << " " << c; std::cout << "\n";
        m.remove_scores({1, 3}, 0);
        std::cout << "probe4 after removing blocks 1,3:"; for (auto c : m.get_counters()[0]) std::cout << " " << c; std::cout << "\n";
    }
    // 5. libstdc++ mt19937 + uniform_int_distribution<int>(0,1), seed 0: the first anchor bits
    {
        std::mt19937 rng(0); std::uniform_int_distribution<int> d(0, 1);
        std::cout << "probe5 seed0 bits:"; for (int i = 0; i < 32; i++) std::cout << d(rng); std::cout << "\n";
    }
    return 0;
}
