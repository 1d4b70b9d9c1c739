// The runner against deliberately misbehaving fake ports, one per failure
// mode: each misbehaviour is reported as its outcome, on the case it
// happened in, and the runner carries on with the next case.
#include "conformance/runner.h"

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include <signal.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "conformance/expectations.h"
#include "conformance/port.h"
#include "conformance/port_text.h"
#include "conformance/report.h"
#include "tools/vectors/features.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace conformance {
namespace {

// Four cases; the fakes misbehave on the second.
constexpr char kCases[] = "streamingllm/chunk/*";
constexpr char kTarget[] = "streamingllm/chunk/crosses-capacity";

const vectors::VectorSet& Vectors() {
  static const vectors::VectorSet* set = [] {
    auto loaded = vectors::LoadVectorSet("vectors");
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return new vectors::VectorSet(*std::move(loaded));
  }();
  return *set;
}

std::string Binary(const std::string& name) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/kvspec/conformance/testee/" + name;
}

RunnerOptions Fake(const std::string& mode, const std::string& on_case = kTarget,
                   const std::string& cases = kCases) {
  RunnerOptions options;
  options.port_command =
      Binary("fake_port") + " --mode=" + mode + " --on_case='" + on_case + "'";
  options.case_pattern = cases;
  // Generous: a loaded machine must not turn a slow reply into a timeout.
  options.timeout_seconds = 30.0;
  return options;
}

// The outcome of every case, in order, and the target's detail.
struct Summary {
  std::vector<std::string> outcomes;
  std::string detail;
};

Summary RunCases(const RunnerOptions& options) {
  const auto report = RunConformance(Vectors(), options);
  EXPECT_TRUE(report.ok()) << report.status();
  Summary summary;
  if (!report.ok()) return summary;
  for (const CaseReport& c : report->cases) {
    summary.outcomes.push_back(OutcomeName(c.outcome));
    if (c.id == kTarget) summary.detail = c.detail;
  }
  return summary;
}

using Outcomes = std::vector<std::string>;

TEST(Runner, TheReferenceTesteePassesItsCases) {
  RunnerOptions options;
  options.port_command = Binary("reference_testee");
  options.case_pattern = kCases;
  EXPECT_EQ(RunCases(options).outcomes, (Outcomes{"pass", "pass", "pass", "pass"}));
}

TEST(Runner, ACrashCostsOneCaseAndIsReportedWithStatusAndStderr) {
  const Summary s = RunCases(Fake("crash"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "crash", "pass", "pass"}));
  EXPECT_NE(s.detail.find("killed by signal 6"), std::string::npos) << s.detail;
  EXPECT_NE(s.detail.find("fake port: about to abort"), std::string::npos) << s.detail;
}

TEST(Runner, AnExitIsACrashWithItsStatus) {
  const Summary s = RunCases(Fake("exit"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "crash", "pass", "pass"}));
  EXPECT_NE(s.detail.find("exited with status 3"), std::string::npos) << s.detail;
}

TEST(Runner, AHangIsATimeout) {
  RunnerOptions options = Fake("hang");
  options.timeout_seconds = 2.0;
  const Summary s = RunCases(options);
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "timeout", "pass", "pass"}));
  EXPECT_NE(s.detail.find("no reply within 2 s, the port idle (no CPU time)"),
            std::string::npos)
      << s.detail;
}

// spec/protocol.md#outcomes: the timeout counts the port's CPU time. A port
// that needs 0.8 s of CPU time, against a timeout of 1 s, sharing its one
// CPU with a busy loop of this test, replies after well over 1 s of wall
// time: slow because the machine is loaded, it passes.
TEST(Runner, APortSlowedByALoadedMachineIsWaitedFor) {
  std::atomic<bool> stop{false};
  std::thread busy([&stop] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    volatile uint64_t spin = 0;
    while (!stop.load()) spin = spin + 1;
  });
  RunnerOptions options = Fake("compute");
  options.port_command += " --compute_seconds=0.8 --cpu=0";
  options.timeout_seconds = 1.0;
  const auto report = RunConformance(Vectors(), options);
  stop.store(true);
  busy.join();
  ASSERT_TRUE(report.ok()) << report.status();
  for (const CaseReport& c : report->cases) {
    EXPECT_EQ(OutcomeName(c.outcome), "pass") << c.id << ": " << c.detail;
    // The load did slow it: more wall time than the timeout.
    if (c.id == kTarget) {
      EXPECT_GT(c.seconds, 1.0);
    }
  }
}

// A port that computes past the timeout in CPU time is a timeout, and the
// detail says which limit it reached.
TEST(Runner, APortComputingPastTheTimeoutIsATimeout) {
  RunnerOptions options = Fake("compute");
  options.port_command += " --compute_seconds=30";
  options.timeout_seconds = 1.0;
  const Summary s = RunCases(options);
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "timeout", "pass", "pass"}));
  EXPECT_NE(s.detail.find("no reply within 1 s of the port's CPU time"), std::string::npos)
      << s.detail;
}

TEST(Runner, GarbageIsAProtocolError) {
  const Summary s = RunCases(Fake("garbage"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "protocol error", "pass", "pass"}));
  EXPECT_NE(s.detail.find("not a PortMessage"), std::string::npos) << s.detail;
}

TEST(Runner, AnOversizedFrameIsRefusedBeforeAllocation) {
  const Summary s = RunCases(Fake("oversize"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "protocol error", "pass", "pass"}));
  EXPECT_NE(s.detail.find("declared 2147483647 bytes, over the cap"),
            std::string::npos)
      << s.detail;
}

