// The tie-breaking audit and the rule census over the vector suite.
//
// Audit: for one case, run exactly as the harness runs it, every step's
// victims per kept set and every tie that decided them, with the tied
// positions, their score and the component of the tie order that decided.
//
// Census: for every case and each of its flags, whether the flag's rule
// decided the case: the rule's counterfactual (a parameter one step weaker, a
// scenario transform, or a mutant policy of tools/census/mutants.h) evicts
// differently, or, for a tie, the tie is at the cut. Spec: spec/vectors.md#flags.
#ifndef KVSPEC_TOOLS_CENSUS_CENSUS_H_
#define KVSPEC_TOOLS_CENSUS_CENSUS_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cc/harness.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// One tied candidate of a ranking: a position of a kept set.
struct TieMember {
  size_t set = 0;
  Position position = 0;
};

// Equal binary64 scores on both sides of a cut, where the tie order chose
// the victims: giving an evicted member the place of a kept one in the
// ranking would evict otherwise.
struct AuditTie {
  // false: set `set`'s own ranking, where equal scores evict the lower
  // position (spec/harness.md#victims). true: the joint ranking of sets
  // sharing a budget, by (score, position, set)
  // (spec/heads.md#head-adaptive-budgets).
  bool joint = false;
  size_t set = 0;
  double score = 0.0;
  // The tied members the tie order decided, on each side, in rank order.
  std::vector<TieMember> evicted;
  std::vector<TieMember> kept;
  // Which component of the tie order decided: the position (the lower goes
  // first), or, at the same position in two sets, the set (the lower
  // numbered goes first).
  bool by_position = false;
  bool by_set = false;
};

// One step that evicted.
struct AuditStep {
  int64_t step = 0;
  std::vector<std::vector<Position>> victims;  // per kept set, ascending
  std::vector<AuditTie> deciding;
  // Groups of equal scores (2 or more candidates) wholly among the victims
  // or wholly among the survivors, or whose order changes nothing.
  size_t undecisive = 0;
};

// The tie audit of one case: the case run exactly as the harness runs it
// (cc/harness.h RunScenario: every kept set, shared budgets, query rows and
// prefill steps, generated traces), observing every ranking in full.
struct CaseAudit {
  std::string id;
  std::string description;
  std::string policy;                  // "h2o:budget=2,recent_window=1"
  std::vector<std::string> set_names;  // "layer", "KV head 1", "query head 3"
  RunResult run;                       // the harness's log (no cuts)
  std::vector<AuditStep> steps;        // the steps that evicted
  size_t deciding_ties = 0;
  size_t undecisive_ties = 0;
  // Disagreements between the observed rankings and the log (none expected).
  std::vector<std::string> problems;
};

CaseAudit AuditCase(const vectors::LoadedCase& loaded);

// Where `audit` disagrees with the case's expected log: a step's victims
// (per kept set), the number of steps, the rejection's category or step,
// or a problem of the audit's own. Empty when they agree.
std::vector<std::string> ExpectedLogProblems(const vectors::LoadedCase& loaded,
                                             const CaseAudit& audit);

// The audit as text: the case, the policy, then each evicting step's
// victims per set and its deciding ties, then the rejection if any and a
// total. With `deciding_only`, only the steps with a deciding tie.
std::string AuditText(const CaseAudit& audit, bool deciding_only = false);

struct CensusResult {
  // (flag, policy) -> cases the flag decided.
  std::map<std::pair<std::string, std::string>, int> decided;
  // flag -> cases it decided, whatever the policy (an unknown one included).
  std::map<std::string, int> decided_total;
  // (case id, flag) for every flag that decided its case.
  std::set<std::pair<std::string, std::string>> decided_cases;
  // Problems that fail the census: a flag on a case that it did not decide;
  // a required (flag, policy) that decided no case.
  std::vector<std::string> failures;
  // What decided some flags, for people: for heads.safeguard, the other
  // floor (and a safeguard that reaches it) that changes the case's log.
  std::vector<std::string> notes;
};

// What RunCensus runs. census_test.sh's runs of a suite with some cases
// dropped leave out the checks that re-run every case (CheckFeatures) when
// the failure they look for comes from another check (audit --skip).
struct CensusOptions {
  bool features = true;  // CheckFeatures: each case run with its declared features only
};

CensusResult RunCensus(const vectors::VectorSet& set, const CensusOptions& options = {});

// The census as a markdown table: one row per flag, one column per policy.
std::string CensusTable(const CensusResult& result);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_CENSUS_H_
