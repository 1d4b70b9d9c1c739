// Goldens for spec/trace.md. The expected bits were printed by
// tools/goldens/trace_goldens.py, an independent Python implementation written from
// the spec.
#include "cc/trace.h"

#include <cstring>
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(TraceGenerator, SmallTraceMatchesIndependentGoldens) {
  TraceConfig config;
  config.steps = 6;
  config.sinks = 2;
  config.recent_length = 2;
  config.heavy_count = 2;
  config.epoch_length = 3;
  const std::vector<std::vector<uint32_t>> expected = {
      {},
      {0x3f80337b},
      {0x3ee92879, 0x3f100ab3},
      {0x3e909d2a, 0x3ea55833, 0x3ed23d8f},
      {0x3e8a27d7, 0x3e9ada58, 0x3e9d87d2, 0x3de90157},
      {0x3e8d89ed, 0x3e96f687, 0x3e883fa5, 0x3d9e2020, 0x3dc37c42},
  };
  auto trace = TraceGenerator::Create(config);
  ASSERT_TRUE(trace.ok()) << trace.status();
  for (const std::vector<uint32_t>& row : expected) {
    ASSERT_TRUE(trace->Advance());
    std::vector<uint32_t> bits;
    for (float w : trace->Row()) bits.push_back(Bits(w));
    EXPECT_EQ(bits, row) << "step " << trace->step();
  }
  EXPECT_FALSE(trace->Advance());
  EXPECT_EQ(trace->step(), 5u);
}

TEST(TraceGenerator, CanonicalTraceMatchesIndependentGoldensDeepInTheRun) {
  TraceConfig config;  // canonical
  config.steps = 1301;
  auto trace = TraceGenerator::Create(config);
  ASSERT_TRUE(trace.ok());
  while (trace->Advance()) {
  }
  ASSERT_EQ(trace->step(), 1300u);
  const std::vector<std::pair<Position, uint32_t>> expected = {
      {0, 0x3e001701},    {1, 0x3e002ce5},    {2, 0x3e00176a},
      {3, 0x3e002e36},    {4, 0x38628a17},    {5, 0x38d2ba71},
      {1290, 0x392349ab}, {1291, 0x390aea48}, {1292, 0x3a2e3ab0},
      {1293, 0x3a929f26}, {1294, 0x3b058d42}, {1295, 0x3b83f4fa},
      {1296, 0x3c02c75c}, {1297, 0x3c81abde}, {1298, 0x3d00e8d0},
      {1299, 0x3d80dd21},
      // The first eight positions whose weight a fused multiply-add in the
      // noise factor would change (tools/goldens/trace_goldens.py prints both).
      {22, 0x39636b7d},   {34, 0x38c98c58},   {46, 0x3783b804},
      {51, 0x38e63677},   {58, 0x391b83ff},   {61, 0x39239443},
      {74, 0x38fb76f2},   {92, 0x38d2f1f8},
  };
  for (const auto& [position, bits] : expected) {
    EXPECT_EQ(Bits(trace->Weight(position)), bits) << "position " << position;
  }
  // Epoch 2 (steps 1024..1535) drew its 16 heavy hitters among 4..1023.
  std::vector<Position> heavy;
  for (const auto& [position, multiplicity] : trace->heavy_hitters()) {
    heavy.push_back(position);
    EXPECT_EQ(multiplicity, 1u);
  }
  EXPECT_EQ(heavy, (std::vector<Position>{23, 38, 75, 85, 113, 294, 333, 360,
                                          398, 549, 630, 666, 744, 752, 816,
                                          824}));
}

TEST(TraceGenerator, SinksTakeHalfOfEachRow) {
  // spec/trace.md: sink_mass 0.5 of a total 1.0 when every part is present.
  TraceConfig config;
  config.steps = 2000;
  auto trace = TraceGenerator::Create(config);
  ASSERT_TRUE(trace.ok());
  while (trace->Advance()) {
  }
  double sinks = 0.0;
  for (Position p = 0; p < 4; ++p) sinks += trace->Weight(p);
  EXPECT_NEAR(sinks, 0.5, 0.001);
}

TEST(TraceGenerator, HeavyHittersAreStationaryWithinAnEpoch) {
  TraceConfig config;
  config.steps = 1100;
  config.noise = 0.0;
  auto trace = TraceGenerator::Create(config);
  ASSERT_TRUE(trace.ok());
  std::vector<std::pair<Position, uint32_t>> first;
  while (trace->Advance()) {
    if (trace->step() == 600) first = trace->heavy_hitters();
    if (trace->step() > 600 && trace->step() < 1024) {
      EXPECT_EQ(trace->heavy_hitters(), first);
    }
  }
  EXPECT_FALSE(first.empty());
  EXPECT_NE(trace->heavy_hitters(), first);  // epoch 2 drew again
}