TEST(Runner, AWrongSequenceNumberIsAProtocolError) {
  const Summary s = RunCases(Fake("wrong_seq"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "protocol error", "pass", "pass"}));
  EXPECT_NE(s.detail.find("sequence number 9, expected 2"), std::string::npos)
      << s.detail;
}

TEST(Runner, AFrameOfTheWrongTypeIsAProtocolError) {
  const Summary s = RunCases(Fake("wrong_type"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "protocol error", "pass", "pass"}));
  EXPECT_NE(s.detail.find("wrong type"), std::string::npos) << s.detail;
}

TEST(Runner, StdoutOutOfTurnIsCaughtBeforeTheNextCase) {
  const auto report = RunConformance(Vectors(), Fake("chatter"));
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->cases.size(), 4u);
  EXPECT_EQ(report->cases[1].outcome, Outcome::kPass);  // its reply was fine
  EXPECT_EQ(report->cases[2].outcome, Outcome::kProtocolError);
  // The stray bytes are seen before the next request when they have already
  // arrived, and otherwise at the head of the next reply (where their first
  // four bytes read as a huge length); which one depends on timing.
  const std::string& detail = report->cases[2].detail;
  EXPECT_TRUE(detail.find("out of turn") != std::string::npos ||
              detail.find("over the cap") != std::string::npos)
      << detail;
  EXPECT_EQ(report->cases[3].outcome, Outcome::kPass);
}

TEST(Runner, RuntimeErrorsAndSkipsAreReportedAsSuch) {
  EXPECT_EQ(RunCases(Fake("error")).outcomes, (Outcomes{"pass", "error", "pass", "pass"}));
  EXPECT_EQ(RunCases(Fake("skip")).outcomes, (Outcomes{"pass", "skipped", "pass", "pass"}));
}

TEST(Runner, AMismatchNamesTheFirstDivergentStepAndAReplayCommand) {
  const Summary s = RunCases(Fake("wrong_victims"));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "mismatch", "pass", "pass"}));
  EXPECT_NE(s.detail.find("first divergent step: 1"), std::string::npos) << s.detail;
  EXPECT_NE(s.detail.find("expected victims [>>2<<]"), std::string::npos) << s.detail;
  EXPECT_NE(s.detail.find("actual   victims [>>3<<]"), std::string::npos) << s.detail;
  EXPECT_NE(s.detail.find("--case=streamingllm/chunk/crosses-capacity"),
            std::string::npos)
      << s.detail;
}

TEST(Runner, AMismatchShowsTheCutWithExactScores) {
  // tova's tie case: the fake evicts another position; the cut is shown
  // with hex bits and shortest decimals.
  const auto report = RunConformance(
      Vectors(), Fake("wrong_victims", "tova/ties/equal-latest-evict-lower",
                      "tova/ties/equal-latest-evict-lower"));
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->cases.size(), 1u);
  EXPECT_EQ(report->cases[0].outcome, Outcome::kMismatch);
  EXPECT_NE(report->cases[0].detail.find("1: 0.25 (0x3fd0000000000000)"),
            std::string::npos)
      << report->cases[0].detail;
}

// --nocut (RunnerOptions::compare_cut false): requests ask for no cut and
// logs are compared without cuts, for engines that rank nothing they could
// report; everything else is still compared, and the reports say so.
TEST(Runner, WithoutCutsAPortIsJudgedOnEverythingElse) {
  constexpr char kScored[] = "tova/ties/equal-latest-evict-lower";
  const auto run = [&](const std::string& mode, bool compare_cut) {
    RunnerOptions options = Fake(mode, kScored, kScored);
    options.compare_cut = compare_cut;
    auto report = RunConformance(Vectors(), options);
    EXPECT_TRUE(report.ok()) << report.status();
    return *std::move(report);
  };
  // A log without its cut is a mismatch when cuts are compared ...
  RunReport dropped = run("drop_cuts", true);
  ASSERT_EQ(dropped.cases.size(), 1u);
  EXPECT_EQ(dropped.cases[0].outcome, Outcome::kMismatch);
  EXPECT_TRUE(dropped.cut_compared);
  // ... and a pass when they are not.
  dropped = run("drop_cuts", false);
  ASSERT_EQ(dropped.cases.size(), 1u);
  EXPECT_EQ(dropped.cases[0].outcome, Outcome::kPass) << dropped.cases[0].detail;
  EXPECT_FALSE(dropped.cut_compared);
  const Verdict verdict = Judge(dropped, {}, false);
  EXPECT_NE(TextReport(dropped, verdict).find("cuts: not asked for and not compared"),
            std::string::npos);
  EXPECT_NE(JsonSummary(dropped, verdict).find("\"cut_compared\": false"),
            std::string::npos);
  // Wrong victims still fail.
  const RunReport wrong = run("wrong_victims", false);
  ASSERT_EQ(wrong.cases.size(), 1u);
  EXPECT_EQ(wrong.cases[0].outcome, Outcome::kMismatch);
  // The request says want_cut false (the fake errs on it), true otherwise.
  EXPECT_EQ(run("error_unless_cut_wanted", false).cases[0].outcome, Outcome::kError);
  EXPECT_EQ(run("error_unless_cut_wanted", true).cases[0].outcome, Outcome::kPass);
  // The reports of a run with cuts say nothing about them.
  const RunReport full = run("error_unless_cut_wanted", true);
  EXPECT_EQ(TextReport(full, Judge(full, {}, false)).find("cuts:"),
            std::string::npos);
}

