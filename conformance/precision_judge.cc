#include "conformance/precision_judge.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"

namespace kvspec {
namespace conformance {

namespace {

// A ranked candidate of one step: a kept set and a position (a block's first
// position with blocks).
using Key = std::pair<size_t, Position>;

struct StepRankings {
  std::map<Key, double> score;
  std::set<Key> evicted;
  // spec/heads.md#head-adaptive-budgets: the sets share one joint ranking.
  bool joint = false;
  size_t floor = 0;
  // The decision of each ranking (by set; one for a joint ranking, set 0).
  std::map<size_t, Decision> decisions;
};

std::string Num(double x) { return absl::StrFormat("%.17g", x); }

std::string KeyText(const Key& key, const StepRankings& r, bool sets) {
  const auto it = r.score.find(key);
  const std::string score = it == r.score.end() ? "unranked" : Num(it->second);
  return sets ? absl::StrFormat("%d in set %d (%s)", key.second, key.first, score)
              : absl::StrFormat("%d (%s)", key.second, score);
}

// The candidate entry that holds position p in set `set`: p itself, or with
// blocks (spec/blocks.md) the block with the largest first position <= p;
// nullopt when none.
std::optional<Key> EntryOf(const StepRankings& r, size_t set, Position p, bool blocks) {
  if (!blocks) {
    if (r.score.count({set, p}) == 0) return std::nullopt;
    return Key{set, p};
  }
  auto it = r.score.upper_bound({set, p});
  if (it == r.score.begin()) return std::nullopt;
  --it;
  if (it->first.first != set) return std::nullopt;
  return it->first;
}

// The records of a step: itself, or one per kept set.
std::vector<const v1::StepResult*> Records(const v1::StepResult& step) {
  std::vector<const v1::StepResult*> records;
  if (step.sets_size() == 0) {
    records.push_back(&step);
  } else {
    for (const v1::StepResult& set : step.sets()) records.push_back(&set);
  }
  return records;
}

bool SameVictims(const v1::StepResult& a, const v1::StepResult& b) {
  return std::equal(a.victims().begin(), a.victims().end(), b.victims().begin(),
                    b.victims().end());
}

bool SameExceptScores(const v1::StepResult& e, const v1::StepResult& a) {
  if (e.query_cache_position() != a.query_cache_position()) return false;
  if (e.spans_size() != a.spans_size() || e.held_size() != a.held_size()) return false;
  for (int i = 0; i < e.spans_size(); ++i) {
    if (!std::equal(e.spans(i).ranges().begin(), e.spans(i).ranges().end(),
                    a.spans(i).ranges().begin(), a.spans(i).ranges().end())) {
      return false;
    }
  }
  for (int i = 0; i < e.held_size(); ++i) {
    if (e.held(i).first() != a.held(i).first() || e.held(i).last() != a.held(i).last() ||
        e.held(i).id() != a.held(i).id()) {
      return false;
    }
  }
  return true;
}

class Judge {
 public:
  Judge(const ErrorBound& bound, const std::string& precision, bool blocks)
      : bound_(bound), precision_(precision), blocks_(blocks) {}

  // The cut of one record whose victims agree; "" when it is within the bound.
  std::string JudgeCut(const v1::StepResult& e, const v1::StepResult& a,
                       const StepRankings& r, size_t set) const {
    if (e.cut_size() != a.cut_size()) {
      return absl::StrFormat("the cut has %d entries, the reference's %d", a.cut_size(),
                             e.cut_size());
    }
    for (int i = 0; i < a.cut_size(); ++i) {
      const Key key{set, a.cut(i).position()};
      const auto it = r.score.find(key);
      if (it == r.score.end()) {
        return absl::StrFormat("cut rank %d lists position %d, which the reference "
                               "did not rank", i, key.second);
      }
      const double s = it->second, port = a.cut(i).score();
      if (!(port >= Lower(bound_, s) && port <= Upper(bound_, s))) {
        return absl::StrFormat(
            "cut rank %d: the port scores position %d %s; the reference %s, and "
            "%s allows [%s, %s]", i, key.second, Num(port), Num(s), precision_,
            Num(Lower(bound_, s)), Num(Upper(bound_, s)));
      }
      if (i > 0) {
        const auto& p = a.cut(i - 1);
        if (p.score() > port || (p.score() == port && p.position() > key.second)) {
          return absl::StrFormat("the port's cut is not in its own rank order at rank %d", i);
        }
      }
      const Position expected = e.cut(i).position();
      if (expected != key.second) {
        const auto other = r.score.find({set, expected});
        const bool apart =
            other == r.score.end() ||
            Lower(bound_, std::max(s, other->second)) > Upper(bound_, std::min(s, other->second));
        if (apart) {
          return absl::StrFormat(
              "cut rank %d is position %d (reference score %s), the reference's %d (%s): "
              "%s cannot exchange them", i, key.second, Num(s), expected,
              other == r.score.end() ? "unranked" : Num(other->second), precision_);
        }
      }
    }
    return "";
  }

