// simulate: runs kvspec's reference policies over a scenario and prints, step
// by step, what each policy admits, evicts and keeps.
//
//   bazel run -c opt //tools:simulate                       # every policy, sample
//   bazel run -c opt //tools:simulate -- --policy=streamingllm --params=budget=6,sinks=2
//   bazel run -c opt //tools:simulate -- --scenario=/path/scenario.pb --policy=window
//   bazel run -c opt //tools:simulate -- --list             # policies and parameters
//   bazel run -c opt //tools:simulate -- --scenario=prompt.pb --policy=snapkv
//       --params=preset=kvpress-0.5.5,ratio_ppm=500000   (one command)
//   bazel run -c opt //tools:simulate -- --policy=h2o --json=/tmp/run.json  # JSON
//
// A scenario file is a binary kvspec.v1.Scenario (spec/kvspec.proto); floats
// are read as exact IEEE values. Printed floats are shortest round-trip.
//
// --json=PATH writes one run (one --policy) as JSON: the configuration after
// preset expansion, each step's victims and cut per kept set, kept sets
// (--json_kept), warnings and the refusal. Field by field:
// tools/simulate/simulate-json.md.
//
// Files: --scenario must be a regular file, not empty (a FIFO or a device
// is refused at once, never read). --json, --write_sample and --write_trace
// are written whole or not at all (tools/files/files.h: a temporary file
// beside the path, renamed over it once complete), only over a regular
// file or a new path (an existing symlink, FIFO, device or directory is
// refused), never over --scenario; a write that fails exits 1 naming the
// flag and the path, and leaves the path as it was.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/numeric/int128.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/heads.h"
#include "cc/presets.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/text.h"
#include "cc/trace.h"
#include "cc/version.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "spec/kvspec.pb.h"
#include "tools/files/files.h"
#include "tools/simulate/json.h"
#include "tools/simulate/sample_scenario.h"
#include "tools/simulate/scenario_file.h"
#include "tools/simulate/steps.h"
#include "tools/simulate/warnings.h"

ABSL_FLAG(std::string, policy, "",
          "Registry name of the policy to run (see --list). Empty runs every "
          "registered policy with the sample settings of "
          "tools/simulate/sample_scenario.h.");
ABSL_FLAG(std::vector<std::string>, params, {},
          "Comma-separated name=value integer parameters for --policy, e.g. "
          "budget=6,sinks=2. Parameters left out take the defaults of the "
          "policy's card.");
ABSL_FLAG(uint64_t, seed, 0,
          "Seed of the Rng each policy receives (spec/rng.md); deterministic "
          "policies ignore it.");
ABSL_FLAG(std::string, scenario, "",
          "Path of a binary kvspec.v1.Scenario: a regular file of 1 to "
          "2^31 - 1 bytes (protobuf's limit for one message); a FIFO, a "
          "device or an empty file is refused. Empty uses the built-in "
          "sample scenario.");
ABSL_FLAG(std::string, write_sample, "",
          "Write the built-in sample scenario to this path as a binary "
          "kvspec.v1.Scenario, then exit. Written whole (a temporary file "
          "renamed over it), only over a regular file; a failure exits 1.");
ABSL_FLAG(uint32_t, trace_steps, 0,
          "Run the canonical trace (spec/trace.md) for this many steps instead "
          "of a scenario, streaming: memory stays proportional to the kept "
          "positions. Prints a summary per policy, not every step.");
ABSL_FLAG(std::string, write_trace, "",
          "With --trace_steps: write the canonical trace, expanded into "
          "explicit full-cache rows, to this path as a binary "
          "kvspec.v1.Scenario, then exit, as --write_sample writes. (The "
          "rows grow with the square of the steps: keep it to a few "
          "thousand.)");
ABSL_FLAG(bool, list, false,
          "List the registered policies with their parameters, defaults and "
          "ranges, then exit.");
ABSL_FLAG(bool, quiet, false,
          "Print only each policy's summary line, not every step.");
ABSL_FLAG(std::string, json, "",
          "Write the run as JSON to this path (tools/simulate/simulate-json.md); '-' "
          "writes it to stdout and prints no text log (warnings and a "
          "refusal still go to stderr). Needs --policy: one run per file. "
          "Works with --scenario, the sample scenario and --trace_steps. "
          "The file appears only once the run is complete and written (a "
          "temporary file beside it, renamed over it); it must be a regular "
          "file or a new path, and not the --scenario file; a failed write "
          "exits 1 and leaves it as it was.");
ABSL_FLAG(std::string, json_kept, "final",
          "Which kept sets --json writes: 'final' (only the kept sets after "
          "the last step carried out, as kept_at_end), 'evicting' (also "
          "after every step at which some set evicted), 'every' (also after "
          "every step; a long decode run makes this O(steps x budget)), or "
          "'none'. Victims are always written, so every kept set can be "
          "rebuilt from them.");