// spec/spans.md#the-log: spans and held sets are compared, and the report
// names the first differing query and both held sets with their ids.
TEST(Runner, AMismatchInSpansOrPositionIdsIsReported) {
  const std::string id = "window/spans/worked-example";
  const auto spans = RunConformance(Vectors(), Fake("wrong_span", id, id));
  ASSERT_TRUE(spans.ok());
  ASSERT_EQ(spans->cases.size(), 1u);
  EXPECT_EQ(spans->cases[0].outcome, Outcome::kMismatch);
  // Step 1 admits 2..6; its last query, 6, sees 3..6, and the fake 2..6.
  EXPECT_NE(spans->cases[0].detail.find("spans differ first at query 4"),
            std::string::npos)
      << spans->cases[0].detail;
  EXPECT_NE(spans->cases[0].detail.find("expected span {3..6}"), std::string::npos)
      << spans->cases[0].detail;
  EXPECT_NE(spans->cases[0].detail.find("actual   span {2..6}"), std::string::npos)
      << spans->cases[0].detail;
  const auto ids = RunConformance(Vectors(), Fake("wrong_held_id", id, id));
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->cases.size(), 1u);
  EXPECT_EQ(ids->cases[0].outcome, Outcome::kMismatch);
  EXPECT_NE(ids->cases[0].detail.find("expected held [0..1 as 0..1]"),
            std::string::npos)
      << ids->cases[0].detail;
  EXPECT_NE(ids->cases[0].detail.find("actual   held [0..1 as 1..2]"),
            std::string::npos)
      << ids->cases[0].detail;
}

TEST(Runner, AMismatchMarksTheFirstDifferingVictimInALongList) {
  // window at its defaults evicts 88 positions at step 0; the fake changes
  // the seventh.
  const char* id = "window/defaults/budget-512";
  const auto report = RunConformance(Vectors(), Fake("wrong_late_victim", id, id));
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->cases.size(), 1u);
  const CaseReport& c = report->cases[0];
  EXPECT_EQ(c.outcome, Outcome::kMismatch);
  EXPECT_NE(c.detail.find("victims differ first at index 6"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("expected victims [... 2 3 4 5 >>6<< 7 8 9 10 ...] (88 in all)"),
            std::string::npos)
      << c.detail;
  EXPECT_NE(c.detail.find("actual   victims [... 2 3 4 5 >>100006<< 7 8 9 10 ...] (88 in all)"),
            std::string::npos)
      << c.detail;
  ASSERT_TRUE(c.divergence.has_value());
  EXPECT_EQ(c.divergence->step, 0);
  EXPECT_EQ(c.divergence->victim_index, 6);
  EXPECT_EQ(c.divergence->expected.victims_size(), 88);
  // The JSON report carries the same, for triage without the text.
  const std::string json = JsonSummary(*report, Judge(*report, {}));
  EXPECT_NE(json.find("\"first_divergent_step\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"first_differing_victim_index\": 6"), std::string::npos) << json;
  EXPECT_NE(json.find("\"victims\": [0, 1, 2, 3, 4, 5, 100006, 7"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"replay\": "), std::string::npos) << json;
}

TEST(Runner, AMismatchMarksTheFirstDifferingCutEntry) {
  const char* id = "tova/ties/equal-latest-evict-lower";
  const auto report = RunConformance(Vectors(), Fake("wrong_victims", id, id));
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->cases.size(), 1u);
  const CaseReport& c = report->cases[0];
  ASSERT_TRUE(c.divergence.has_value());
  // The fake changes the victim and leaves the cut: the cut agrees, and the
  // victims differ at index 0.
  EXPECT_EQ(c.divergence->victim_index, 0);
  EXPECT_EQ(c.divergence->cut_rank, -1);
  EXPECT_NE(c.detail.find("expected victims [>>1<<]"), std::string::npos) << c.detail;
  const std::string json = JsonSummary(*report, Judge(*report, {}));
  EXPECT_NE(json.find("\"bits\": \"0x3fd0000000000000\""), std::string::npos) << json;
}

TEST(Runner, ShellQuoteSurvivesQuotes) {
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(Runner, WrongAcceptAndWrongReject) {
  const char* refusal = "harness/refusal/weight-nan";
  EXPECT_EQ(RunCases(Fake("accept_all", refusal, refusal)).outcomes,
            (Outcomes{"wrong accept"}));
  // A wrong accept shows the reference's refusal message: which rule the
  // port missed.
  const auto report = RunConformance(Vectors(), Fake("accept_all", refusal, refusal));
  ASSERT_TRUE(report.ok());
  EXPECT_NE(report->cases[0].detail.find("(the reference: \""), std::string::npos)
      << report->cases[0].detail;
  EXPECT_EQ(RunCases(Fake("reject_all")).outcomes,
            (Outcomes{"pass", "wrong reject", "pass", "pass"}));
}

TEST(Runner, APortCrashingOnEveryCaseIsAbandoned) {
  RunnerOptions options = Fake("crash", "*");
  options.max_restarts = 2;
  EXPECT_EQ(RunCases(options).outcomes,
            (Outcomes{"crash", "crash", "not reached", "not reached"}));
}

TEST(Runner, PoliciesMissingFromTheHelloAreNotRun) {
  RunnerOptions options = Fake("no_tova", "none", "tova/ties/*");
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok());
  // Every tova/ties case (there are two since 0.10.0's worked example) is
  // left out, each with the reason naming the policy.
  ASSERT_GE(report->cases.size(), 2u);
  for (const auto& c : report->cases) {
    EXPECT_EQ(c.outcome, Outcome::kNotRun) << c.id;
    EXPECT_NE(c.detail.find("needs policy tova, which the port's hello "
                            "does not list"),
              std::string::npos)
        << c.id << ": " << c.detail;
  }
}

