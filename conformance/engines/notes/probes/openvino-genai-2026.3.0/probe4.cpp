// Probe 4, GenAI's side: CacheEvictionAlgorithm (CE) with every field the
// note's proposed card names, for one decoder layer, driven by probe4.py.
//   probe4 BLOCK START RECENT MAX MODE POOL SNAPKV
// MODE 0 SUM, 1 NORM_SUM. Lines on stdin:
//   R K N X1 ... XN   register N scores (C99 hex floats), num_snapkv_scores K
//   E                 evict; prints "V B1 ... Bk"
// Errors print "X message" and exit 1.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include "continuous_batching/cache/cache_eviction.hpp"
#include "openvino/genai/cache_eviction.hpp"
int main(int argc, char** argv) {
  if (argc != 8) { std::cout << "X usage" << std::endl; return 1; }
  size_t v[7];
  for (int i = 0; i < 7; ++i) v[i] = std::strtoull(argv[i + 1], nullptr, 10);
  try {
    ov::genai::CacheEvictionConfig config(v[1], v[2], v[3],
        v[4] == 0 ? ov::genai::AggregationMode::SUM : ov::genai::AggregationMode::NORM_SUM,
        false, v[6]);
    ov::genai::CacheEvictionAlgorithm algorithm(config, v[0], 1, v[5]);
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string op; in >> op;
      if (op == "R") {
        size_t k = 0, n = 0; in >> k >> n;
        ov::Tensor scores(ov::element::f32, ov::Shape{n});
        float* d = scores.data<float>();
        for (size_t i = 0; i < n; ++i) { std::string w; in >> w; d[i] = (float)std::strtod(w.c_str(), nullptr); }
        algorithm.register_new_token_scores({scores}, k);
      } else if (op == "E") {
        auto ev = algorithm.evict_logical_blocks();
        std::cout << "V";
        for (size_t b : ev.at(0)) std::cout << ' ' << b;
        std::cout << std::endl;
      }
    }
  } catch (const std::exception& e) { std::cout << "X " << e.what() << std::endl; return 1; }
  return 0;
}