namespace kvspec {
namespace {

using simulate::Admitted;
using simulate::AdmittedWalk;
using simulate::AttentionKind;
using simulate::IsPrefillStep;
using simulate::DescribeSets;
using simulate::JsonHeader;
using simulate::JsonWriter;
using simulate::KeptMode;
using simulate::ParseKeptMode;
using simulate::PrefillWarnings;
using simulate::RatioBudget;
using simulate::SetRecords;
using simulate::StepCount;
using simulate::Warning;
using simulate::WriteFooter;
using simulate::WriteHeader;
using simulate::WriteScenarioJson;
using simulate::WriteStep;

// The human text log: stdout, or nowhere with --json=-.
std::FILE* g_text = stdout;

template <typename... Args>
void Text(const absl::FormatSpec<Args...>& format, const Args&... args) {
  if (g_text != nullptr) absl::FPrintF(g_text, format, args...);
}

std::string Positions(absl::Span<const Position> positions) {
  return "[" + absl::StrJoin(positions, " ") + "]";
}

void ListPolicies() {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    std::printf("%s: %s\n  card: %s\n", info.name.c_str(),
                info.summary.c_str(), info.card.c_str());
    if (info.parameters.empty()) std::printf("  (no parameters)\n");
    for (const ParameterInfo& p : info.parameters) {
      std::printf("  %s: %s; default %s, range [%lld, %lld]\n",
                  p.name.c_str(), p.meaning.c_str(),
                  p.default_value.has_value()
                      ? std::to_string(*p.default_value).c_str()
                      : "none (required)",
                  static_cast<long long>(p.min),
                  static_cast<long long>(p.max));
    }
    // spec/prefill.md#presets.
    for (const Preset& preset : Presets()) {
      if (preset.policy != info.name) continue;
      std::vector<std::string> values;
      for (const Parameter& p : preset.parameters) {
        values.push_back(absl::StrFormat("%s=%d", p.name, p.value));
      }
      std::printf("  preset=%s: %s\n    follows %s\n", preset.name.c_str(),
                  absl::StrJoin(values, ",").c_str(), preset.follows.c_str());
    }
  }
}

absl::StatusOr<std::vector<Parameter>> ParseParams(
    const std::vector<std::string>& texts, std::string& preset_name) {
  std::vector<Parameter> parameters;
  for (const std::string& text : texts) {
    const std::vector<std::string> parts = absl::StrSplit(text, '=');
    int64_t value = 0;
    // spec/heads.md#parameters: granularity and aggregation take names too.
    const std::optional<int64_t> named =
        parts.size() == 2 ? HeadParameterValue(parts[0], parts[1])
                          : std::nullopt;
    if (parts.size() == 2 && parts[0] == "preset") {
      // spec/prefill.md#presets: expanded by ExpandPreset once the policy
      // is known; kept here as a marker.
      preset_name = parts[1];
      continue;
    } else if (named.has_value()) {
      value = *named;
    } else if (parts.size() != 2 || parts[0].empty() ||
               !absl::SimpleAtoi(parts[1], &value)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--params: '%s' is not name=integer (e.g. budget=6, or "
          "granularity=layer|kv_head|query_head, "
          "aggregation=mean|max|sum, or preset=NAME; see --list)",
          text));
    }
    parameters.push_back({parts[0], value});
  }
  return parameters;
}

// The built-in sample, or the binary kvspec.v1.Scenario at `path`
// (tools/simulate/scenario_file.h), its refusals prefixed with the flag.
// spec/harness.md#resources: a step holds every position it admits before
// it evicts, in every set. The most a reference policy keeps per position
// and set, measured (simulate over one step admitting 10,000,000 positions,
// peak resident memory: window 24, full 20, h2o 54, tova 50, snapkv 125
// bytes per position), rounded up.
constexpr uint64_t kBytesPerPosition = 128;

