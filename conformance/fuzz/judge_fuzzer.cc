// libFuzzer target: the runner's judgement of a port of lower precision
// (conformance/precision_judge.h) takes any log a port sends, as the frame's
// bytes parse, and answers with a verdict, never a crash: victims and cut
// entries that are no candidate, sets of the wrong number, positions and
// scores of any value, steps missing or extra.
//
// The first input byte picks the case (an h2o step, snapkv blocks, h2o's
// kept sets sharing a budget), the precision and whether cuts are compared;
// the rest is the port's EvictionLog. Seeds: each case's expected log.
// Built and run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "cc/precision.h"
#include "cc/proto_convert.h"
#include "conformance/precision_judge.h"

namespace {

using kvspec::PolicyConfig;
using kvspec::Scenario;
using kvspec::ScenarioStep;

struct Fixture {
  kvspec::v1::Case vector;
  kvspec::v1::Scenario scenario;
};

Fixture Make(const PolicyConfig& config, const Scenario& s) {
  Fixture f;
  f.scenario = kvspec::ToProto(s);
  *f.vector.mutable_policy() = kvspec::ToProto(config);
  f.vector.set_score_terms(kvspec::ScoreTerms(config, s));
  *f.vector.mutable_expected() =
      kvspec::ToProto(kvspec::RunScenario(config, s, kvspec::RunOptions{true}));
  return f;
}

ScenarioStep Row(std::vector<float> w) {
  ScenarioStep step;
  step.attention = std::move(w);
  return step;
}

ScenarioStep Heads(std::vector<std::vector<float>> rows) {
  ScenarioStep step;
  step.heads = std::move(rows);
  return step;
}

const std::vector<Fixture>& Fixtures() {
  static const std::vector<Fixture>* fixtures = [] {
    auto* out = new std::vector<Fixture>;
    Scenario one;
    ScenarioStep first;
    first.admit = 2;
    one.steps = {first, Row({0.3f, 0.30001f}), Row({0.2f, 0.7f, 0.1f})};
    out->push_back(Make({"h2o", {{"budget", 2}, {"recent_window", 1}}, 0}, one));
    Scenario blocks;
    ScenarioStep six;
    six.admit = 6;
    blocks.steps = {six, Row({0.1f, 0.1f, 0.3f, 0.2f, 0.2f, 0.1f}),
                    Row({0.1f, 0.2f, 0.3f, 0.1f, 0.1f, 0.1f, 0.1f})};
    blocks.steps.back().admit = 2;
    out->push_back(Make({"snapkv", {{"budget", 4}, {"recent_window", 2}, {"block", 2},
                                    {"pool_kernel", 1}, {"obs_window", 2}}, 0},
                        blocks));
    Scenario shared;
    shared.query_heads = 2;
    shared.kv_heads = 2;
    ScenarioStep three;
    three.admit = 3;
    shared.steps = {three, Heads({{0.5f, 0.25f, 0.25f}, {0.1f, 0.1f, 0.8f}}),
                    Heads({{0.4f, 0.3f, 0.2f, 0.1f}, {0.25f, 0.25f, 0.25f, 0.25f}})};
    out->push_back(Make({"h2o", {{"budget", 3}, {"recent_window", 1}, {"granularity", 1},
                                 {"adaptive", 1}}, 0},
                        shared));
    return out;
  }();
  return *fixtures;
}

}  // namespace

// With KVSPEC_JUDGE_SEEDS=DIR, writes the seeds (each case's expected log
// behind each selector byte) to DIR first: tools/fuzz.sh runs it so once.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("KVSPEC_JUDGE_SEEDS");
  if (dir == nullptr) return 0;
  const std::vector<Fixture>& fixtures = Fixtures();
  for (int selector = 0; selector < 24; ++selector) {
    const Fixture& f = fixtures[selector % fixtures.size()];
    std::ofstream out(std::string(dir) + "/seed-" + std::to_string(selector),
                      std::ios::binary);
    out << static_cast<char>(selector) << f.vector.expected().SerializeAsString();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<Fixture>& fixtures = Fixtures();
  const Fixture& f = fixtures[data[0] % fixtures.size()];
  static const kvspec::PortPrecision kPrecisions[] = {
      {kvspec::Precision::kBfloat16, kvspec::Precision::kBinary32},
      {kvspec::Precision::kBinary32, kvspec::Precision::kBinary32},
      {kvspec::Precision::kFloat16, kvspec::Precision::kFloat16},
      {kvspec::Precision::kBfloat16, kvspec::Precision::kBfloat16}};
  const kvspec::PortPrecision& precision = kPrecisions[(data[0] / 3) % 4];
  const bool compare_cut = (data[0] / 12) % 2 == 0;
  kvspec::v1::EvictionLog log;
  if (!log.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  const kvspec::vectors::LoadedCase loaded{&f.vector, &f.scenario, "fuzz.pb"};
  (void)kvspec::conformance::JudgeWithinPrecision(loaded, log, precision, compare_cut);
  return 0;
}