TEST(TraceGenerator, RefusesEachInvalidParameter) {
  struct Case {
    TraceConfig config;
    const char* message;
  };
  std::vector<Case> cases;
  auto with = [](auto edit) {
    TraceConfig config;
    config.steps = 10;
    edit(config);
    return config;
  };
  cases.push_back({with([](TraceConfig& c) { c.steps = 0; }),
                   "trace: steps must be in [1, 2147483648], got 0"});
  cases.push_back({with([](TraceConfig& c) { c.sink_mass = -1.0; }),
                   "trace: sink_mass must be in [+0.0, 1], got -1"});
  cases.push_back({with([](TraceConfig& c) { c.recent_mass = std::nan(""); }),
                   "recent_mass must be in [+0.0, 1], got nan"});
  cases.push_back({with([](TraceConfig& c) { c.recent_decay = 0.0; }),
                   "recent_decay must be in (0, 1], got 0"});
  cases.push_back({with([](TraceConfig& c) { c.recent_length = 65537; }),
                   "recent_length must be in [0, 65536], got 65537"});
  cases.push_back({with([](TraceConfig& c) { c.heavy_count = 70000; }),
                   "heavy_count must be in [0, 65536], got 70000"});
  cases.push_back({with([](TraceConfig& c) { c.epoch_length = 0; }),
                   "epoch_length must be in [1, 2147483648], got 0"});
  cases.push_back({with([](TraceConfig& c) { c.background_mass = 0.0; }),
                   "background_mass must be in (0, 1], got 0"});
  cases.push_back({with([](TraceConfig& c) { c.heavy_mass = HUGE_VAL; }),
                   "heavy_mass must be in [+0.0, 1], got inf"});
  cases.push_back({with([](TraceConfig& c) { c.noise = 1.5; }),
                   "noise must be in [+0.0, 1], got 1.5"});
  cases.push_back({with([](TraceConfig& c) { c.sink_mass = -0.0; }),
                   "sink_mass must be in [+0.0, 1], got -0"});
  cases.push_back({with([](TraceConfig& c) { c.background_mass = 1.5; }),
                   "background_mass must be in (0, 1], got 1.5"});
  cases.push_back({with([](TraceConfig& c) { c.noise = -0.0; }),
                   "noise must be in [+0.0, 1], got -0"});
  for (const Case& c : cases) {
    const absl::Status status = ValidateTrace(c.config);
    EXPECT_EQ(CategoryOf(status), ErrorCategory::kInvalidTrace) << c.message;
    EXPECT_NE(status.message().find(c.message), absl::string_view::npos)
        << status;
  }
}

TEST(RunTrace, StreamsOnlyKeptPositionsAndMatchesTheFullRows) {
  // The same trace through RunTrace (gathering kept weights on the fly)
  // and through RunScenario on the expanded full rows gives the same log.
  TraceConfig config;
  config.steps = 700;
  config.epoch_length = 128;
  Scenario expanded{"expanded", {}};
  auto trace = TraceGenerator::Create(config);
  ASSERT_TRUE(trace.ok());
  while (trace->Advance()) expanded.steps.push_back({1, trace->Row()});
  for (const char* name : {"h2o", "tova", "snapkv", "streamingllm"}) {
    const PolicyConfig policy_config{name, {{"budget", 64}}};
    const RunResult full_rows = RunScenario(policy_config, expanded);
    ASSERT_TRUE(full_rows.refusal.ok()) << full_rows.refusal;
    auto policy = MakePolicy(policy_config);
    ASSERT_TRUE(policy.ok());
    std::vector<std::vector<Position>> streamed;
    ASSERT_TRUE(RunTrace(**policy, config,
                         [&](uint32_t, absl::Span<const Position> victims,
                             const EvictionDetail&) {
                           streamed.emplace_back(victims.begin(), victims.end());
                         })
                    .ok());
    ASSERT_EQ(streamed.size(), full_rows.steps.size());
    for (size_t i = 0; i < streamed.size(); ++i) {
      EXPECT_EQ(streamed[i], full_rows.steps[i].victims) << name << " step " << i;
    }
  }
}

TraceConfig CanonicalForTest() {
  TraceConfig config;
  config.steps = 1000;
  return config;
}

