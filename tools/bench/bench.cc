// bench: the benchmark of spec/measures.md. Measures every policy at budgets
// 256, 512 and 1,024 on the canonical trace (retained attention mass, peak
// memory, nanoseconds per decode step and its ratio to a baseline loop), the
// sweeps the cards discuss, and streaming runs of millions of steps; prints
// markdown tables, writes CSV and JSON, rewrites the cards' generated blocks
// and the plots in spec/figures/.
//
//   bazel run -c opt //tools:bench                         # everything
//   bazel run -c opt //tools:bench -- --sections=figures   # deterministic part
//   bazel run -c opt //tools:bench -- --check                     # stale blocks/plots?
//
// Progress goes to stderr, results to stdout. Google Benchmark's flags
// (--benchmark_min_time=..., --benchmark_filter=...) are accepted too.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmark/benchmark.h"
#include "cc/registry.h"
#include "tools/bench/engine_memory.h"
#include "tools/bench/figures.h"
#include "tools/bench/heads.h"
#include "tools/bench/prefill.h"
#include "tools/bench/scale.h"
#include "tools/bench/speed.h"
#include "tools/bench/tensors.h"
#include "tools/bench/blocks.h"
#include "tools/bench/triggers.h"
#include "tools/vectors/markdown_block.h"

ABSL_FLAG(std::vector<std::string>, sections,
          std::vector<std::string>({"figures", "speed", "scale"}),
          "Which parts to run: figures (retained mass, memory; rewrites the "
          "cards' blocks and spec/figures/), speed (ns per step against the "
          "baseline, Google Benchmark), scale (streaming runs), heads (every "
          "policy and granularity on the multi-head canonical trace; not run "
          "unless asked), prefill, engines (the memory of engines' retention "
          "rules at equal spans, spec/spans.md#presets; not run unless "
          "asked), triggers (bulk eviction against every step at equal peak "
          "memory, spec/triggers.md; not run unless asked), blocks (whole "
          "blocks against one position at a time at equal peak memory, "
          "spec/blocks.md; not run unless asked), tensors (the policies "
          "scored from keys and values, ns per step against the touch loop; "
          "not run unless asked).");
ABSL_FLAG(bool, check, false,
          "Compute the figures and compare each card's generated block and "
          "each plot with them; exit 1 if any differs. Writes nothing.");
ABSL_FLAG(std::string, root, "",
          "Checkout whose cards and plots are read or rewritten. Default: "
          "$BUILD_WORKSPACE_DIRECTORY under `bazel run`, else the current "
          "directory.");
ABSL_FLAG(std::string, out_dir, "",
          "Where bench.md, bench.csv and bench.json go. Default: "
          "<root>/bench-results.");
ABSL_FLAG(int, repetitions, 5,
          "Google Benchmark repetitions per timing; the median is kept.");
ABSL_FLAG(uint32_t, stream_budget, 1024, "Budget of the streaming runs.");
ABSL_FLAG(std::vector<std::string>, stream_steps,
          std::vector<std::string>({"10000", "1000000", "4000000"}),
          "Lengths of the streaming runs, in steps; the first is the short "
          "run memory is compared against.");
ABSL_FLAG(std::string, stream_child_policy, "",
          "Internal: run one streaming run of this policy and exit.");
ABSL_FLAG(uint32_t, stream_child_budget, 1024, "Internal.");
ABSL_FLAG(uint32_t, stream_child_steps, 0, "Internal.");

namespace kvspec {
namespace bench {
namespace {

constexpr char kBlock[] = "what_it_buys";
const char* const kPlots[][2] = {{"spec/figures/retained_mass.svg", "mass"},
                                 {"spec/figures/memory.svg", "memory"}};

std::string Root() {
  std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
      root = workspace;
    }
  }
  return root.empty() ? "." : root;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  return static_cast<bool>(out << text);
}

// Every file the figures own, with the content it should have now.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Owned(
    const Figures& figures, const std::string& root) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    // A trace has no keys and no query rows: a policy reading keys, or
    // deciding at prefill steps only without a budget (simlayerkv), is not run.
    if (ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget"))) continue;
    const std::string path = root + "/" + info.card;
    absl::StatusOr<std::string> card = ReadFile(path);
    if (!card.ok()) return card.status();
    absl::StatusOr<std::string> updated = vectors::ReplaceBlock(
        *card, kBlock, CardBlock(figures, info.name), path);
    if (!updated.ok()) return updated.status();
    files.emplace_back(path, *updated);
  }
  files.emplace_back(root + "/" + kPlots[0][0], MassPlotSvg(figures));
  files.emplace_back(root + "/" + kPlots[1][0], MemoryPlotSvg(figures));
  return files;
}