// Refuses, before anything runs, a scenario with a step whose admitted
// positions alone need more memory than the machine has left, naming the
// step and its admit (what would otherwise end in std::bad_alloc or the OOM
// killer). The positions kept from earlier steps are not counted: the full
// cache over a long run can still run out, and is caught as out of memory.
absl::Status CheckScenarioMemory(const Scenario& scenario) {
  const std::optional<files::Memory> available = files::MemoryAvailable();
  if (!available.has_value()) return absl::OkStatus();
  const uint64_t sets = scenario.query_heads.value_or(1);
  for (size_t i = 0; i < scenario.steps.size(); ++i) {
    const absl::uint128 need =
        absl::uint128(scenario.steps[i].admit) * sets * kBytesPerPosition;
    if (need <= available->bytes) continue;
    return absl::ResourceExhaustedError(absl::StrFormat(
        "--scenario: step %d admits %d positions%s: holding them needs about "
        "%s (%d bytes per position and set) and %s is available (%s); "
        "spec/harness.md#resources",
        i, scenario.steps[i].admit,
        sets > 1 ? absl::StrFormat(" in each of up to %d sets", sets) : "",
        files::BytesText(need > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(need)),
        kBytesPerPosition, files::BytesText(available->bytes), available->source));
  }
  return absl::OkStatus();
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  if (path.empty()) return SampleScenario();
  // A 0-byte file parses as a scenario with nothing in it, which runs no
  // step: refused, as the failed write or copy it most likely is.
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
      info.st_size == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--scenario: '%s' is empty (0 bytes): a scenario file holds at "
        "least its steps or its trace",
        path));
  }
  absl::StatusOr<Scenario> scenario = ReadScenarioFile(path);
  if (!scenario.ok()) {
    return absl::Status(
        scenario.status().code(),
        absl::StrCat("--scenario: ", scenario.status().message()));
  }
  if (absl::Status status = CheckScenarioMemory(*scenario); !status.ok()) return status;
  return scenario;
}

std::string ConfigText(const PolicyConfig& config) {
  std::vector<std::string> parts;
  for (const Parameter& p : config.parameters) {
    // granularity=kv_head, not granularity=1 (spec/heads.md#parameters).
    const std::optional<std::string> word = HeadParameterName(p.name, p.value);
    parts.push_back(word.has_value() ? absl::StrFormat("%s=%s", p.name, *word)
                                     : absl::StrFormat("%s=%d", p.name, p.value));
  }
  return config.name + (parts.empty() ? "" : " " + absl::StrJoin(parts, ","));
}

// "10=0.25 11=0.25 | 12=0.5": the cut's victims, then its next candidates.
std::string CutText(const std::vector<RankedCandidate>& cut, size_t victims) {
  std::string text;
  for (size_t i = 0; i < cut.size(); ++i) {
    if (i > 0) absl::StrAppend(&text, i == victims ? " | " : " ");
    absl::StrAppend(&text, cut[i].position, "=",
                    ShortestDecimal(cut[i].score));
  }
  return text;
}

void PrintCuts(const StepRecord& record) {
  const std::vector<const StepRecord*> sets = SetRecords(record);
  for (size_t s = 0; s < sets.size(); ++s) {
    if (sets[s]->cut.empty()) continue;
    Text("          cut %s%s\n",
         sets.size() == 1 ? "" : absl::StrFormat("set %d: ", s),
         CutText(sets[s]->cut, sets[s]->victims.size()));
  }
}

void PrintRefusal(const RunResult& result) {
  const std::string line = absl::StrFormat(
      "refused at step %d (%s, %s): %s\n", result.refused_step,
      CategoryName(CategoryOf(result.refusal)),
      SubjectText(SubjectOf(result.refusal)), result.refusal.message());
  if (g_text != nullptr) {
    Text("%s", line);
  } else {
    absl::FPrintF(stderr, "%s", line);
  }
}

void PrintWarnings(const std::vector<Warning>& warnings) {
  for (const Warning& warning : warnings) {
    std::fprintf(stderr, "simulate: warning: %s\n", warning.message.c_str());
  }
}

// Where --json goes: stdout (--json=-), or the temporary file that
// files::WriteAtomically renames over --json once the run is complete.
struct JsonOut {
  std::FILE* file = nullptr;
};

// A buffer for the JSON stream: it is written in large blocks.
char g_json_buffer[1 << 20];

// --json=-: flushes stdout; false (with a message) if any write failed.
bool FlushJsonStdout(JsonOut& out) {
  const bool failed = std::ferror(out.file) != 0;
  const bool flushed = std::fflush(out.file) == 0;
  out.file = nullptr;
  if (failed || !flushed) {
    std::fprintf(stderr, "--json=-: cannot write to stdout\n");
    return false;
  }
  return true;
}

