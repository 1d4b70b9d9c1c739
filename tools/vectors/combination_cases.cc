#include "tools/vectors/combination_cases.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cc/proto_convert.h"
#include "google/protobuf/text_format.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace vectors {
namespace {

constexpr char kPrefix[] = "search/combination/";
constexpr char kWith[] = "-with-";

struct Witness {
  const char* feature;  // the feature decided (spec/features.md)
  const char* other;    // the other feature decided, or a scenario property
  int search_case;      // search --seed=1 case it was shrunk from
  int rounds;           // shrinking rounds
  const char* policy;   // v1::PolicyConfig as protobuf text
  const char* scenario;  // v1::Scenario as protobuf text, id left out
};

// `bazel run -c opt //tools:audit -- --combinations --witnesses` on the 818
// cases of spec 0.10.0 (2026-12-04): the 14 gaps among the search's cases
// 0..2999 of seed 1 (accepted cases), each witness as it printed it (one
// that evicts where one does). Five are left out because the nine below
// decide their combinations too (`audit --census --drop=` shows the suite
// without each): trace + contextshift, spans + several-heads, spans +
// cache-before-prefill, heads + cache-before-prefill and contextshift +
// decode-after-prefill.
const Witness kWitnesses[] = {
    {"adaptive", "cache-before-prefill", 2586, 19,
     R"pb(name: "tova" parameters { name: "budget" value: 2 } parameters { name: "recent_window" } parameters { name: "adaptive" value: 1 })pb",
     R"pb(
         steps { admit: 2 }
         steps { admit: 1 queries { weights: [0.875, 0.875, 0.875] } queries { weights: [1, 0.875, 0.875] } }
         query_heads: 2
         kv_heads: 2
     )pb"},
    {"contextshift", "cache-before-prefill", 240, 16,
     R"pb(name: "window" parameters { name: "budget" value: 2 } parameters { name: "spans" value: 1 } parameters { name: "context_shift" value: 1 })pb",
     R"pb(
         steps { admit: 2 }
         steps { admit: 1 queries { weights: [1, 1, 1] } }
     )pb"},
    {"contextshift", "several-heads", 2908, 4,
     R"pb(name: "streamingllm" parameters { name: "budget" value: 4 } parameters { name: "sinks" } parameters { name: "context_shift" value: 1 })pb",
     R"pb(
         trace { seed: 409 steps: 5 sinks: 3 sink_mass: 0.5 recent_length: 9 recent_mass: 0.125 recent_decay: 0.5 heavy_count: 7 heavy_mass: 0.25 epoch_length: 22 background_mass: 0.125 noise: 0.3 }
         query_heads: 2
         kv_heads: 2
     )pb"},
    {"heads", "contextshift", 1464, 17,
     R"pb(name: "window" parameters { name: "budget" value: 2 } parameters { name: "context_shift" value: 1 })pb",
     R"pb(
         steps { admit: 2 queries { weights: 1 } queries { weights: [1, 1] } queries { weights: 1 } queries { weights: [1, 1] } }
         steps { admit: 2 }
         query_heads: 2
         kv_heads: 2
     )pb"},
    {"heads", "spans", 813, 34,
     R"pb(name: "streamingllm" parameters { name: "ratio_ppm" value: 1 } parameters { name: "spans" value: 1 })pb",
     R"pb(
         steps { admit: 2 queries { weights: 1 } queries { weights: [1, 1] } queries { weights: 1 } queries { weights: [1, 1] } }
         query_heads: 2
         kv_heads: 2
     )pb"},
    {"prefill", "contextshift", 240, 15,
     R"pb(name: "window" parameters { name: "budget" value: 2 } parameters { name: "spans" value: 1 } parameters { name: "context_shift" value: 1 })pb",
     R"pb(
         steps { admit: 2 queries { weights: 1 } queries { weights: [1, 1] } totals { sums: [1.2720921039581299, 0.75] } total_rows: 2 }
         steps { admit: 1 }
     )pb"},
    {"trace", "prefill", 318, 12,
     R"pb(name: "snapkv" parameters { name: "budget" value: 1 } parameters { name: "recent_window" } parameters { name: "pooling" value: 1 })pb",
     R"pb(
         trace { seed: 436 steps: 2 sinks: 4 sink_mass: 0.5 recent_length: 5 recent_mass: 0.125 recent_decay: 0.5 heavy_count: 0 heavy_mass: 0.25 epoch_length: 29 background_mass: 0.125 noise: 0.3 }
     )pb"},
    // Added with spec 0.12.0 (triggers): the one gap of the 915 cases then.
    {"totals", "triggers", 839, 33,
     R"pb(name: "h2o" parameters { name: "budget" value: 1 } parameters { name: "slack" value: 1 } parameters { name: "recent_window" })pb",
     R"pb(
         steps { admit: 2 queries { weights: 0 } queries { weights: [0.375, 0.5] } totals { sums: [0.5, 0.5] } total_rows: 1 }
         steps { admit: 1 }
     )pb"},
    {"trace", "ratio", 1458, 7,
     R"pb(name: "h2o" parameters { name: "budget" value: 1 } parameters { name: "recent_window" } parameters { name: "ratio_ppm" value: 1 })pb",
     R"pb(
         trace { seed: 259 steps: 2 sinks: 4 sink_mass: 0.5 recent_length: 5 recent_mass: 0.125 recent_decay: 0.5 heavy_count: 4 heavy_mass: 0.25 epoch_length: 26 background_mass: 0.125 noise: 0.3 }
     )pb"},
    {"trace", "spans", 2196, 12,
     R"pb(name: "window" parameters { name: "budget" value: 1 } parameters { name: "spans" value: 1 })pb",
     R"pb(
         trace { seed: 299 steps: 2 sinks: 3 sink_mass: 0.5 recent_length: 9 recent_mass: 0.125 recent_decay: 0.5 heavy_count: 2 heavy_mass: 0.25 epoch_length: 28 background_mass: 0.125 noise: 0 }
     )pb"},
};

template <typename Message>
Message Parse(const char* text, const char* what, const char* feature, const char* other) {
  Message message;
  if (!google::protobuf::TextFormat::ParseFromString(text, &message)) {
    // A typo in this file: the generator cannot go on.
    std::fprintf(stderr, "combination_cases.cc: the %s of %s with %s does not parse\n",
                 what, feature, other);
    std::abort();
  }
  return message;
}

}  // namespace