TEST(Runner, RefusesAPortOfAnotherProtocolVersion) {
  const auto report = RunConformance(Vectors(), Fake("bad_version"));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find(
                "speaks protocol version 2; this runner speaks only 1"),
            absl::string_view::npos)
      << report.status();
}

TEST(Runner, RefusesAPortThatExitsBeforeTheHello) {
  const auto report = RunConformance(Vectors(), Fake("exit_at_start"));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("exited with status 7"),
            absl::string_view::npos)
      << report.status();
}

TEST(Runner, ShardsPartitionTheCases) {
  RunnerOptions options;
  options.port_command = Binary("reference_testee");
  options.case_pattern = "harness/refusal/*";
  options.shard_total = 2;
  std::set<std::string> seen;
  size_t total = 0;
  for (int index = 0; index < 2; ++index) {
    options.shard_index = index;
    const auto report = RunConformance(Vectors(), options);
    ASSERT_TRUE(report.ok());
    for (const CaseReport& c : report->cases) {
      EXPECT_TRUE(seen.insert(c.id).second) << c.id << " ran in two shards";
      EXPECT_EQ(c.outcome, Outcome::kPass);
    }
    total += report->cases.size();
  }
  size_t selected = 0;
  for (const vectors::LoadedCase& c : Vectors().cases) {
    selected += MatchesPattern(c.vector->id(), "harness/refusal/*");
  }
  EXPECT_GT(selected, 10u);
  EXPECT_EQ(total, selected);
}

TEST(Expectations, ParsesEntriesAndRefusesBadLines) {
  const auto parsed = ParseExpectations(
      "# comment\n"
      "tova/* skipped not implemented yet\n"
      "snapkv/ring/index-order-sum  wrong accept  sums in time order  # known\n",
      "port.expectations");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[1].outcome, Outcome::kWrongAccept);
  EXPECT_EQ((*parsed)[1].reason, "sums in time order");
  for (const char* bad : {"tova/* skipped\n", "tova/* sometimes flaky\n",
                          "tova/* pass fine\n",
                          "a/b/c crash x\na/b/c crash y\n"}) {
    const auto refused = ParseExpectations(bad, "port.expectations");
    EXPECT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("port.expectations:"),
              absl::string_view::npos);
  }
}

TEST(Expectations, NewFailuresUnexpectedPassesAndStaleEntriesFail) {
  RunReport report;
  report.cases = {{"a/b/pass", "h2o", Outcome::kPass, "", 0},
                  {"a/b/known", "h2o", Outcome::kMismatch, "", 0},
                  {"a/b/new", "h2o", Outcome::kCrash, "", 0},
                  {"a/c/fixed", "h2o", Outcome::kPass, "", 0}};
  const auto entries = ParseExpectations(
      "a/b/known mismatch known\n"
      "a/c/* mismatch was broken\n"
      "z/y/x crash never runs\n",
      "e");
  ASSERT_TRUE(entries.ok());
  const Verdict verdict = Judge(report, *entries);
  EXPECT_EQ(verdict.expected_failures, 1);
  ASSERT_EQ(verdict.failures.size(), 3u);
  EXPECT_NE(verdict.failures[0].find("new failure: a/b/new: crash"), std::string::npos);
  EXPECT_NE(verdict.failures[1].find("unexpected pass: a/c/fixed"), std::string::npos);
  EXPECT_NE(verdict.failures[2].find("stale entry: line 3 (z/y/x)"), std::string::npos);
}

// spec/heads.md#the-eviction-log: a difference inside one kept set is
// found and named, and a port logging one set where several are expected
// is a mismatch.
TEST(CompareLogs, FindsTheFirstDifferingKeptSet) {
  kvspec::v1::EvictionLog expected;
  kvspec::v1::StepResult* step = expected.add_steps();
  for (uint32_t victim : {3u, 5u}) {
    kvspec::v1::StepResult* set = step->add_sets();
    set->add_victims(victim);
    set->set_kept_count(4);
    set->set_query_cache_position(4);
  }
  kvspec::v1::EvictionLog actual = expected;
  actual.mutable_steps(0)->mutable_sets(1)->set_victims(0, 6);
  std::string detail;
  Divergence d;
  EXPECT_EQ(CompareLogs(expected, actual, "replay", detail, &d),
            Outcome::kMismatch);
  EXPECT_EQ(d.step, 0);
  EXPECT_EQ(d.set, 1);
  EXPECT_EQ(d.victim_index, 0);
  EXPECT_NE(detail.find("kept set 1 differs first"), std::string::npos) << detail;
  EXPECT_EQ(CompareLogs(expected, expected, "replay", detail, nullptr),
            Outcome::kPass);

  kvspec::v1::EvictionLog one_set;
  one_set.add_steps()->add_victims(3);
  EXPECT_EQ(CompareLogs(expected, one_set, "replay", detail, nullptr),
            Outcome::kMismatch);
  EXPECT_NE(detail.find("expected 2 per-set records"), std::string::npos)
      << detail;
}