// spec/trace.md#several-heads, the head configurations by hand.
TEST(HeadTraceConfig, HeadZeroIsTheTraceAndOthersHaveARole) {
  TraceConfig config;
  config.steps = 10;
  config.seed = 7;
  const TraceConfig head0 = HeadTraceConfig(config, 0);
  EXPECT_EQ(head0.seed, 7u);
  EXPECT_EQ(head0.sink_mass, 0.5);
  const uint64_t c = 0x3c6ef372fe94f82bULL;
  const struct {
    uint32_t head;
    double sink, recent, heavy;
  } cases[] = {{1, 2.0, 0.125, 0.25}, {2, 0.5, 0.5, 0.25},
               {3, 0.5, 0.125, 1.0},  {4, 2.0, 0.125, 0.25}};
  for (const auto& k : cases) {
    const TraceConfig h = HeadTraceConfig(config, k.head);
    EXPECT_EQ(h.seed, Mix64(7 ^ c ^ k.head)) << k.head;
    EXPECT_EQ(h.sink_mass, k.sink) << k.head;
    EXPECT_EQ(h.recent_mass, k.recent) << k.head;
    EXPECT_EQ(h.heavy_mass, k.heavy) << k.head;
    EXPECT_EQ(h.background_mass, 0.125) << k.head;
    EXPECT_EQ(h.steps, 10u) << k.head;
  }
  // A sink head's row: 80% of it on the sinks once every part is present
  // (2.0 / 2.5); each of the 4 sinks gets 0.5 / 2.5 = 0.2 before the
  // background, which adds a little.
  absl::StatusOr<TraceGenerator> sink_head =
      TraceGenerator::CreateForHead(CanonicalForTest(), 1);
  ASSERT_TRUE(sink_head.ok());
  while (sink_head->step() < 600 && sink_head->Advance()) {
  }
  double sinks = 0.0;
  for (Position p = 0; p < 4; ++p) sinks += sink_head->Weight(p);
  EXPECT_GT(sinks, 0.79);
  EXPECT_LT(sinks, 0.81);
}

// spec/trace.md#golden-rows-of-several-heads, printed by
// `tools/goldens/trace_goldens.py --heads`: query heads 0..3 (the trace, then roles
// 0, 1, 2) of a small trace, at steps 3 and 9, through CreateForHead (the
// generators the harness runs a multi-head trace with).
TEST(TraceGenerator, SeveralHeadsMatchIndependentGoldens) {
  TraceConfig config;
  config.steps = 10;
  config.sinks = 2;
  config.recent_length = 2;
  config.heavy_count = 2;
  config.epoch_length = 4;
  const struct {
    uint64_t seed;
    std::vector<uint32_t> step3, step9;
    std::vector<std::pair<Position, uint32_t>> heavy9;  // epoch 2
  } heads[] = {
      {1,
       {0x3ec0d18d, 0x3edc759a, 0x3e5b4ed2},
       {0x3e852e45, 0x3e8d93b5, 0x3e84c912, 0x3cbe528d, 0x3bf16d8a,
        0x3c25aabb, 0x3c47443c, 0x3d4d64ae, 0x3dce5d50},
       {{2, 2}}},
      {0xbeeb8da1658eec67,
       {0x3ef4c260, 0x3ee4d22d, 0x3da7a3cf},
       {0x3ecf8888, 0x3ecd0530, 0x3b944fb2, 0x3b908556, 0x3c10c70f,
        0x3d61661c, 0x3bc2be15, 0x3da08f6e, 0x3d29a994},
       {{5, 1}, {7, 1}}},
      {0xba56949915dcf9e9,
       {0x3e7be722, 0x3e8a6fec, 0x3ef60395},
       {0x3e4241b0, 0x3e4bfc73, 0x3de979a0, 0x3b810afc, 0x3b8675e3,
        0x3c02a819, 0x3b72aaa6, 0x3e5fd592, 0x3e85ae61},
       {{2, 1}, {7, 1}}},
      {0xe99ff867dbf682c9,
       {0x3ed02272, 0x3ec253f2, 0x3e63a317},
       {0x3e1bc352, 0x3e17090b, 0x3c19a7b7, 0x3e9761a6, 0x3e92f5d8,
        0x3c3d683e, 0x3c603e18, 0x3cd6dbca, 0x3d6dc910},
       {{3, 1}, {4, 1}}},
  };
  for (uint32_t h = 0; h < 4; ++h) {
    auto trace = TraceGenerator::CreateForHead(config, h);
    ASSERT_TRUE(trace.ok()) << trace.status();
    EXPECT_EQ(trace->config().seed, heads[h].seed) << "head " << h;
    while (trace->Advance()) {
      std::vector<uint32_t> bits;
      for (float w : trace->Row()) bits.push_back(Bits(w));
      if (trace->step() == 3) {
        EXPECT_EQ(bits, heads[h].step3) << "head " << h;
      }
      if (trace->step() == 9) {
        EXPECT_EQ(bits, heads[h].step9) << "head " << h;
        EXPECT_EQ(trace->heavy_hitters(), heads[h].heavy9) << "head " << h;
      }
    }
    EXPECT_EQ(trace->step(), 9u);
  }
}

}  // namespace
}  // namespace kvspec