std::vector<CombinationCase> CombinationCases() {
  std::vector<CombinationCase> cases;
  for (const Witness& w : kWitnesses) {
    const std::string name = absl::StrCat(w.feature, kWith, w.other);
    CombinationCase c;
    c.scenario = FromProto(Parse<v1::Scenario>(w.scenario, "scenario", w.feature, w.other));
    c.scenario.id = absl::StrCat("combination-", name);
    c.spec.id = absl::StrCat(kPrefix, name);
    c.spec.flags = {"search.combination"};
    c.spec.description = absl::StrCat(
        "found by tools/search's generator and shrunk by audit --combinations "
        "--witnesses (seed 1, case ", w.search_case, ", shrunk in ", w.rounds,
        " rounds): ", w.feature, " decides this case together with ", w.other,
        ", which no other vector did: without ", w.feature,
        "'s fields and parameters the log differs (tools/census/combinations.h)");
    c.spec.policy = FromProto(Parse<v1::PolicyConfig>(w.policy, "policy", w.feature, w.other));
    c.spec.scenario_id = c.scenario.id;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string CombinationOfCase(const std::string& case_id) {
  if (case_id.rfind(kPrefix, 0) != 0) return "";
  const std::string name = case_id.substr(sizeof(kPrefix) - 1);
  const size_t with = name.find(kWith);
  if (with == std::string::npos) return "";
  return absl::StrCat(name.substr(0, with), " + ", name.substr(with + sizeof(kWith) - 1));
}

}  // namespace vectors
}  // namespace kvspec