// Rewrites (or, with `check`, compares) the owned files. Returns the number
// of stale files, or -1 on an error.
int SyncOwned(const Figures& figures, const std::string& root, bool check) {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> files =
      Owned(figures, root);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", std::string(files.status().message()).c_str());
    return -1;
  }
  int stale = 0;
  for (const auto& [path, content] : *files) {
    absl::StatusOr<std::string> now = ReadFile(path);
    if (now.ok() && *now == content) {
      std::fprintf(stderr, "%s: up to date\n", path.c_str());
      continue;
    }
    if (check) {
      std::printf("%s: stale; run `bazel run -c opt //tools:bench -- "
                  "--sections=figures`\n",
                  path.c_str());
      ++stale;
      continue;
    }
    if (!WriteFile(path, content)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return -1;
    }
    std::fprintf(stderr, "%s: rewritten\n", path.c_str());
  }
  return stale;
}

std::string FiguresMarkdown(const Figures& figures,
                            const std::vector<Speed>& speeds) {
  std::string out = absl::StrFormat(
      "## Policies on the canonical trace (%s steps, measured from step %s)\n\n",
      WithCommas(figures.config.steps), WithCommas(figures.config.from));
  const bool timed = !speeds.empty();
  out += "| policy | budget | mean retained mass | worst step | heavy hitters "
         "kept | peak memory (bytes) |";
  out += timed ? " ns per step | baseline ns | ratio |\n" : "\n";
  out += timed ? "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
               : "| --- | --- | --- | --- | --- | --- |\n";
  for (const Run& run : figures.runs) {
    if (run.group != Group::kPolicies) continue;
    const Retention& r = run.retention;
    out += absl::StrFormat("| %s | %s | %s | %s (step %s) | %s | %s |",
                           run.label,
                           run.budget == 0 ? "none" : WithCommas(run.budget),
                           Fixed4(r.mean), Fixed4(r.worst),
                           WithCommas(r.worst_step), Fixed4(r.heavy_kept),
                           WithCommas(r.peak_memory_bytes));
    if (timed) {
      const Speed* speed = nullptr;
      for (const Speed& s : speeds) {
        if (s.label == run.label && s.budget == run.budget) speed = &s;
      }
      if (speed == nullptr) {
        out += " | | |";
      } else {
        out += absl::StrFormat(" %.0f | %.0f | %.2f |", speed->policy_ns,
                               speed->baseline_ns, speed->ratio());
      }
    }
    out += "\n";
  }
  for (const char* policy : {"snapkv", "streamingllm"}) {
    out += absl::StrCat("\n## ", policy, " sweep\n\n",
                        SweepSection(figures, policy));
  }
  return out;
}

const char* GroupName(Group group) {
  switch (group) {
    case Group::kPolicies: return "policies";
    case Group::kSnapKvSweep: return "snapkv_sweep";
    case Group::kSinksSweep: return "sinks_sweep";
  }
  return "";
}

std::string Params(const PolicyConfig& config) {
  std::vector<std::string> params;
  for (const Parameter& p : config.parameters) {
    params.push_back(absl::StrCat(p.name, "=", p.value));
  }
  return absl::StrJoin(params, " ");
}

const Speed* SpeedOf(const std::vector<Speed>& speeds, const Run& run) {
  if (run.group != Group::kPolicies) return nullptr;
  for (const Speed& s : speeds) {
    if (s.label == run.label && s.budget == run.budget) return &s;
  }
  return nullptr;
}

std::string Csv(const Figures& figures, const std::vector<Speed>& speeds) {
  std::string out =
      "group,policy,parameters,budget,mean_retained_mass,worst_retained_mass,"
      "worst_step,heavy_hitters_kept,peak_memory_bytes,ns_per_step,"
      "baseline_ns_per_step,ratio\n";
  for (const Run& run : figures.runs) {
    const Speed* s = SpeedOf(speeds, run);
    out += absl::StrFormat(
        "%s,%s,%s,%d,%.17g,%.17g,%d,%.17g,%d,%s,%s,%s\n",
        GroupName(run.group), run.policy.name, Params(run.policy), run.budget,
        run.retention.mean, run.retention.worst, run.retention.worst_step,
        run.retention.heavy_kept, run.retention.peak_memory_bytes,
        s ? absl::StrFormat("%.1f", s->policy_ns) : "",
        s ? absl::StrFormat("%.1f", s->baseline_ns) : "",
        s ? absl::StrFormat("%.3f", s->ratio()) : "");
  }
  return out;
}