  // Victims that differ at one step: a within-precision exchange (true, and
  // what was exchanged in `detail`) or not (false, and why).
  bool JudgeExchange(const std::vector<const v1::StepResult*>& expected,
                     const std::vector<const v1::StepResult*>& actual,
                     const StepRankings& r, std::string& detail) const {
    const bool sets = expected.size() > 1;
    // Per kept set, or once for a joint ranking.
    std::vector<std::vector<size_t>> groups;
    if (r.joint) {
      groups.emplace_back();
      for (size_t k = 0; k < expected.size(); ++k) groups[0].push_back(k);
    } else {
      for (size_t k = 0; k < expected.size(); ++k) {
        if (!SameVictims(*expected[k], *actual[k])) groups.push_back({k});
      }
    }
    std::vector<std::string> lines;
    for (const std::vector<size_t>& group : groups) {
      std::set<Key> port_entries, ref_entries;
      size_t port_victims = 0, ref_victims = 0;
      for (size_t k : group) {
        for (Position p : actual[k]->victims()) {
          const std::optional<Key> entry = EntryOf(r, k, p, blocks_);
          if (!entry.has_value()) {
            detail = absl::StrFormat("the port evicts position %d%s, which the reference "
                                     "did not rank", p,
                                     sets ? absl::StrFormat(" of set %d", k) : "");
            return false;
          }
          port_entries.insert(*entry);
        }
        for (const Key& key : r.evicted) {
          if (key.first == k) ref_entries.insert(key);
        }
        port_victims += actual[k]->victims_size();
        ref_victims += expected[k]->victims_size();
        if (r.joint && actual[k]->kept_count() < r.floor) {
          detail = absl::StrFormat("the port keeps %d positions in set %d, below the "
                                   "floor %d", actual[k]->kept_count(), k, r.floor);
          return false;
        }
      }
      std::vector<Key> instead, kept_instead;
      std::set_difference(port_entries.begin(), port_entries.end(), ref_entries.begin(),
                          ref_entries.end(), std::back_inserter(instead));
      std::set_difference(ref_entries.begin(), ref_entries.end(), port_entries.begin(),
                          port_entries.end(), std::back_inserter(kept_instead));
      if (port_victims != ref_victims || instead.size() != kept_instead.size() ||
          instead.empty()) {
        detail = absl::StrFormat(
            "the port evicts %d positions (%d ranked candidates) where the reference "
            "evicts %d (%d): not an exchange", port_victims, port_entries.size(),
            ref_victims, ref_entries.size());
        return false;
      }
      double highest = 0.0, lowest = 0.0;
      for (size_t i = 0; i < instead.size(); ++i) {
        const double s = r.score.at(instead[i]);
        highest = i == 0 ? s : std::max(highest, s);
      }
      for (size_t i = 0; i < kept_instead.size(); ++i) {
        const double s = r.score.at(kept_instead[i]);
        lowest = i == 0 ? s : std::min(lowest, s);
      }
      std::vector<std::string> out, in;
      for (const Key& key : instead) out.push_back(KeyText(key, r, sets));
      for (const Key& key : kept_instead) in.push_back(KeyText(key, r, sets));
      // Every exchanged pair must be one the bound can reorder.
      if (Lower(bound_, highest) > Upper(bound_, lowest)) {
        detail = absl::StrFormat(
            "the port evicts %s and keeps %s: %s cannot rank %s at or below %s",
            absl::StrJoin(out, ", "), absl::StrJoin(in, ", "), precision_, Num(highest),
            Num(lowest));
        return false;
      }
      const auto decision = r.decisions.find(r.joint ? 0 : group[0]);
      lines.push_back(absl::StrFormat(
          "evicts %s instead of %s%s", absl::StrJoin(out, ", "), absl::StrJoin(in, ", "),
          decision == r.decisions.end()
              ? std::string()
              : absl::StrFormat("; the decision's margin %.3g (last victim %s, first "
                                "survivor %s)",
                                RelativeMargin(decision->second),
                                Num(decision->second.victim),
                                Num(decision->second.survivor))));
    }
    detail = absl::StrJoin(lines, "\n  ");
    return true;
  }