// Writes `scenario` to `path` (given as `flag`) as a binary
// kvspec.v1.Scenario through files::WriteAtomically: serialized straight to
// a temporary file beside it, then renamed over it; never over anything but
// a regular file. 0, or 1 after a message naming the flag and the path.
int WriteScenarioFile(const std::string& flag, const std::string& path,
                      const Scenario& scenario) {
  const v1::Scenario proto = ToProto(scenario);
  if (proto.ByteSizeLong() > INT_MAX) {
    std::fprintf(stderr,
                 "%s=%s: the scenario is %zu bytes, over the %d-byte limit "
                 "of one protobuf message\n",
                 flag.c_str(), path.c_str(), proto.ByteSizeLong(), INT_MAX);
    return 1;
  }
  const absl::Status written = files::WriteAtomically(
      flag, path, [&proto](int fd) -> std::string {
        try {
          google::protobuf::io::FileOutputStream stream(fd);
          const bool serialized = proto.SerializeToZeroCopyStream(&stream);
          const bool flushed = stream.Flush();
          if (serialized && flushed) return "";
          return stream.GetErrno() != 0 ? std::strerror(stream.GetErrno())
                                        : "cannot serialize the scenario";
        } catch (const std::bad_alloc&) {
          return "out of memory (std::bad_alloc)";  // the temporary goes
        }
      });
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Runs.

// When nothing was evicted because the budget holds every admitted
// position, says so: a budget above what the scenario admits is a common
// slip (a budget meant for a longer prompt), and "evict []" on every line
// does not say why. Not with a ratio, which sets the budget at prefill.
void NoteBudget(const PolicyConfig& config, size_t admitted, size_t evicted) {
  if (evicted != 0 || !MakePolicy(config).ok()) return;
  bool has_budget = false, has_ratio = false;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name != config.name) continue;
    for (const ParameterInfo& p : info.parameters) {
      has_budget = has_budget || p.name == "budget";
      has_ratio = has_ratio || p.name == "ratio_ppm";
    }
  }
  if (!has_budget || (has_ratio && EffectiveParameter(config, "ratio_ppm") > 0)) return;
  const int64_t budget = EffectiveParameter(config, "budget");
  if (budget >= 0 && static_cast<uint64_t>(budget) >= admitted) {
    Text("note: budget %d holds all %d positions admitted, so nothing was "
         "evicted\n", budget, admitted);
  }
}

// The budgets a ratio gave (spec/prefill.md#budgets-from-a-ratio): one
// line per prefill step whose budget came from ratio_ppm, with the kept
// count after admission it was computed from; the sets of a step share the
// line when they agree. At most kShown lines, then how many more.
void PrintRatioBudgets(const PolicyConfig& config, const Scenario& scenario,
                       const RunResult& result) {
  constexpr size_t kShown = 8;
  size_t lines = 0;
  for (size_t i = 0; i < result.steps.size(); ++i) {
    std::vector<std::string> parts;
    bool alike = true;
    for (const StepRecord* set : SetRecords(result.steps[i])) {
      const std::optional<size_t> budget =
          RatioBudget(config, IsPrefillStep(scenario, i), *set);
      if (!budget.has_value()) continue;
      parts.push_back(absl::StrFormat("%d of %d positions", *budget,
                                      set->kept_count + set->victims.size()));
      alike = alike && parts.back() == parts.front();
    }
    if (parts.empty()) continue;
    if (++lines > kShown) continue;
    std::string text = alike ? parts.front() : "";
    for (size_t s = 0; !alike && s < parts.size(); ++s) {
      text += absl::StrFormat("%sset %d: %s", s == 0 ? "" : "; ", s, parts[s]);
    }
    Text("budget at step %d (prefill, from ratio_ppm=%d: max(1, floor(n x "
         "(1 - ratio)))): %s%s\n",
         i, EffectiveParameter(config, "ratio_ppm"), text,
         alike && parts.size() > 1
             ? absl::StrFormat(" (each of the %d sets)", parts.size())
             : "");
  }
  if (lines > kShown) {
    Text("budget: %d more prefill steps with a ratio budget (--json gives "
         "each set's ratio_budget)\n", lines - kShown);
  }
}

// A scenario with several heads (spec/heads.md): each step's victims, kept
// set by kept set.
RunResult RunSetsAndPrint(const PolicyConfig& config, const Scenario& scenario,
                          bool quiet, bool record_cut) {
  RunOptions options;
  options.record_cut = record_cut;
  RunResult result = RunScenario(config, scenario, options);
  for (size_t i = 0; i < result.steps.size() && !quiet; ++i) {
    const StepRecord& record = result.steps[i];
    std::vector<std::string> sets;
    for (const StepRecord* set : SetRecords(record)) {
      sets.push_back(Positions(set->victims));
    }
    Text("step %3d  evict %s\n", i, absl::StrJoin(sets, " | "));
    PrintCuts(record);
  }
  const size_t sets = result.steps.empty() || result.steps[0].sets.empty()
                          ? 1
                          : result.steps[0].sets.size();
  Text("%d steps, %d kept set(s) (victims per set, set 0 first)\n",
       result.steps.size(), sets);
  // Per kept set: how many it keeps at the end and evicted in all.
  size_t evicted_in_all = 0;
  if (!result.steps.empty()) {
    const std::vector<const StepRecord*> last = SetRecords(result.steps.back());
    for (size_t s = 0; s < last.size(); ++s) {
      size_t evicted = 0;
      for (const StepRecord& step : result.steps) {
        const std::vector<const StepRecord*> records = SetRecords(step);
        if (s < records.size()) evicted += records[s]->victims.size();
      }
      evicted_in_all += evicted;
      Text("  set %d: kept %d, evicted %d\n", s, last[s]->kept_count, evicted);
    }
  }
  PrintRatioBudgets(config, scenario, result);
  if (result.refusal.ok() && !scenario.trace.has_value()) {
    size_t admitted = 0;
    for (const ScenarioStep& step : scenario.steps) admitted += step.admit;
    NoteBudget(config, admitted, evicted_in_all);
  }
  if (!result.refusal.ok()) PrintRefusal(result);
  Text("\n");
  return result;
}

