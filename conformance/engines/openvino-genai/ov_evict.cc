// The OpenVINO GenAI side of the openvino-genai adapter (adapter.py): one
// process per case, driving GenAI's own CacheEvictionAlgorithm
// (src/cpp/src/continuous_batching/cache/cache_eviction.cpp, release
// 2026.3.0.0) for one decoder layer, exactly through the two calls its
// pipeline makes each step (pipeline_impl.cpp, _maybe_evict_cache_blocks):
// register_new_token_scores, then evict_logical_blocks.
//
//   ov_evict BLOCK START RECENT MAX [MODE POOL SNAPKV]
//
// builds CacheEvictionConfig(START, RECENT, MAX, MODE, apply_rotation false,
// snapkv_window_size SNAPKV) and CacheEvictionAlgorithm(config, BLOCK,
// 1 layer, max_pool_window_size POOL); MODE is 0 SUM or 1 NORM_SUM, and
// without the three the config is SUM, pool 1, SNAPKV 0. Then it reads
// lines from stdin:
//
//   R N X1 ... XN   register N per-token scores (float32, as C99 hex floats)
//   W K N X1 ... XN the same, registered as K SnapKV window scores
//                   (register_new_token_scores' num_snapkv_scores)
//   E               evict; prints "V B1 ... Bk" (the logical blocks evicted,
//                   ascending; "V" alone when none)
//
// Anything GenAI throws (its OPENVINO_ASSERTs: a size not a multiple of the
// block, a zero area) is printed as "X <message>" and ends the process with
// status 1; so is a malformed line. Nothing here decides what is evicted.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "continuous_batching/cache/cache_eviction.hpp"
#include "openvino/genai/cache_eviction.hpp"

namespace {

int Fail(const std::string& message) {
  std::cout << "X " << message << std::endl;
  return 1;
}

bool ParseSize(const char* text, size_t& out) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return false;
  out = static_cast<size_t>(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 8) {
    return Fail("usage: ov_evict BLOCK START RECENT MAX [MODE POOL SNAPKV]");
  }
  size_t block = 0, start = 0, recent = 0, max = 0, mode = 0, pool = 1, snapkv = 0;
  if (!ParseSize(argv[1], block) || !ParseSize(argv[2], start) ||
      !ParseSize(argv[3], recent) || !ParseSize(argv[4], max) ||
      (argc == 8 && (!ParseSize(argv[5], mode) || !ParseSize(argv[6], pool) ||
                     !ParseSize(argv[7], snapkv) || mode > 1))) {
    return Fail("BLOCK START RECENT MAX [MODE POOL SNAPKV] must be non-negative "
                "integers, MODE 0 or 1");
  }
  try {
    const ov::genai::CacheEvictionConfig config(
        start, recent, max,
        mode == 1 ? ov::genai::AggregationMode::NORM_SUM : ov::genai::AggregationMode::SUM,
        /*apply_rotation=*/false, /*snapkv_window_size=*/snapkv);
    ov::genai::CacheEvictionAlgorithm algorithm(config, block, /*num_decoder_layers=*/1,
                                                /*max_pool_window_size=*/pool);
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string op;
      in >> op;
      if (op == "R" || op == "W") {
        size_t window = 0, n = 0;
        if (op == "W" && !(in >> window)) return Fail("W needs a window count");
        if (!(in >> n)) return Fail(op + " needs a count");
        ov::Tensor scores(ov::element::f32, ov::Shape{n});
        float* data = scores.data<float>();
        for (size_t i = 0; i < n; ++i) {
          std::string word;
          if (!(in >> word)) return Fail("R: fewer scores than its count");
          char* end = nullptr;
          const double value = std::strtod(word.c_str(), &end);
          if (end == word.c_str() || *end != '\0') return Fail("R: not a number: " + word);
          data[i] = static_cast<float>(value);  // exact: the adapter sends float32 values
        }
        algorithm.register_new_token_scores({scores}, window);
      } else if (op == "E") {
        const std::vector<std::set<size_t>> evicted = algorithm.evict_logical_blocks();
        std::cout << "V";
        for (size_t b : evicted.at(0)) std::cout << ' ' << b;
        std::cout << std::endl;
      } else {
        return Fail("unknown line: " + line);
      }
    }
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}