// spec/harness.md#subjects: a refusal of the right category and step with
// another subject is a mismatch for a port of 0.11.0 or later, and its
// detail shows both subjects; an older port is judged on category and step.
TEST(CompareLogs, ComparesTheSubjectFromSpec0_11_0) {
  kvspec::v1::EvictionLog expected;
  auto* rejection = expected.mutable_rejection();
  rejection->set_category(kvspec::v1::INVALID_PARAMETER);
  rejection->set_step(-1);
  rejection->mutable_subject()->set_check("range");
  rejection->mutable_subject()->add_names("budget");
  kvspec::v1::EvictionLog actual = expected;
  actual.mutable_rejection()->mutable_subject()->set_check("unknown");
  std::string detail;
  EXPECT_EQ(CompareLogs(expected, actual, "replay", detail, nullptr, true),
            Outcome::kMismatch);
  EXPECT_NE(detail.find("INVALID_PARAMETER (range budget) at step -1"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("INVALID_PARAMETER (unknown budget) at step -1"),
            std::string::npos)
      << detail;
  EXPECT_EQ(CompareLogs(expected, actual, "replay", detail, nullptr, false),
            Outcome::kPass);
  // Names in order, and none missing or added.
  actual = expected;
  actual.mutable_rejection()->mutable_subject()->add_names("sinks");
  EXPECT_EQ(CompareLogs(expected, actual, "replay", detail, nullptr, true),
            Outcome::kMismatch);
  actual.mutable_rejection()->clear_subject();
  EXPECT_EQ(CompareLogs(expected, actual, "replay", detail, nullptr, true),
            Outcome::kMismatch);
  EXPECT_NE(detail.find("(none)"), std::string::npos) << detail;
  EXPECT_EQ(CompareLogs(expected, expected, "replay", detail, nullptr, true),
            Outcome::kPass);

  EXPECT_FALSE(ComparesSubjects("0.10.0"));
  EXPECT_FALSE(ComparesSubjects("0.9.12"));
  EXPECT_FALSE(ComparesSubjects("garbage"));
  EXPECT_TRUE(ComparesSubjects("0.11.0"));
  EXPECT_TRUE(ComparesSubjects("0.12.3"));
  EXPECT_TRUE(ComparesSubjects("1.0.0"));
}

// The finding of issue 33: a port that declares a parameter and ignores it
// refuses it as unknown, with the right category. From 0.11.0 it fails
// every case whose refusal is not of an unknown parameter; a port
// declaring 0.10.0 is judged as before and passes them.
TEST(Runner, ARangeOrRuleRefusedAsUnknownFailsFromSpec0_11_0) {
  for (const char* version : {"", "0.10.0"}) {
    RunnerOptions options = Fake("unknown_subject", "*", "h2o/refusal/*");
    if (*version != '\0') {
      options.port_command += std::string(" --spec_version=") + version;
    }
    const auto report = RunConformance(Vectors(), options);
    ASSERT_TRUE(report.ok()) << report.status();
    int unknown = 0, other = 0;
    for (const CaseReport& c : report->cases) {
      const auto* loaded = vectors::FindCase(Vectors(), c.id);
      ASSERT_NE(loaded, nullptr) << c.id;
      const auto& rejection = loaded->vector->expected().rejection();
      ASSERT_EQ(rejection.category(), kvspec::v1::INVALID_PARAMETER) << c.id;
      const bool is_unknown = rejection.subject().check() == "unknown";
      (is_unknown ? unknown : other) += 1;
      // A case set after the port's version is not sent to it (the 0.12.0
      // triggers' refusals for the 0.10.0 port).
      const bool later =
          *version != '\0' &&
          vectors::CompareVersions(loaded->vector->since(), version) > 0;
      const Outcome want = later ? Outcome::kNotRun
                           : is_unknown || *version != '\0'
                               ? Outcome::kPass
                               : Outcome::kMismatch;
      EXPECT_EQ(c.outcome, want) << version << " " << c.id << ": " << c.detail;
    }
    // The family holds both kinds (counted from the vectors).
    EXPECT_GE(unknown, 1);
    EXPECT_GE(other, 2);
  }
}

// spec/protocol.md#features: a port of spec 0.1.0 that declares no features
// and ignores every field it does not know (the partial port: the reference
// behind a filter that drops those fields and refuses later parameters) is
// sent only what it can run, and so gets no failure on the whole suite.
// The not-run counts, by reason, are counted here from the vectors.
TEST(Runner, AnOldPortThatDeclaresNothingGetsNoFailure) {
  RunnerOptions options;
  options.port_command = Binary("partial_port") + " --spec_version=0.1.0";
  options.timeout_seconds = 120.0;
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, int> want, got;
  int want_sent = 0;
  for (const vectors::LoadedCase& c : Vectors().cases) {
    const std::string& policy = c.vector->policy().name();
    const bool positional = policy == "full" || policy == "window" ||
                            policy == "streamingllm";
    const bool registered = positional || policy == "h2o" || policy == "tova" ||
                            policy == "snapkv" || policy == "random" ||
                            policy == "openvino" || policy == "knorm" ||
                            policy == "keydiff" || policy == "lagkv" ||
                            policy == "simlayerkv";
    const bool only_decode =
        c.vector->features_size() == 1 && c.vector->features(0) == "decode";
    if (registered && !positional) {
      ++want["policy"];
    } else if (!only_decode) {
      ++want["feature"];
    } else if (c.vector->since() != "0.1.0") {
      ++want["version"];
    } else {
      ++want_sent;
    }
  }
  int sent = 0;
  for (const CaseReport& c : report->cases) {
    if (c.outcome == Outcome::kNotRun) {
      if (c.detail.rfind("needs policy", 0) == 0) ++got["policy"];
      if (c.detail.rfind("needs feature", 0) == 0) ++got["feature"];
      if (c.detail.find("its outcome was set in spec") == 0) ++got["version"];
    } else {
      ++sent;
      EXPECT_EQ(c.outcome, Outcome::kPass) << c.id << ": " << c.detail;
    }
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(sent, want_sent);
  EXPECT_GT(sent, 20);  // not vacuous: the decode cases of 0.1.0 ran
  const Verdict verdict = Judge(*report, {});
  EXPECT_TRUE(verdict.failures.empty()) << verdict.failures.front();
  EXPECT_EQ(verdict.not_run, want["policy"] + want["feature"] + want["version"]);
  EXPECT_EQ(report->port_features, (std::set<std::string>{"decode"}));
  // --require_all makes each of them a failure.
  EXPECT_EQ(Judge(*report, {}, /*require_all=*/true).failures.size(),
            static_cast<size_t>(verdict.not_run));
  const std::string text = TextReport(*report, verdict);
  EXPECT_NE(text.find(absl::StrFormat("%d passed, 0 failed, 0 skipped, %d not run",
                                      sent, verdict.not_run)),
            std::string::npos)
      << text;
}

// The same port declaring a feature it does not implement (heads) is sent
// the heads cases, answers them from what is left, and fails them.
TEST(Runner, APortDeclaringAFeatureItLacksFailsThoseCases) {
  RunnerOptions options;
  options.port_command = Binary("partial_port") +
                         " --spec_version=0.5.0 --declare=decode,trace,heads,trace-heads,"
                         "adaptive --implement=decode,trace,adaptive";
  options.case_pattern = "h2o/heads/*";
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  int failed = 0;
  for (const CaseReport& c : report->cases) {
    EXPECT_NE(c.outcome, Outcome::kNotRun) << c.id;
    if (c.outcome != Outcome::kPass) ++failed;
  }
  EXPECT_GT(failed, static_cast<int>(report->cases.size()) / 2);
  EXPECT_EQ(Judge(*report, {}).failures.size(), static_cast<size_t>(failed));
}

TEST(Runner, ASpecVersionThatDoesNotParseIsRefused) {
  RunnerOptions options;
  options.port_command = Binary("partial_port") + " --spec_version=0.3";
  options.case_pattern = kCases;
  const auto report = RunConformance(Vectors(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("'0.3', which is not MAJOR.MINOR.PATCH"),
            absl::string_view::npos)
      << report.status();
}

// spec/protocol.md#precision: a precision the runner does not know fails
// the handshake; a known one is judged within its bound and said so.
TEST(Runner, AnUnknownPrecisionIsRefused) {
  RunnerOptions options = Fake("none", "none");
  options.port_command += " --precision=9";
  const auto report = RunConformance(Vectors(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("score_precision 9"), absl::string_view::npos)
      << report.status();
  options = Fake("none", "none");
  options.port_command += " --precision=3/7";
  EXPECT_FALSE(RunConformance(Vectors(), options).ok());
}

TEST(Runner, ADeclaredPrecisionIsJudgedWithinItsBound) {
  RunnerOptions options = Fake("none", "none");
  options.port_command += " --precision=3/2";  // bfloat16 into binary32
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->judged_within_bound);
  EXPECT_EQ(PortPrecisionName(report->precision), "bfloat16 (accumulate binary32)");
  for (const CaseReport& c : report->cases) EXPECT_EQ(c.outcome, Outcome::kPass) << c.id;
  const std::string text = TextReport(*report, Judge(*report, {}));
  EXPECT_NE(text.find(absl::StrFormat("%d passed, 0 within precision, 0 failed",
                                      report->cases.size())),
            std::string::npos)
      << text;
  EXPECT_NE(JsonSummary(*report, Judge(*report, {})).find("\"within_precision\": 0"),
            std::string::npos);
  // Declaring binary64 outright is the default, judged bit for bit.
  options = Fake("none", "none");
  options.port_command += " --precision=1";
  const auto strict = RunConformance(Vectors(), options);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_FALSE(strict->judged_within_bound);
  options.strict_binary64 = false;
  const auto relaxed = RunConformance(Vectors(), options);
  ASSERT_TRUE(relaxed.ok()) << relaxed.status();
  EXPECT_TRUE(relaxed->judged_within_bound);
}

TEST(Runner, UnknownFeaturesAreRunAndReported) {
  RunnerOptions options;
  options.port_command = Binary("partial_port") +
                         " --spec_version=0.7.0 --declare=decode,teleportation";
  options.case_pattern = kCases;
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->unknown_features, (std::vector<std::string>{"teleportation"}));
  for (const CaseReport& c : report->cases) EXPECT_EQ(c.outcome, Outcome::kPass);
  const std::string json = JsonSummary(*report, Judge(*report, {}));
  EXPECT_NE(json.find("\"features\": [\"decode\"], \"since\": \"0.1.0\""),
            std::string::npos)
      << json.substr(0, 2000);
  const std::string text = TextReport(*report, Judge(*report, {}));
  EXPECT_NE(text.find("features this runner does not know: teleportation"),
            std::string::npos);
}

// --- Hostile ports: what a port supplies is capped and made safe, its
// children do not outlive it, and every verdict says what happened.

TEST(PortText, KeepsUtf8AndEscapesControlBytesAndInvalidSequences) {
  EXPECT_EQ(PortText("caf\xc3\xa9 \xe2\x82\xac\ttab\nline"),
            "caf\xc3\xa9 \xe2\x82\xac\ttab\nline");
  EXPECT_EQ(PortText(std::string("a\0b\x1b\x7f", 5)), "a\\x00b\\x1b\\x7f");
  // A stray continuation byte, an overlong '/', a surrogate, a cut sequence.
  EXPECT_EQ(PortText("\x80"), "\\x80");
  EXPECT_EQ(PortText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(PortText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(PortText("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(PortText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
}

TEST(PortText, CutsOnACharacterBoundaryAndSaysSo) {
  // Three 3-byte characters under a cap of 7 bytes: two fit.
  EXPECT_EQ(PortText("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 7),
            "\xe2\x82\xac\xe2\x82\xac [cut: 3 more bytes from the port]");
  EXPECT_EQ(PortText(std::string(10, 'x'), 10), std::string(10, 'x'));
  EXPECT_EQ(TailOnBoundary("ab\xe2\x82\xac", 2), "");  // only the cut character's tail
  EXPECT_EQ(TailOnBoundary("ab\xe2\x82\xac", 3), "\xe2\x82\xac");
  EXPECT_EQ(TailOnBoundary("abc", 5), "abc");
}

TEST(Runner, AHugeErrorMessageIsCappedInEveryReport) {
  const auto report = RunConformance(Vectors(), Fake("huge_error"));
  ASSERT_TRUE(report.ok());
  const CaseReport& c = report->cases[1];
  EXPECT_EQ(c.outcome, Outcome::kError);
  EXPECT_LT(c.detail.size(), kPortTextBytes + 1024);
  EXPECT_NE(c.detail.find("[cut: "), std::string::npos);
  const Verdict verdict = Judge(*report, {});
  EXPECT_LT(TextReport(*report, verdict).size(), size_t{64} << 10);
  EXPECT_LT(JsonSummary(*report, verdict).size(), size_t{64} << 10);
  EXPECT_LT(JUnitXml(*report, verdict).size(), size_t{64} << 10);
}

// Valid JSON: protobuf's parser reads it into a Struct.
bool ParsesAsJson(const std::string& json) {
  google::protobuf::Struct parsed;
  return google::protobuf::util::JsonStringToMessage(json, &parsed).ok();
}

TEST(Runner, NulsControlBytesAndBrokenUtf8CannotCorruptAReport) {
  RunnerOptions options = Fake("nasty_text");
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->hello.port_name(), "fake\\x00port\\x01\\x1b[31m");
  const CaseReport& c = report->cases[1];
  ASSERT_EQ(c.outcome, Outcome::kError);
  EXPECT_NE(c.detail.find("before\\x00after\\x1b[2J end"),
            std::string::npos)
      << c.detail;
  const Verdict verdict = Judge(*report, {});
  const std::string text = TextReport(*report, verdict);
  EXPECT_EQ(text.find('\0'), std::string::npos);
  EXPECT_NE(text.find("3 passed, 1 failed"), std::string::npos) << text;
  EXPECT_TRUE(ParsesAsJson(JsonSummary(*report, verdict)));
  const std::string xml = JUnitXml(*report, verdict);
  for (unsigned char ch : xml) {
    EXPECT_FALSE(ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') << int{ch};
  }
}

TEST(Runner, AStderrTailStartsOnACharacterAndEscapesInvalidBytes) {
  const auto report = RunConformance(Vectors(), Fake("nasty_stderr"));
  ASSERT_TRUE(report.ok()) << report.status();
  const CaseReport& c = report->cases[1];
  ASSERT_EQ(c.outcome, Outcome::kCrash);
  // The euro sign cut in two at the tail's start is dropped, not escaped.
  EXPECT_EQ(c.detail.find("\\x82\\xac"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("\xe2\x82\xac\xe2\x82\xacx\n"), std::string::npos);
  const Verdict verdict = Judge(*report, {});
  EXPECT_TRUE(ParsesAsJson(JsonSummary(*report, verdict)));
  // Invalid bytes early in stderr, kept whole here by a longer tail.
  EXPECT_EQ(PortText("bad \xff\xc3 bytes"), "bad \\xff\\xc3 bytes");
}

TEST(Runner, AChildHoldingStdoutNeitherDelaysTheVerdictNorOutlivesThePort) {
  RunnerOptions options = Fake("orphan");
  options.timeout_seconds = 30.0;
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok());
  const CaseReport& c = report->cases[1];
  EXPECT_EQ(c.outcome, Outcome::kCrash) << c.detail;
  EXPECT_NE(c.detail.find("exited with status 5"), std::string::npos) << c.detail;
  EXPECT_LT(c.seconds, 10.0);  // not the 30 s timeout
  const size_t at = c.detail.find("child pid ");
  ASSERT_NE(at, std::string::npos) << c.detail;
  const int child = std::atoi(c.detail.c_str() + at + 10);
  ASSERT_GT(child, 1);
  // Killed with the port's group: gone, or a zombie awaiting its reaper.
  std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
  std::string line;
  if (std::getline(stat, line)) {
    const size_t close = line.rfind(')');
    ASSERT_NE(close, std::string::npos);
    EXPECT_EQ(line.substr(close + 2, 1), "Z") << line;
  }
}

TEST(Runner, AFailedRestartKeepsItsReason) {
  const std::string flag = std::string(std::getenv("TEST_TMPDIR")) + "/restart-fails";
  std::remove(flag.c_str());
  const Summary s = RunCases(Fake("restart_fails --restart_fails=" + flag));
  EXPECT_EQ(s.outcomes, (Outcomes{"pass", "crash", "not reached", "not reached"}));
  // With the flag left in place the very first start fails: the run is
  // refused before any case, with the port's own exit status.
  const auto report = RunConformance(Vectors(), Fake("restart_fails --restart_fails=" + flag));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("exited with status 9"),
            absl::string_view::npos)
      << report.status();
  std::remove(flag.c_str());
  const auto again = RunConformance(Vectors(), Fake("restart_fails --restart_fails=" + flag));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->cases[2].detail.find(
                "its restart after case streamingllm/chunk/crosses-capacity failed"),
            std::string::npos)
      << again->cases[2].detail;
  EXPECT_NE(again->cases[2].detail.find("exited with status 9"), std::string::npos)
      << again->cases[2].detail;
  std::remove(flag.c_str());
}

TEST(Port, APortThatStopsReadingIsATimeoutAndOneThatExitedIsClosed) {
  const std::string big(4 << 20, 'x');  // far more than a pipe holds
  auto sleeper = PortProcess::Start("sleep 600", kDefaultMaxFrameBytes);
  ASSERT_TRUE(sleeper.ok());
  EXPECT_EQ((*sleeper)->Send(big, 0.5), PortProcess::Sent::kTimeout);
  auto quitter = PortProcess::Start("true", kDefaultMaxFrameBytes);
  ASSERT_TRUE(quitter.ok());
  EXPECT_EQ((*quitter)->Send(big, 5.0), PortProcess::Sent::kClosed);
}

TEST(Runner, ASelectionOfNoCaseIsRefusedBeforeThePortStarts) {
  RunnerOptions options = Fake("crash", kTarget, "no/such/*");
  auto report = RunConformance(Vectors(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("--case=no/such/* selects none"),
            absl::string_view::npos)
      << report.status();
  options = Fake("crash");
  options.shard_total = 2;
  options.shard_index = 2;
  report = RunConformance(Vectors(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("shard 2 of 2"), absl::string_view::npos);
}

TEST(Judge, ARunThatJudgedNoCaseFails) {
  RunReport report;
  for (Outcome outcome : {Outcome::kNotRun, Outcome::kSkipped, Outcome::kNotRun}) {
    CaseReport c;
    c.id = "x";
    c.outcome = outcome;
    report.cases.push_back(c);
  }
  // The skip expected by an entry, so that only the rule under test fails.
  const Verdict verdict = Judge(report, {{"x", Outcome::kSkipped, "why", 1}});
  ASSERT_EQ(verdict.failures.size(), 1u);
  EXPECT_EQ(verdict.failures[0],
            "no case was judged: of 3 cases selected, 2 not run and 1 skipped by "
            "the port");
  report.cases[1].outcome = Outcome::kPass;
  EXPECT_TRUE(Judge(report, {}).failures.empty());
}

// A hello declaring spec 0.0.0 can run nothing: the run fails.
TEST(Runner, APortOfSpecZeroRunsNothingAndFails) {
  RunnerOptions options;
  options.port_command = Binary("partial_port") + " --spec_version=0.0.0";
  options.case_pattern = kCases;
  const auto report = RunConformance(Vectors(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  for (const CaseReport& c : report->cases) EXPECT_EQ(c.outcome, Outcome::kNotRun);
  const Verdict verdict = Judge(*report, {});
  ASSERT_FALSE(verdict.failures.empty());
  EXPECT_NE(verdict.failures.back().find("no case was judged"), std::string::npos);
}

// With --require_all a case not run is failed in every output alike.
TEST(Report, RequireAllCountsNotRunAsFailedEverywhere) {
  RunReport report;
  report.suite_spec_version = "9.9.9";
  for (Outcome outcome : {Outcome::kPass, Outcome::kNotRun}) {
    CaseReport c;
    c.id = outcome == Outcome::kPass ? "a/b/pass" : "a/b/not-run";
    c.policy = "h2o";
    c.features = {"decode"};
    c.outcome = outcome;
    c.detail = outcome == Outcome::kPass ? "" : "needs feature heads";
    report.cases.push_back(c);
  }
  const Verdict verdict = Judge(report, {}, /*require_all=*/true);
  const std::string text = TextReport(report, verdict);
  EXPECT_NE(text.find("| h2o    |      1 |      1 |       0 |       0 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 passed, 1 failed, 0 skipped, 0 not run"), std::string::npos);
  EXPECT_NE(text.find("suite: kvspec vectors of spec 9.9.9"), std::string::npos);
  const std::string json = JsonSummary(report, verdict);
  EXPECT_NE(json.find("\"failed\": 1,\n  \"skipped\": 0,\n  \"not_run\": 0"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"suite_spec_version\": \"9.9.9\""), std::string::npos);
  const std::string xml = JUnitXml(report, verdict);
  EXPECT_NE(xml.find("failures=\"1\" skipped=\"0\""), std::string::npos) << xml;
  // Without it, the same case is "not run" everywhere.
  const Verdict lenient = Judge(report, {});
  EXPECT_NE(TextReport(report, lenient).find("1 passed, 0 failed, 0 skipped, 1 not run"),
            std::string::npos);
  EXPECT_NE(JsonSummary(report, lenient).find("\"failed\": 0,"), std::string::npos);
}

}  // namespace
}  // namespace conformance
}  // namespace kvspec