std::string Json(const Figures& figures, const std::vector<Speed>& speeds,
                 const std::vector<StreamRun>& streams) {
  std::vector<std::string> runs;
  for (const Run& run : figures.runs) {
    const Speed* s = SpeedOf(speeds, run);
    std::string line = absl::StrFormat(
        "    {\"group\": \"%s\", \"policy\": \"%s\", \"parameters\": \"%s\", "
        "\"budget\": %d, \"mean_retained_mass\": %.17g, "
        "\"worst_retained_mass\": %.17g, \"worst_step\": %d, "
        "\"heavy_hitters_kept\": %.17g, \"peak_memory_bytes\": %d",
        GroupName(run.group), run.policy.name, Params(run.policy), run.budget,
        run.retention.mean, run.retention.worst, run.retention.worst_step,
        run.retention.heavy_kept, run.retention.peak_memory_bytes);
    if (s != nullptr) {
      line += absl::StrFormat(
          ", \"ns_per_step\": %.1f, \"baseline_ns_per_step\": %.1f, "
          "\"ratio\": %.3f",
          s->policy_ns, s->baseline_ns, s->ratio());
    }
    runs.push_back(line + "}");
  }
  std::vector<std::string> stream_lines;
  for (const StreamRun& s : streams) {
    stream_lines.push_back(absl::StrFormat(
        "    {\"policy\": \"%s\", \"budget\": %d, \"steps\": %d, "
        "\"seconds\": %.3f, \"ns_per_step\": %.1f, \"peak_memory_bytes\": %d, "
        "\"max_rss_kib\": %d}",
        s.policy, s.budget, s.steps, s.seconds, s.ns_per_step(),
        s.peak_memory_bytes, s.max_rss_kib));
  }
  return absl::StrFormat(
      "{\n  \"trace_steps\": %d,\n  \"measured_from\": %d,\n  \"runs\": [\n%s\n"
      "  ],\n  \"streams\": [\n%s\n  ]\n}\n",
      figures.config.steps, figures.config.from, absl::StrJoin(runs, ",\n"),
      absl::StrJoin(stream_lines, ",\n"));
}

std::string ScaleMarkdown(const std::vector<StreamRun>& streams) {
  std::string out =
      "## Streaming runs\n\n| policy | budget | steps | ns per step | peak "
      "policy memory (bytes) | peak RSS (KiB) | RSS vs shortest | ns/step vs "
      "shortest |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  const StreamRun* shortest = nullptr;
  for (const StreamRun& s : streams) {
    if (shortest == nullptr || shortest->policy != s.policy) shortest = &s;
    out += absl::StrFormat(
        "| %s | %s | %s | %.0f | %s | %s | %+.1f%% | %.2f |\n", s.policy,
        WithCommas(s.budget), WithCommas(s.steps), s.ns_per_step(),
        WithCommas(s.peak_memory_bytes), WithCommas(s.max_rss_kib),
        100.0 * (static_cast<double>(s.max_rss_kib) /
                     static_cast<double>(shortest->max_rss_kib) -
                 1.0),
        s.ns_per_step() / shortest->ns_per_step());
  }
  return out;
}