 private:
  ErrorBound bound_;
  std::string precision_;
  bool blocks_;  // candidates are blocks (spec/blocks.md)
};

}  // namespace

PrecisionJudgement JudgeWithinPrecision(const vectors::LoadedCase& loaded,
                                        const v1::EvictionLog& actual,
                                        const PortPrecision& precision,
                                        bool compare_cut) {
  PrecisionJudgement out;
  const PolicyConfig config = FromProto(loaded.vector->policy());
  const Scenario scenario = FromProto(*loaded.scenario);
  if (ExactAt(precision, config, scenario)) {
    out.verdict = PrecisionVerdict::kExact;
    return out;
  }
  const uint64_t terms = loaded.vector->score_terms() > 0 ? loaded.vector->score_terms()
                                                          : ScoreTerms(config, scenario);
  const ErrorBound bound = JudgingBound(precision, terms);
  const std::string name = PortPrecisionName(precision);
  const std::string band =
      bound.finite ? absl::StrFormat("%s over %d score terms: relative %.3g, absolute "
                                     "%.3g (spec/arithmetic.md#the-bound)",
                                     name, terms, bound.relative, bound.absolute)
                   : absl::StrFormat("%s over %d score terms: no bound, since %d "
                                     "roundings reach 1/2 (spec/arithmetic.md#the-bound)",
                                     name, terms, 2 * terms + 3);
  // An unbounded precision (too many terms) judges every decision inside
  // its band; a bounded one only where no score can overflow.
  if (bound.finite && !InRange(precision, bound, config, scenario)) {
    out.verdict = PrecisionVerdict::kWithin;
    const absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
    if (policy.ok() && (*policy)->reads_keys()) {
      out.detail = absl::StrFormat(
          "%s scores from keys, which no bound of spec/arithmetic.md covers "
          "below binary64 (spec/arithmetic.md#range), so the case is not "
          "judged within precision", config.name);
      return out;
    }
    out.detail = absl::StrFormat(
        "the case's weights sum to up to %s, and %s's largest finite number is %s: "
        "its scores may overflow there (spec/arithmetic.md#range), so the case is "
        "not judged within precision", Num(WeightCeiling(scenario)), name,
        Num(LargestFinite(precision)));
    return out;
  }
  std::map<int64_t, StepRankings> rankings;
  RunOptions options;
  options.on_ranking = [&rankings](int64_t step, const RankingObservation& o) {
    StepRankings& r = rankings[step];
    r.joint = r.joint || o.joint;
    r.floor = o.floor;
    for (const RankedPair& pair : o.ranking) {
      r.score[{pair.set, pair.position}] = pair.score;
      if (pair.evicted) r.evicted.insert({pair.set, pair.position});
    }
    if (const std::optional<Decision> d = DecisionOf(o); d.has_value()) {
      r.decisions[o.joint ? 0 : o.set] = *d;
    }
  };
  RunScenario(config, scenario, options);
  // spec/blocks.md: `block` above 1 ranks blocks (`openvino` too).
  bool blocks = false;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name != config.name) continue;
    for (const ParameterInfo& p : info.parameters) {
      if (p.name == "block" && EffectiveParameter(config, "block") > 1) blocks = true;
    }
  }
  const Judge judge(bound, name, blocks);
  const v1::EvictionLog& expected = loaded.vector->expected();
  const int steps = std::min(expected.steps_size(), actual.steps_size());
  const StepRankings none;
  for (int i = 0; i < steps; ++i) {
    const auto e = Records(expected.steps(i));
    const auto a = Records(actual.steps(i));
    const auto found = rankings.find(i);
    const StepRankings& r = found == rankings.end() ? none : found->second;
    out.step = i;
    if (e.size() != a.size() ||
        !SameExceptScores(expected.steps(i), actual.steps(i))) {
      out.detail = absl::StrFormat("step %d differs in more than victims and scores", i);
      return out;
    }
    bool victims_differ = false;
    for (size_t k = 0; k < e.size(); ++k) {
      if (!SameExceptScores(*e[k], *a[k])) {
        out.detail = absl::StrFormat("step %d differs in more than victims and scores", i);
        return out;
      }
      victims_differ = victims_differ || !SameVictims(*e[k], *a[k]);
    }
    if (victims_differ) {
      if (found == rankings.end()) {
        out.detail = absl::StrFormat("step %d: the victims differ where the reference "
                                     "ranks by no score", i);
        return out;
      }
      std::string why;
      if (!judge.JudgeExchange(e, a, r, why)) {
        out.detail = absl::StrFormat("step %d: %s; the band of %s", i, why, band);
        return out;
      }
      out.verdict = PrecisionVerdict::kWithin;
      out.detail = absl::StrFormat(
          "step %d: the port %s\n  inside the band of %s; the rest of the case is not "
          "judged (spec/protocol.md#precision)", i, why, band);
      return out;
    }
    for (size_t k = 0; k < e.size(); ++k) {
      if (e[k]->kept_count() != a[k]->kept_count()) {
        out.detail = absl::StrFormat("step %d: kept %d, the reference %d", i,
                                     a[k]->kept_count(), e[k]->kept_count());
        return out;
      }
      if (!compare_cut) continue;
      const std::string why = judge.JudgeCut(*e[k], *a[k], r, e.size() > 1 ? k : 0);
      if (!why.empty()) {
        out.detail = absl::StrFormat("step %d%s: %s", i,
                                     e.size() > 1 ? absl::StrFormat(" set %d", k) : "", why);
        return out;
      }
    }
  }
  out.step = -1;
  if (expected.steps_size() != actual.steps_size() ||
      expected.has_rejection() != actual.has_rejection() ||
      (expected.has_rejection() &&
       (expected.rejection().category() != actual.rejection().category() ||
        expected.rejection().step() != actual.rejection().step()))) {
    out.detail = "the number of steps or the rejection differs";
    return out;
  }
  out.verdict = PrecisionVerdict::kPass;
  return out;
}

}  // namespace conformance
}  // namespace kvspec
