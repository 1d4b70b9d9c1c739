// What the vector suite's case files share (tools/vectors/cases_*.cc): the
// builder that collects scenarios and cases, the helpers that make
// scenarios and configurations, and the families, one function each, that
// BuildSuite (cases.cc) calls in file and case order. Internal to the suite:
// the suite's interface is cases.h.
//
// A family adds its scenarios (b.Add) and its cases (b.Case), never an
// expected result: tools/vectors/generate.h computes those with the
// reference.
#ifndef KVSPEC_TOOLS_VECTORS_CASE_BUILDER_H_
#define KVSPEC_TOOLS_VECTORS_CASE_BUILDER_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"
#include "cc/rng.h"
#include "tools/vectors/cases.h"

namespace kvspec {
namespace vectors {
namespace build {

using Row = std::vector<float>;

class SuiteBuilder {
 public:
  void Add(Scenario scenario) { suite_.scenarios.push_back(std::move(scenario)); }
  // A traced scenario whose `absent` fields are left out on the wire.
  void AddAbsent(Scenario scenario, std::vector<std::string> absent) {
    suite_.absent_trace_fields[scenario.id] = std::move(absent);
    Add(std::move(scenario));
  }
  void Case(std::string id, std::vector<std::string> flags,
            std::string description, PolicyConfig policy,
            std::string scenario_id) {
    suite_.cases.push_back({std::move(id), std::move(flags),
                            std::move(description), std::move(policy),
                            std::move(scenario_id)});
  }
  Suite Build() { return std::move(suite_); }

 private:
  Suite suite_;
};

inline const float kNan = std::numeric_limits<float>::quiet_NaN();
inline constexpr int64_t kTopBudget = 4294967295;  // spec/harness.md#budget
inline const float kInf = std::numeric_limits<float>::infinity();

// Steps and scenarios.
ScenarioStep Null(uint32_t admit = 1);                 // null attention
ScenarioStep WithRow(Row row, uint32_t admit = 1);
Scenario Explicit(std::string id, std::vector<ScenarioStep> steps);
Scenario Chunks(std::string id, const std::vector<uint32_t>& chunks);  // null rows
Scenario Traced(std::string id, const TraceConfig& trace);
// Chunks, null steps and fresh weights at every step, from `seed`.
Scenario Wandering(std::string id, uint32_t steps, uint64_t seed);
// spec/tensors.md: a step admitting `admit` positions with null attention
// and these keys (one list per KV head, admit x head_dim values each).
ScenarioStep KeyStep(uint32_t admit, std::vector<std::vector<float>> keys);
// One head, head_dim 2, one position a step with these keys.
Scenario OneHeadKeys(std::string id, const std::vector<std::vector<float>>& keys);
// `steps` steps of 1 to 3 positions, with attention rows from the Rng on
// odd steps, Hq query heads in Hkv groups, keys of head_dim `dim` with
// entries in (-1, 1) as multiples of 2^-10 from the Rng (`seed`).
Scenario DrawnKeys(std::string id, uint32_t steps, uint32_t query_heads,
                   uint32_t kv_heads, uint32_t dim, uint64_t seed);
// A tensor entry in (-1, 1), a multiple of 2^-10, from the Rng.
float DrawnEntry(Rng& rng);
// spec/tensors.md: the scenario with values of value_dim `dim` on every
// step, entries from DrawnEntry over Rng(seed), step by step, KV head 0
// first.
Scenario WithDrawnValues(Scenario scenario, uint32_t dim, uint64_t seed);
// spec/heads.md: the scenario with these head counts.
Scenario WithHeads(Scenario scenario, std::optional<uint32_t> query_heads,
                   std::optional<uint32_t> kv_heads);

// Prefill (spec/prefill.md): a step with query rows; a prompt from the
// several-heads trace as one prefill step then decode steps (see
// case_builder.cc); column totals (spec/prefill.md#column-totals).
ScenarioStep QueryRows(uint32_t admit, std::vector<Row> queries);
Scenario TracePrompt(std::string id, uint32_t length, uint32_t rows,
                     uint32_t decode, uint32_t query_heads, uint32_t kv_heads,
                     uint64_t seed);
std::vector<std::vector<double>> TotalsOf(const std::vector<Row>& queries,
                                          uint32_t heads, uint32_t total_rows);
ScenarioStep WithTotals(ScenarioStep step, uint32_t heads, uint32_t carried,
                        uint32_t total_rows);

// Configurations.
PolicyConfig P(const char* name, std::vector<Parameter> parameters,
               uint64_t seed = 0);
PolicyConfig Preset(const char* policy, const char* preset,
                    std::vector<Parameter> extra);

// The families, in BuildSuite's order, each in the file named.
void AddScenarios(SuiteBuilder& b);          // cases_decode.cc
void AddHarnessCases(SuiteBuilder& b);       // cases_decode.cc
void AddPositionalCases(SuiteBuilder& b);    // cases_decode.cc
void AddScoreCases(SuiteBuilder& b);         // cases_decode.cc
void AddAuditScenarios(SuiteBuilder& b);     // cases_audit.cc (AddScenarios calls it)
void AddAuditCases(SuiteBuilder& b);         // cases_audit.cc
void AddHeadScenarios(SuiteBuilder& b);      // cases_heads.cc
void AddHeadCases(SuiteBuilder& b);          // cases_heads.cc
void AddPrefillScenarios(SuiteBuilder& b);   // cases_prefill.cc
void AddPrefillCases(SuiteBuilder& b);       // cases_prefill.cc
void AddTotalsScenarios(SuiteBuilder& b);    // cases_totals.cc
void AddTotalsCases(SuiteBuilder& b);        // cases_totals.cc
void AddSearchCases(SuiteBuilder& b);        // cases_search.cc
void AddSpanCases(SuiteBuilder& b);          // cases_spans.cc
void AddContextShiftCases(SuiteBuilder& b);  // cases_spans.cc
void AddTriggerScenarios(SuiteBuilder& b);   // cases_triggers.cc
void AddTriggerCases(SuiteBuilder& b);       // cases_triggers.cc
void AddBlockScenarios(SuiteBuilder& b);     // cases_blocks.cc
void AddBlockCases(SuiteBuilder& b);         // cases_blocks.cc
void AddOpenVinoScenarios(SuiteBuilder& b);  // cases_openvino.cc
void AddOpenVinoCases(SuiteBuilder& b);      // cases_openvino.cc
void AddKnormScenarios(SuiteBuilder& b);     // cases_knorm.cc
void AddKnormCases(SuiteBuilder& b);         // cases_knorm.cc
void AddKeyDiffScenarios(SuiteBuilder& b);   // cases_keydiff.cc
void AddKeyDiffCases(SuiteBuilder& b);       // cases_keydiff.cc
void AddLagKvScenarios(SuiteBuilder& b);     // cases_lagkv.cc
void AddLagKvCases(SuiteBuilder& b);         // cases_lagkv.cc
void AddPyramidScenarios(SuiteBuilder& b);   // cases_pyramidkv.cc
void AddPyramidCases(SuiteBuilder& b);       // cases_pyramidkv.cc
void AddSimLayerKvScenarios(SuiteBuilder& b);  // cases_simlayerkv.cc
void AddSimLayerKvCases(SuiteBuilder& b);      // cases_simlayerkv.cc
void AddForeignParameterCases(SuiteBuilder& b);  // cases.cc

}  // namespace build
}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_CASE_BUILDER_H_