int Main(const std::string& program) {
  if (const std::string child = absl::GetFlag(FLAGS_stream_child_policy);
      !child.empty()) {
    return RunStreamChild(child, absl::GetFlag(FLAGS_stream_child_budget),
                          absl::GetFlag(FLAGS_stream_child_steps));
  }
  const std::vector<std::string> list = absl::GetFlag(FLAGS_sections);
  const std::set<std::string> sections(list.begin(), list.end());
  for (const std::string& s : sections) {
    if (s != "figures" && s != "speed" && s != "scale" && s != "heads" &&
        s != "prefill" && s != "engines" && s != "triggers" && s != "blocks" &&
        s != "tensors") {
      std::fprintf(stderr,
                   "--sections: unknown section '%s' (figures, speed, scale, "
                   "heads, prefill, engines, triggers, blocks, tensors)\n",
                   s.c_str());
      return 2;
    }
  }
  if (absl::GetFlag(FLAGS_repetitions) < 1) {
    std::fprintf(stderr, "--repetitions must be at least 1, got %d\n",
                 absl::GetFlag(FLAGS_repetitions));
    return 2;
  }
  if (absl::GetFlag(FLAGS_stream_budget) < 1) {
    std::fprintf(stderr, "--stream_budget must be at least 1, got 0\n");
    return 2;
  }
  const bool check = absl::GetFlag(FLAGS_check);
  const std::string root = Root();
#ifndef NDEBUG
  if (!check && (sections.count("speed") || sections.count("scale") ||
                 sections.count("heads"))) {
    std::fprintf(stderr,
                 "warning: built without -c opt: the timings will be of "
                 "unoptimized code and the streaming runs several times "
                 "slower. Use `bazel run -c opt //tools:bench`.\n");
  }
#endif

  std::vector<Speed> speeds;
  std::vector<StreamRun> streams;
  absl::StatusOr<Figures> figures;
  std::string report;
  if (sections.count("prefill")) {
    // spec/measures.md#prefill; the cards' "prefill" blocks hold the masses.
    const PrefillConfig config;
    absl::StatusOr<std::vector<PrefillRun>> runs =
        MeasurePrefill(config, check ? 1 : absl::GetFlag(FLAGS_repetitions));
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    int stale = 0;
    for (const char* policy : {"streamingllm", "h2o", "tova", "snapkv"}) {
      const std::string path = root + "/spec/policies/" + policy + ".md";
      absl::StatusOr<std::string> card = ReadFile(path);
      if (!card.ok()) {
        std::fprintf(stderr, "%s\n", std::string(card.status().message()).c_str());
        return 2;
      }
      absl::StatusOr<std::string> updated = vectors::ReplaceBlock(
          *card, "prefill", PrefillCardBlock(config, *runs, policy), path);
      if (!updated.ok()) {
        std::fprintf(stderr, "%s\n", std::string(updated.status().message()).c_str());
        return 2;
      }
      if (*updated == *card) continue;
      if (check) {
        std::printf("%s: stale; run `bazel run -c opt //tools:bench -- "
                    "--sections=prefill`\n", path.c_str());
        ++stale;
      } else if (!WriteFile(path, *updated)) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 2;
      }
    }
    if (check) return stale == 0 ? 0 : 1;
    report += PrefillMarkdown(config, *runs);
  }
  if (check || sections.count("figures") || sections.count("speed")) {
    figures = ComputeFigures(
        FigureConfig{}, [](size_t done, size_t total, const std::string& what) {
          if (total == 0) {
            std::fprintf(stderr, "figures: %s\n", what.c_str());
          } else {
            std::fprintf(stderr, "figures: %zu of %zu: %s\n", done + 1, total,
                         what.c_str());
          }
        });
    if (!figures.ok()) {
      std::fprintf(stderr, "%s\n", figures.status().ToString().c_str());
      return 2;
    }
    const int stale = SyncOwned(*figures, root, check);
    if (stale < 0) return 2;
    if (check) return stale == 0 ? 0 : 1;
  }
  if (sections.count("speed")) {
    absl::StatusOr<std::vector<Speed>> measured =
        MeasureSpeed(*figures, absl::GetFlag(FLAGS_repetitions));
    if (!measured.ok()) {
      std::fprintf(stderr, "%s\n", measured.status().ToString().c_str());
      return 2;
    }
    speeds = *std::move(measured);
  }
  if (figures.ok()) report += FiguresMarkdown(*figures, speeds);
  if (sections.count("scale")) {
    std::vector<uint32_t> lengths;
    for (const std::string& text : absl::GetFlag(FLAGS_stream_steps)) {
      uint32_t steps = 0;
      if (!absl::SimpleAtoi(text, &steps) || steps == 0) {
        std::fprintf(stderr, "--stream_steps: '%s' is not a positive step count\n",
                     text.c_str());
        return 2;
      }
      lengths.push_back(steps);
    }
    for (const PolicyInfo& info : RegisteredPolicies()) {
      if (info.name == "full") continue;  // unbounded: it grows by design
      // A trace has no keys and no query rows: a policy reading keys, or
      // deciding at prefill steps only, without a budget (simlayerkv), is not run.
      if (ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget"))) continue;
      for (uint32_t steps : lengths) {
        std::fprintf(stderr, "scale: %s, budget %u, %u steps\n",
                     info.name.c_str(), absl::GetFlag(FLAGS_stream_budget),
                     steps);
        absl::StatusOr<StreamRun> run = RunStream(
            program, info.name, absl::GetFlag(FLAGS_stream_budget), steps);
        if (!run.ok()) {
          std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
          return 2;
        }
        streams.push_back(*run);
      }
    }
    report += (report.empty() ? "" : "\n") + ScaleMarkdown(streams);
  }
  if (sections.count("heads")) {
    absl::StatusOr<std::vector<HeadsRun>> runs =
        MeasureHeads(HeadsConfig{}, absl::GetFlag(FLAGS_repetitions));
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    report += (report.empty() ? "" : "\n") + HeadsMarkdown(HeadsConfig{}, *runs);
  }
  if (sections.count("tensors")) {
    // spec/tensors.md: knorm, keydiff and lagkv per step, against touching.
    absl::StatusOr<std::vector<TensorRun>> runs =
        MeasureTensors(TensorsConfig{}, absl::GetFlag(FLAGS_repetitions));
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    report += (report.empty() ? "" : "\n") + TensorsMarkdown(TensorsConfig{}, *runs);
  }
  if (sections.count("triggers")) {
    // spec/triggers.md: bulk eviction against every step, at equal peak.
    absl::StatusOr<std::vector<TriggerRun>> runs = MeasureTriggers(TriggersConfig{});
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    report += (report.empty() ? "" : "\n") + TriggersMarkdown(TriggersConfig{}, *runs);
  }
  if (sections.count("blocks")) {
    // spec/blocks.md: whole blocks against one position, at equal peak.
    absl::StatusOr<std::vector<BlockRun>> runs = MeasureBlocks(BlocksConfig{});
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    report += (report.empty() ? "" : "\n") + BlocksMarkdown(BlocksConfig{}, *runs);
  }
  if (sections.count("engines")) {
    // Gemma 2/3 and Mistral's window, 32K prompt; the chunk sizes are
    // llama.cpp's n_ubatch (512), mlx-lm's prefill_step_size (2048), and
    // a larger one.
    const std::vector<uint32_t> chunks = {512, 2048, 8192};
    absl::StatusOr<std::vector<EngineMemoryRun>> runs =
        MeasureEngineMemory(4096, 32768, 128, chunks);
    if (!runs.ok()) {
      std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
      return 2;
    }
    report += (report.empty() ? "" : "\n") +
              EngineMemoryMarkdown(4096, 32768, 128, *runs);
  }
  std::printf("%s", report.c_str());

  std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) out_dir = root + "/bench-results";
  mkdir(out_dir.c_str(), 0755);
  bool written = WriteFile(out_dir + "/bench.md", report) &&
                 WriteFile(out_dir + "/bench.json",
                           figures.ok() ? Json(*figures, speeds, streams)
                                        : Json(Figures{}, speeds, streams));
  if (figures.ok()) written &= WriteFile(out_dir + "/bench.csv", Csv(*figures, speeds));
  if (!written) {
    std::fprintf(stderr, "cannot write the results under %s\n", out_dir.c_str());
    return 2;
  }
  std::fprintf(stderr, "results: %s/bench.{md,csv,json}\n", out_dir.c_str());
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace kvspec

int main(int argc, char** argv) {
  // Google Benchmark takes its own flags out of argv first. Unless told
  // otherwise, it interleaves the repetitions of a policy and its baseline
  // in random order, so that a slow spell of this (shared, noisy) machine
  // does not land on one of the two only.
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  if (std::none_of(args.begin(), args.end(), [](const char* a) {
        return std::string(a).rfind("--benchmark_enable_random_interleaving", 0) == 0;
      })) {
    args.insert(args.begin() + 1, interleave.data());
  }
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
  argc = count;
  argv = args.data();
  absl::SetProgramUsageMessage(
      "The kvspec benchmark (spec/measures.md): retained attention mass, "
      "memory, speed and scale of every policy on the canonical trace.");
  absl::ParseCommandLine(argc, argv);
  return kvspec::bench::Main("/proc/self/exe");
}
