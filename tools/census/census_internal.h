// What the census's files share and nothing else calls: a case's context,
// the counterfactual runs that the flag table (flags.cc,
// flags_heads_prefill_spans.cc) and the defaults check (bounds.cc) compare
// with the expected log, the victims the tie audit (tie_audit.cc) checks,
// and each check RunCensus (census.cc) calls. Defined in
// census_internal.cc unless said otherwise. The public interface is
// tools/census/census.h.
#ifndef KVSPEC_TOOLS_CENSUS_CENSUS_INTERNAL_H_
#define KVSPEC_TOOLS_CENSUS_CENSUS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {
namespace internal {

// Everything a decider needs about one case.
struct CaseContext {
  const v1::Case* vector;
  const v1::Scenario* wire;  // the scenario as the file holds it
  PolicyConfig config;
  Scenario scenario;
  RunResult expected;
};

// The context of a loaded case, converted from the wire.
CaseContext ContextOf(const vectors::LoadedCase& loaded);

// The victims of a step, set by set (spec/heads.md#the-eviction-log).
std::vector<std::vector<Position>> VictimsOf(const StepRecord& step);

// Same outcome: the same victims at every step and the same refusal category.
bool SameVictims(const RunResult& a, const RunResult& b);

// Whether some step of `result` evicts.
bool Evicts(const RunResult& result);

// `config` with parameter `name` set to `value` (added if not given).
PolicyConfig WithParameter(PolicyConfig config, const std::string& name,
                           int64_t value);

// Whether the registry builds `config`.
bool Accepted(const PolicyConfig& config);

// Whether `c`'s scenario run with another configuration, or `c`'s
// configuration on another scenario, evicts otherwise (SameVictims).
bool DiffersWith(const CaseContext& c, const PolicyConfig& config);
bool DiffersWith(const CaseContext& c, const Scenario& scenario);

// The same, for the whole log, spans and held sets included
// (spec/spans.md#the-log).
bool LogDiffersWith(const CaseContext& c, const PolicyConfig& config);
bool LogDiffersWith(const CaseContext& c, const Scenario& scenario);

// First position admitted at each step of an explicit scenario.
std::vector<uint64_t> FirstPositions(const Scenario& scenario);

// bounds.cc: the parameters and trace fields whose default decides `c`
// (spec/vectors.md#bounds; the flags defaults.decides and trace.defaults).
// Omitted parameters of `c` whose default decides the case: another valid
// value near it changes the victims.
std::set<std::string> DecidedDefaults(const CaseContext& c);
// Trace fields absent from `c`'s scenario whose default decides the case:
// another valid value changes the victims.
std::set<std::string> DecidedTraceDefaults(const CaseContext& c);

// flags.cc: whether `flag` decided case `c` (spec/vectors.md#flags). `note`,
// when not null, may receive what decided it.
bool Decides(const std::string& flag, const CaseContext& c,
             std::string* note = nullptr);

// flags_heads_prefill_spans.cc: the same for a flag of spec/heads.md,
// spec/prefill.md or spec/spans.md; nullopt for any other flag.
std::optional<bool> DecidesHeadsPrefillSpans(const std::string& flag,
                                             const CaseContext& c,
                                             std::string* note);

// flags_triggers.cc: the same for a flag of spec/triggers.md; nullopt for
// any other flag.
std::optional<bool> DecidesTriggers(const std::string& flag,
                                    const CaseContext& c, std::string* note);

// flags_blocks.cc: the same for a flag of spec/blocks.md; nullopt for any
// other flag.
std::optional<bool> DecidesBlocks(const std::string& flag,
                                  const CaseContext& c, std::string* note);

// The checks over the whole suite; each appends its failures.
// suite.cc (spec/vectors.md#the-suite): the parameter matrix, later heads.
void CheckForeignParameters(const vectors::VectorSet& set,
                            std::vector<std::string>& failures);
void CheckLaterHeads(const vectors::VectorSet& set,
                     std::vector<std::string>& failures);
// bounds.cc (spec/vectors.md#bounds): bounds and defaults.
void CheckBounds(const vectors::VectorSet& set, std::vector<std::string>& failures);
void CheckDefaults(const vectors::VectorSet& set, std::vector<std::string>& failures);
// features.cc (spec/features.md): features and since.
void CheckFeatures(const vectors::VectorSet& set, std::vector<std::string>& failures);
// identical_logs.cc (spec/vectors.md#flags): two cases with one log.
void CheckIdenticalLogs(const vectors::VectorSet& set,
                        std::vector<std::string>& failures);

}  // namespace internal
}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_CENSUS_INTERNAL_H_