// Runs one configuration and prints its log; writes its JSON when `json` is
// set. Returns false when the configuration or a step was refused, or the
// JSON could not be written.
bool RunTraceAndPrint(const PolicyConfig& config, const std::string& preset,
                      const TraceConfig& trace, const JsonHeader* json_base,
                      JsonOut* json, const Scenario* scenario = nullptr,
                      bool quiet = true);

bool RunAndPrint(const PolicyConfig& config, const std::string& preset,
                 const Scenario& scenario, const JsonHeader* json_base,
                 JsonOut* json, bool quiet) {
  // A single-head trace streams, its memory that of the policy
  // (spec/harness.md#resources); several heads' runs are kept whole.
  if (scenario.trace.has_value() && scenario.steps.empty() &&
      scenario.query_heads.value_or(1) == 1 && scenario.kv_heads.value_or(1) == 1) {
    return RunTraceAndPrint(config, preset, *scenario.trace, json_base, json,
                            &scenario, quiet);
  }
  Text("== %s ==\n", ConfigText(config));
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  bool has_prefill = false;
  for (const ScenarioStep& step : scenario.steps) {
    has_prefill = has_prefill || !step.queries.empty();
  }
  std::vector<Warning> warnings;
  if (policy.ok()) {
    warnings = PrefillWarnings(
        config, absl::StrFormat("scenario '%s'", scenario.id), has_prefill);
    PrintWarnings(warnings);
  }
  JsonHeader header;
  if (json != nullptr) {
    header = *json_base;
    header.config = config;
    header.preset = preset;
    header.accepted = policy.ok();
    header.warnings = warnings;
    DescribeSets(header);
  }
  // The cut costs a full ranking at each eviction: only when it is shown.
  const bool record_cut = (!quiet && g_text != nullptr) || json != nullptr;
  const auto write_json = [&](const RunResult& result,
                              const std::vector<Position>* policy_kept) {
    if (json == nullptr) return true;
    JsonWriter writer(json->file);
    const absl::Status status =
        WriteScenarioJson(writer, header, scenario, result, policy_kept);
    if (!status.ok()) {
      std::fprintf(stderr, "simulate: internal error writing --json: %s\n",
                   std::string(status.message()).c_str());
      return false;
    }
    return true;
  };

  if (scenario.query_heads.value_or(1) != 1 ||
      scenario.kv_heads.value_or(1) != 1) {
    const RunResult result =
        RunSetsAndPrint(config, scenario, quiet, record_cut);
    const bool written = write_json(result, nullptr);
    return result.refusal.ok() && written;
  }
  if (!policy.ok()) {
    const std::string line = absl::StrFormat(
        "refused (%s): %s\n\n", CategoryName(CategoryOf(policy.status())),
        policy.status().message());
    if (g_text != nullptr) {
      Text("%s", line);
    } else {
      absl::FPrintF(stderr, "%s", line);
    }
    RunResult result;
    result.refusal = policy.status();
    write_json(result, nullptr);
    return false;
  }
  RunOptions options;
  options.record_cut = record_cut;
  const RunResult result = RunScenario(**policy, scenario, options);
  AdmittedWalk walk(scenario);
  size_t evicted = 0;
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const Admitted admitted = walk.Next(i);
    const StepRecord& record = result.steps[i];
    evicted += record.victims.size();
    if (!quiet) {
      const std::string admitted_text =
          admitted.count == 1
              ? absl::StrFormat("%d", admitted.first)
              : absl::StrFormat("%d..%d", admitted.first,
                                admitted.first + admitted.count - 1);
      const char* kind = AttentionKind(scenario, i);
      Text("step %3d  admit %-9s  %-12s  query@%-4d  evict %-14s  kept %d\n",
           i, admitted_text,
           std::string(kind) == "rows" ? "attention" : kind,
           record.query_cache_position, Positions(record.victims),
           record.kept_count);
      PrintCuts(record);
    }
  }
  PrintRatioBudgets(config, scenario, result);
  Text("kept at the end: %s\n", Positions((*policy)->kept()));
  Text("%d steps, %d positions admitted, %d evicted, %d bytes of policy "
       "state\n",
       result.steps.size(), walk.next(), evicted, (*policy)->MemoryBytes());
  if (result.refusal.ok()) NoteBudget(config, walk.next(), evicted);
  if (!result.refusal.ok()) PrintRefusal(result);
  Text("\n");
  const std::vector<Position> kept((*policy)->kept().begin(),
                                   (*policy)->kept().end());
  const bool written = write_json(result, &kept);
  return result.refusal.ok() && written;
}

