// The bench's clock: seconds since a start, and the median of repeated
// timings (the figure tools/bench reports for a speed).
#ifndef KVSPEC_TOOLS_BENCH_TIMING_H_
#define KVSPEC_TOOLS_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace kvspec {
namespace bench {

inline double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// The upper median of a non-empty list.
inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_TIMING_H_
