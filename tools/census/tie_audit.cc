// The tie audit (census.h AuditCase, ExpectedLogProblems, AuditText): a
// case run as the harness runs it, each ranking observed, and every group
// of equal scores at a cut that the tie order decided: the lower position
// (spec/harness.md#victims) or, in the joint ranking of sets sharing a
// budget, the position then the set (spec/heads.md#head-adaptive-budgets).
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "tools/census/census.h"
#include "tools/census/census_internal.h"
#include "tools/census/mutants.h"

namespace kvspec {
namespace audit {

using internal::CaseContext;
using internal::ContextOf;
using internal::VictimsOf;

namespace {

// The members of `ranking` the walk of spec/heads.md#head-adaptive-budgets
// evicts when it reads the ranking in `order`: `excess` pairs, none from a
// set at its floor. An own ranking is the same walk with floor 0.
std::vector<bool> Walk(const RankingObservation& o,
                       const std::vector<size_t>& order, size_t excess) {
  std::vector<size_t> counts = o.kept_before;
  std::vector<bool> taken(o.ranking.size(), false);
  for (size_t index : order) {
    if (excess == 0) break;
    const size_t set = o.ranking[index].set;
    if (set < counts.size() && counts[set] <= o.floor) continue;
    taken[index] = true;
    if (set < counts.size()) --counts[set];
    --excess;
  }
  return taken;
}

// The ties of one observed ranking: each group of equal scores, deciding or
// not (AuditTie). Returns false if the walk, replayed, does not evict what
// the harness evicted.
bool AuditRanking(const RankingObservation& o, AuditStep& step) {
  const std::vector<RankedPair>& r = o.ranking;
  size_t excess = 0;
  for (const RankedPair& pair : r) excess += pair.evicted;
  // Whether the victims are the first `excess` in rank order (always so for
  // an own ranking; for a joint one, unless the floor passed a pair over).
  bool prefix = true;
  for (size_t i = 0; i < r.size(); ++i) prefix = prefix && r[i].evicted == (i < excess);
  std::vector<size_t> order(r.size());
  for (size_t i = 0; i < r.size(); ++i) order[i] = i;
  const std::vector<bool> replayed = Walk(o, order, excess);
  for (size_t i = 0; i < r.size(); ++i) {
    if (replayed[i] != r[i].evicted) return false;
  }
  for (size_t begin = 0; begin < r.size();) {
    size_t end = begin + 1;
    while (end < r.size() && r[end].score == r[begin].score) ++end;
    if (end - begin >= 2) {
      AuditTie tie;
      tie.joint = o.joint;
      tie.set = o.set;
      tie.score = r[begin].score;
      std::vector<bool> in_evicted(end - begin, false), in_kept(end - begin, false);
      if (prefix) {
        // Every victim and survivor of the group straddle one cut: each
        // pair decides. By position unless at one position (two sets).
        std::set<Position> evicted_at, kept_at;
        for (size_t i = begin; i < end; ++i) {
          in_evicted[i - begin] = r[i].evicted;
          in_kept[i - begin] = !r[i].evicted;
          (r[i].evicted ? evicted_at : kept_at).insert(r[i].position);
        }
        if (!evicted_at.empty() && !kept_at.empty()) {
          std::set<Position> both = evicted_at;
          both.insert(kept_at.begin(), kept_at.end());
          tie.by_position = both.size() > 1;
          for (Position p : kept_at) tie.by_set = tie.by_set || evicted_at.count(p) > 0;
        }
      }
      for (size_t a = begin; a < end && !prefix; ++a) {
        if (!r[a].evicted) continue;
        for (size_t b = begin; b < end; ++b) {
          if (r[b].evicted) continue;
          // The floor passed a pair over: the counterfactual is the two
          // exchanging places in the ranking.
          std::vector<size_t> swapped = order;
          std::swap(swapped[a], swapped[b]);
          const std::vector<bool> taken = Walk(o, swapped, excess);
          bool decides = false;
          for (size_t i = 0; i < r.size() && !decides; ++i) {
            decides = taken[i] != r[i].evicted;
          }
          if (!decides) continue;
          in_evicted[a - begin] = in_kept[b - begin] = true;
          if (r[a].position != r[b].position) {
            tie.by_position = true;
          } else {
            tie.by_set = true;
          }
        }
      }
      for (size_t i = begin; i < end; ++i) {
        if (in_evicted[i - begin]) tie.evicted.push_back({r[i].set, r[i].position});
        if (in_kept[i - begin]) tie.kept.push_back({r[i].set, r[i].position});
      }
      if (tie.evicted.empty() || tie.kept.empty()) {
        ++step.undecisive;
      } else {
        step.deciding.push_back(std::move(tie));
      }
    }
    begin = end;
  }
  return true;
}

std::string PolicyText(const PolicyConfig& config) {
  std::vector<std::string> parameters;
  for (const Parameter& p : config.parameters) {
    parameters.push_back(absl::StrCat(p.name, "=", p.value));
  }
  std::string text = config.name;
  if (!parameters.empty()) text += ":" + absl::StrJoin(parameters, ",");
  if (config.seed != 0) text += absl::StrFormat(" (seed %d)", config.seed);
  return text;
}

std::string ScoreText(double score) {
  return absl::StrFormat("%a (%.17g)", score, score);
}

std::string MemberText(const CaseAudit& audit, const AuditTie& tie,
                       const TieMember& member) {
  if (!tie.joint) return absl::StrCat(member.position);
  const std::string& name = member.set < audit.set_names.size()
                                ? audit.set_names[member.set]
                                : absl::StrCat("set ", member.set);
  return absl::StrCat(name, " @ ", member.position);
}

}  // namespace

CaseAudit AuditCase(const vectors::LoadedCase& loaded) {
  CaseAudit audit;
  const CaseContext c = ContextOf(loaded);
  audit.id = loaded.vector->id();
  audit.description = loaded.vector->description();
  audit.policy = PolicyText(c.config);
  // The harness itself runs the case; each ranking is audited as it is
  // observed (a long multi-head case ranks too much to keep), and keeps
  // what it evicts per set, to check against the log.
  struct Observed {
    AuditStep ties;
    std::map<size_t, std::vector<Position>> evicted;  // per ranked set
  };
  std::map<int64_t, Observed> observed;
  RunOptions options;
  options.on_ranking = [&](int64_t step, const RankingObservation& o) {
    Observed& at = observed[step];
    if (!o.joint) at.evicted[o.set];
    for (const RankedPair& pair : o.ranking) {
      std::vector<Position>& evicted = at.evicted[pair.set];
      if (pair.evicted) evicted.push_back(pair.position);
    }
    if (!AuditRanking(o, at.ties)) {
      audit.problems.push_back(absl::StrFormat(
          "step %d: replaying the walk of the ranking evicts otherwise", step));
    }
  };
  audit.run = RunScenario(c.config, c.scenario, options);
  // Kept sets, named as spec/heads.md#kept-sets numbers them.
  size_t sets = 1;
  for (const StepRecord& step : audit.run.steps) {
    sets = std::max<size_t>(sets, step.sets.size());
  }
  const int64_t granularity = sets > 1 ? EffectiveParameter(c.config, "granularity") : 0;
  for (size_t s = 0; s < sets; ++s) {
    audit.set_names.push_back(sets == 1 ? "layer"
                              : granularity == 2 ? absl::StrCat("query head ", s)
                                                 : absl::StrCat("KV head ", s));
  }
  // spec/blocks.md: the block size (1 without blocks, or for a policy
  // without the parameter).
  const size_t block = static_cast<size_t>(
      std::max<int64_t>(1, EffectiveParameter(c.config, "block", 1)));
  for (size_t i = 0; i < audit.run.steps.size(); ++i) {
    const std::vector<std::vector<Position>> victims = VictimsOf(audit.run.steps[i]);
    const bool evicts = std::any_of(victims.begin(), victims.end(),
                                    [](const auto& v) { return !v.empty(); });
    const auto it = observed.find(static_cast<int64_t>(i));
    if (!evicts) {
      if (it != observed.end()) {
        audit.problems.push_back(absl::StrFormat(
            "step %d: a ranking was observed but the log has no victims", i));
      }
      continue;
    }
    AuditStep step;
    if (it != observed.end()) {
      step = std::move(it->second.ties);
      // The observed rankings must evict exactly the logged victims. With
      // blocks (spec/blocks.md#the-cut) a ranked candidate is a block, named
      // by its first position: the log's victims, ascending, are whole
      // blocks of `block` positions each, so every block-th one is a first.
      for (auto& [s, evicted] : it->second.evicted) {
        std::sort(evicted.begin(), evicted.end());
        std::vector<Position> firsts;
        if (s < victims.size()) {
          for (size_t v = 0; v < victims[s].size(); v += block) {
            firsts.push_back(victims[s][v]);
          }
        }
        if (s >= victims.size() || evicted != firsts ||
            victims[s].size() % block != 0) {
          audit.problems.push_back(absl::StrFormat(
              "step %d, set %d: the ranking evicts [%s], the log [%s]", i, s,
              absl::StrJoin(evicted, " "),
              s < victims.size() ? absl::StrJoin(victims[s], " ") : "no such set"));
        }
      }
    }
    step.step = static_cast<int64_t>(i);
    step.victims = victims;
    audit.deciding_ties += step.deciding.size();
    audit.undecisive_ties += step.undecisive;
    audit.steps.push_back(std::move(step));
  }
  return audit;
}

std::vector<std::string> ExpectedLogProblems(const vectors::LoadedCase& loaded,
                                             const CaseAudit& audit) {
  std::vector<std::string> problems = audit.problems;
  const RunResult expected = FromProto(loaded.vector->expected());
  const auto text = [](const std::vector<std::vector<Position>>& sets) {
    std::vector<std::string> parts;
    for (const std::vector<Position>& v : sets) {
      parts.push_back("[" + absl::StrJoin(v, " ") + "]");
    }
    return absl::StrJoin(parts, " ");
  };
  if (expected.steps.size() != audit.run.steps.size()) {
    problems.push_back(absl::StrFormat("%d steps logged, %d expected",
                                       audit.run.steps.size(),
                                       expected.steps.size()));
  }
  for (size_t i = 0; i < std::min(expected.steps.size(), audit.run.steps.size());
       ++i) {
    const auto want = VictimsOf(expected.steps[i]);
    const auto got = VictimsOf(audit.run.steps[i]);
    if (want != got) {
      problems.push_back(absl::StrFormat("step %d: victims %s, expected %s", i,
                                         text(got), text(want)));
    }
  }
  if (CategoryOf(expected.refusal) != CategoryOf(audit.run.refusal) ||
      expected.refused_step != audit.run.refused_step) {
    problems.push_back(absl::StrFormat(
        "rejection %s at step %d, expected %s at step %d",
        CategoryName(CategoryOf(audit.run.refusal)), audit.run.refused_step,
        CategoryName(CategoryOf(expected.refusal)), expected.refused_step));
  }
  return problems;
}

std::string AuditText(const CaseAudit& audit, bool deciding_only) {
  std::string text = absl::StrFormat("%s: %s\n", audit.id, audit.policy);
  if (!audit.description.empty()) text += "  " + audit.description + "\n";
  for (const AuditStep& step : audit.steps) {
    if (deciding_only && step.deciding.empty()) continue;
    std::vector<std::string> per_set;
    for (size_t s = 0; s < step.victims.size(); ++s) {
      if (step.victims[s].empty()) continue;
      per_set.push_back(absl::StrCat(audit.set_names[s], " evicts ",
                                     absl::StrJoin(step.victims[s], " ")));
    }
    text += absl::StrFormat("  step %d: %s\n", step.step, absl::StrJoin(per_set, "; "));
    for (const AuditTie& tie : step.deciding) {
      std::vector<std::string> evicted, kept;
      for (const TieMember& m : tie.evicted) evicted.push_back(MemberText(audit, tie, m));
      for (const TieMember& m : tie.kept) kept.push_back(MemberText(audit, tie, m));
      std::string rule;
      if (!tie.joint) {
        rule = "the lower position goes (spec/harness.md#victims)";
      } else {
        rule = absl::StrCat(
            "decided by ",
            tie.by_position && tie.by_set ? "position and set"
            : tie.by_set                  ? "set (same position: the lower set goes)"
                                          : "position (the lower goes)",
            " in the joint order score, position, set "
            "(spec/heads.md#head-adaptive-budgets)");
      }
      text += absl::StrFormat(
          "    deciding tie in %s at score %s: evicted %s, kept %s; %s\n",
          tie.joint ? std::string("the joint ranking")
                    : audit.set_names[std::min(tie.set, audit.set_names.size() - 1)] +
                          "'s ranking",
          ScoreText(tie.score), absl::StrJoin(evicted, ", "),
          absl::StrJoin(kept, ", "), rule);
    }
  }
  if (!audit.run.refusal.ok()) {
    text += absl::StrFormat("  rejected: %s at step %d\n",
                            CategoryName(CategoryOf(audit.run.refusal)),
                            audit.run.refused_step);
  }
  for (const std::string& problem : audit.problems) {
    text += "  PROBLEM: " + problem + "\n";
  }
  text += absl::StrFormat("  %d evicting steps, %d deciding ties, %d undecisive\n",
                          audit.steps.size(), audit.deciding_ties,
                          audit.undecisive_ties);
  return text;
}

}  // namespace audit
}  // namespace kvspec