// Streams a generated trace through one configuration, one step at a
// time, so that memory stays that of the policy however long the trace
// (spec/harness.md#resources): the canonical trace of --trace_steps, with
// a summary line; or, with `scenario`, a scenario file's single-head trace,
// printed as RunAndPrint prints steps (unless `quiet`). With `json`, the
// run's JSON is streamed as it goes.
bool RunTraceAndPrint(const PolicyConfig& config, const std::string& preset,
                      const TraceConfig& trace, const JsonHeader* json_base,
                      JsonOut* json, const Scenario* scenario, bool quiet) {
  if (scenario != nullptr) Text("== %s ==\n", ConfigText(config));
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  std::optional<JsonWriter> writer;
  JsonHeader header;
  if (json != nullptr) {
    header = *json_base;
    header.config = config;
    header.preset = preset;
    header.accepted = policy.ok();
    DescribeSets(header);
  }
  if (policy.ok()) {
    header.warnings = PrefillWarnings(
        config,
        scenario == nullptr ? std::string("the canonical trace")
                            : absl::StrFormat("scenario '%s'", scenario->id),
        /*has_prefill_step=*/false);
    PrintWarnings(header.warnings);
  }
  if (json != nullptr) {
    writer.emplace(json->file);
    WriteHeader(*writer, header);
  }
  if (!policy.ok()) {
    const std::string line =
        scenario == nullptr
            ? absl::StrFormat("%-40s refused (%s): %s\n", ConfigText(config),
                              CategoryName(CategoryOf(policy.status())),
                              policy.status().message())
            : absl::StrFormat("refused (%s): %s\n\n",
                              CategoryName(CategoryOf(policy.status())),
                              policy.status().message());
    if (g_text != nullptr) {
      Text("%s", line);
    } else {
      absl::FPrintF(stderr, "%s", line);
    }
    if (writer.has_value()) {
      RunResult result;
      result.refusal = policy.status();
      WriteFooter(*writer, header.kept_mode, {}, result);
    }
    return false;
  }
  // A scenario's steps are printed one line each, with their cut.
  const bool step_lines = scenario != nullptr && !quiet && g_text != nullptr;
  uint64_t evicted = 0;
  size_t peak_bytes = 0;
  size_t kept_before = 0;
  uint32_t done = 0;
  const absl::Status status = RunTrace(
      **policy, trace,
      [&](uint32_t step, absl::Span<const Position> victims,
          const EvictionDetail& detail) {
        evicted += victims.size();
        peak_bytes = std::max(peak_bytes, (*policy)->MemoryBytes());
        done = step + 1;
        if (writer.has_value() || step_lines) {
          StepRecord record;
          record.victims.assign(victims.begin(), victims.end());
          if (!victims.empty() && !detail.ranked.empty()) {
            record.cut = CutOf(detail);
          }
          record.kept_count = static_cast<uint32_t>((*policy)->kept().size());
          record.query_cache_position = static_cast<uint32_t>(kept_before);
          record.spans = (*policy)->step_spans();
          record.held = (*policy)->step_held();
          if (step_lines) {
            Text("step %3d  admit %-9d  %-12s  query@%-4d  evict %-14s  kept %d\n",
                 step, step, "attention", record.query_cache_position,
                 Positions(record.victims), record.kept_count);
            PrintCuts(record);
          }
          if (writer.has_value()) {
            const bool write_kept =
                header.kept_mode == KeptMode::kEvery ||
                (header.kept_mode == KeptMode::kEvicting && !victims.empty());
            std::vector<std::vector<Position>> kept;
            if (write_kept) {
              kept.emplace_back((*policy)->kept().begin(),
                                (*policy)->kept().end());
            }
            WriteStep(*writer, step, {step, 1}, /*prefill=*/false, "rows",
                      record, write_kept ? &kept : nullptr, /*config=*/nullptr);
          }
        }
        kept_before = (*policy)->kept().size();
      },
      /*want_detail=*/writer.has_value() || step_lines);
  RunResult result;
  if (!status.ok()) {
    result.refusal = status;
    // -1: the trace itself was refused, before any step.
    result.refused_step = CategoryOf(status) == ErrorCategory::kInvalidTrace
                              ? int64_t{-1}
                              : static_cast<int64_t>(done);
  }
  if (writer.has_value()) {
    std::vector<std::vector<Position>> kept_at_end;
    kept_at_end.emplace_back((*policy)->kept().begin(),
                             (*policy)->kept().end());
    WriteFooter(*writer, header.kept_mode, kept_at_end, result);
  }
  if (scenario != nullptr) {
    Text("kept at the end: %s\n", Positions((*policy)->kept()));
    Text("%d steps, %d positions admitted, %d evicted, %d bytes of policy "
         "state\n",
         done, done, evicted, (*policy)->MemoryBytes());
    if (!result.refusal.ok()) PrintRefusal(result);
    Text("\n");
    return result.refusal.ok();
  }
  if (!status.ok()) {
    const std::string line =
        absl::StrFormat("%-40s refused: %s\n", ConfigText(config),
                        status.message());
    if (g_text != nullptr) {
      Text("%s", line);
    } else {
      absl::FPrintF(stderr, "%s", line);
    }
    return false;
  }
  Text("%-40s %d steps, %d evicted, %d kept, at most %d bytes of policy "
       "state after a step\n",
       ConfigText(config), trace.steps, evicted, (*policy)->kept().size(),
       peak_bytes);
  return true;
}

int Main() {
  const std::string json_path = absl::GetFlag(FLAGS_json);
  const std::optional<KeptMode> kept_mode =
      ParseKeptMode(absl::GetFlag(FLAGS_json_kept));
  if (!kept_mode.has_value()) {
    std::fprintf(stderr,
                 "--json_kept: '%s' is not final, evicting, every or none\n",
                 absl::GetFlag(FLAGS_json_kept).c_str());
    return 2;
  }
  if (!json_path.empty() &&
      (absl::GetFlag(FLAGS_list) ||
       !absl::GetFlag(FLAGS_write_sample).empty() ||
       !absl::GetFlag(FLAGS_write_trace).empty())) {
    std::fprintf(stderr,
                 "--json writes a run; --list, --write_sample and "
                 "--write_trace run nothing\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_list)) {
    ListPolicies();
    return 0;
  }
  if (const std::string path = absl::GetFlag(FLAGS_write_sample);
      !path.empty()) {
    return WriteScenarioFile("--write_sample", path, SampleScenario());
  }
  const uint32_t trace_steps = absl::GetFlag(FLAGS_trace_steps);
  if (const std::string path = absl::GetFlag(FLAGS_write_trace); !path.empty()) {
    TraceConfig config;
    config.steps = trace_steps;
    absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
    if (!trace.ok()) {
      std::fprintf(stderr, "--write_trace needs --trace_steps >= 1: %s\n",
                   std::string(trace.status().message()).c_str());
      return 2;
    }
    Scenario expanded;
    expanded.id = absl::StrFormat("canonical-%d-expanded", trace_steps);
    while (trace->Advance()) expanded.steps.push_back({1, trace->Row()});
    return WriteScenarioFile("--write_trace", path, expanded);
  }
  // The scenario is read before anything is written: a bad scenario leaves
  // no JSON file behind.
  const std::string scenario_path = absl::GetFlag(FLAGS_scenario);
  absl::StatusOr<Scenario> scenario = LoadScenario(scenario_path);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", std::string(scenario.status().message()).c_str());
    return 2;
  }
  const std::string name = absl::GetFlag(FLAGS_policy);
  if (!json_path.empty() && name.empty()) {
    std::fprintf(stderr,
                 "--json needs --policy: it writes one run, and the run of "
                 "every policy has no JSON form (run simulate once per "
                 "policy)\n");
    return 2;
  }
  std::string preset_name;
  absl::StatusOr<std::vector<Parameter>> params =
      ParseParams(absl::GetFlag(FLAGS_params), preset_name);
  if (!params.ok()) {
    std::fprintf(stderr, "%s\n", std::string(params.status().message()).c_str());
    return 2;
  }

  std::vector<PolicyConfig> configs;
  if (name.empty()) {
    if (!params->empty()) {
      std::fprintf(stderr, "--params needs --policy\n");
      return 2;
    }
    configs = SampleConfigs();
  } else {
    configs.push_back({name, *params});
    if (!preset_name.empty()) {
      absl::StatusOr<PolicyConfig> expanded =
          ExpandPreset(configs.back(), preset_name);
      if (!expanded.ok()) {
        std::fprintf(stderr, "--params: %s\n",
                     std::string(expanded.status().message()).c_str());
        return 2;
      }
      configs.back() = *std::move(expanded);
    }
  }

  JsonHeader json_base;
  if (!json_path.empty()) {
    json_base.kept_mode = *kept_mode;
    if (trace_steps > 0) {
      json_base.scenario_source = "canonical_trace";
      json_base.scenario_id = absl::StrFormat("canonical-%d", trace_steps);
      json_base.step_count = trace_steps;
    } else {
      json_base.scenario_source = scenario_path.empty() ? "sample" : "file";
      json_base.scenario_path = scenario_path;
      json_base.scenario_id = scenario->id;
      json_base.query_heads = scenario->query_heads.value_or(1);
      json_base.kv_heads = scenario->kv_heads.value_or(1);
      json_base.step_count = StepCount(*scenario);
      for (const ScenarioStep& step : scenario->steps) {
        json_base.prefill_steps += step.queries.empty() ? 0 : 1;
      }
    }
  }

  // Every run, its text log on stdout and its JSON into `json` (nullptr:
  // none). True when every configuration and step was accepted.
  const auto run_all = [&](JsonOut* json) -> bool {
    if (trace_steps > 0) {
      Text("kvspec reference, spec %s; canonical trace, %d steps\n",
           kSpecVersion, trace_steps);
      bool all_ok = true;
      for (PolicyConfig& config : configs) {
        config.seed = absl::GetFlag(FLAGS_seed);
        if (name.empty()) {
          // The sample budgets are too small for a trace: use the
          // defaults. full keeps every position, so a long trace would
          // cost O(steps^2).
          if (config.name == "full") {
            Text("%-40s skipped: keeps every position (ask with "
                 "--policy=full)\n", "full");
            continue;
          }
          config.parameters.clear();
        }
        TraceConfig trace;
        trace.steps = trace_steps;
        all_ok &= RunTraceAndPrint(config, preset_name, trace, &json_base, json);
      }
      return all_ok;
    }
    const std::string steps_text =
        scenario->trace.has_value() && scenario->steps.empty()
            ? absl::StrFormat("a trace of %d steps", StepCount(*scenario))
            : absl::StrFormat("%d steps", scenario->steps.size());
    Text("kvspec reference, spec %s; scenario '%s': %s\n\n", kSpecVersion,
         scenario->id, steps_text);
    bool all_ok = true;
    for (PolicyConfig& config : configs) {
      config.seed = absl::GetFlag(FLAGS_seed);
      all_ok &= RunAndPrint(config, preset_name, *scenario, &json_base, json,
                            absl::GetFlag(FLAGS_quiet));
    }
    return all_ok;
  };

  if (json_path.empty()) return run_all(nullptr) ? 0 : 1;
  JsonOut json;
  if (json_path == "-") {
    json.file = stdout;
    g_text = nullptr;
    std::setvbuf(json.file, g_json_buffer, _IOFBF, sizeof(g_json_buffer));
    bool all_ok = run_all(&json);
    all_ok &= FlushJsonStdout(json);
    return all_ok ? 0 : 1;
  }
  // A file: the run streams its JSON into a temporary file beside it, which
  // files::WriteAtomically renames over --json only once the run is
  // complete and written; a failure leaves --json as it was (no 0-byte or
  // cut file). An existing --json that is not a regular file, or is the
  // --scenario file, is refused before anything runs. Nothing may be thrown
  // out of the writer (the temporary file would be left behind): out of
  // memory is caught there and reported after.
  bool ran = false;
  bool all_ok = false;
  bool out_of_memory = false;
  const absl::Status written = files::WriteAtomically(
      "--json", json_path,
      [&](int fd) -> std::string {
        ran = true;
        const int copy = dup(fd);
        std::FILE* file = copy < 0 ? nullptr : fdopen(copy, "w");
        if (file == nullptr) {
          const std::string why = std::strerror(errno);
          if (copy >= 0) close(copy);
          return why;
        }
        std::setvbuf(file, g_json_buffer, _IOFBF, sizeof(g_json_buffer));
        json.file = file;
        try {
          all_ok = run_all(&json);
        } catch (const std::bad_alloc&) {
          out_of_memory = true;
        }
        const bool failed = std::ferror(file) != 0;
        errno = 0;
        const bool closed = std::fclose(file) == 0;  // flushes the buffer
        json.file = nullptr;
        if (out_of_memory) return "out of memory (std::bad_alloc)";
        if (!closed) return std::strerror(errno);
        if (failed) return "a write failed";
        return "";
      },
      scenario_path.empty() ? std::vector<std::string>{}
                            : std::vector<std::string>{scenario_path});
  if (out_of_memory) throw std::bad_alloc();  // main's message
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", std::string(written.message()).c_str());
    return ran ? 1 : 2;
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs kvspec's reference policies over a scenario and prints what each "
      "step admits, evicts and keeps.\n"
      "  simulate                      every policy on the sample scenario\n"
      "  simulate --policy=NAME [--params=k=v,...] [--scenario=FILE]\n"
      "  simulate --policy=NAME ... --json=FILE|-   the run as JSON "
      "(tools/simulate/simulate-json.md)\n"
      "  simulate --list               policies, parameters, defaults");
  absl::ParseCommandLine(argc, argv);
  // A scenario the spec accepts can still need more memory than the machine
  // has: one step admitting 2^32 - 1 positions holds them all before any
  // eviction (cc/policy.cc, Policy::AdmitPositions). Say so, never abort.
  try {
    return kvspec::Main();
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "simulate: out of memory: the scenario needs more memory "
                 "than this machine gives (a policy holds every position a "
                 "step admits before it evicts; see the scenario's largest "
                 "admit)\n");
    return 1;
  }
}
