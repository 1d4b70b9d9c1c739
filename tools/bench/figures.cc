#include "tools/bench/figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/registry.h"

namespace kvspec {
namespace bench {
namespace {

// The bounded policies, registry order; full is measured once, unbounded.
std::vector<std::string> BoundedPolicies() {
  std::vector<std::string> names;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    // A trace has no keys and no query rows: a policy reading keys, or
    // deciding at prefill steps only, without a budget (simlayerkv), is not run.
    if (ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget"))) continue;
    for (const ParameterInfo& p : info.parameters) {
      if (p.name == "budget") names.push_back(info.name);
    }
  }
  return names;
}

// A key that is equal for equal configurations: name, seed, and every
// parameter (defaults filled in) sorted by name.
std::string Key(const PolicyConfig& config) {
  std::vector<Parameter> params = config.parameters;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name != config.name) continue;
    for (const ParameterInfo& p : info.parameters) {
      const bool given =
          std::any_of(params.begin(), params.end(),
                      [&](const Parameter& q) { return q.name == p.name; });
      if (!given && p.default_value) params.push_back({p.name, *p.default_value});
    }
  }
  std::sort(params.begin(), params.end(),
            [](const Parameter& a, const Parameter& b) {
              return a.name < b.name;
            });
  std::string key = absl::StrCat(config.name, "/", config.seed);
  for (const Parameter& p : params) absl::StrAppend(&key, "/", p.name, "=", p.value);
  return key;
}

std::vector<Run> PlannedRuns(const FigureConfig& config) {
  std::vector<Run> runs;
  runs.push_back({Group::kPolicies, "full", {"full", {}, 0}, 0, {}});
  for (const std::string& name : BoundedPolicies()) {
    for (uint32_t budget : config.budgets) {
      PolicyConfig policy{name, {{"budget", budget}}, 0};
      if (name == "random") policy.seed = config.random_seed;
      runs.push_back({Group::kPolicies, name, policy, budget, {}});
    }
  }
  for (int64_t obs : config.snapkv_obs_windows) {
    for (int64_t kernel : config.snapkv_pool_kernels) {
      for (uint32_t budget : config.budgets) {
        runs.push_back(
            {Group::kSnapKvSweep,
             absl::StrFormat("obs_window %d, pool_kernel %d", obs, kernel),
             {"snapkv",
              {{"budget", budget}, {"obs_window", obs}, {"pool_kernel", kernel}},
              0},
             budget,
             {}});
      }
    }
  }
  for (int64_t sinks : config.streamingllm_sinks) {
    for (uint32_t budget : config.budgets) {
      runs.push_back({Group::kSinksSweep, absl::StrFormat("sinks %d", sinks),
                      {"streamingllm", {{"budget", budget}, {"sinks", sinks}}, 0},
                      budget,
                      {}});
    }
  }
  return runs;
}

std::string Describe(const Run& run) {
  std::vector<std::string> params;
  for (const Parameter& p : run.policy.parameters) {
    params.push_back(absl::StrCat(p.name, "=", p.value));
  }
  return absl::StrCat(run.policy.name, " ", absl::StrJoin(params, ","));
}

std::string Signed4(double value) {
  // "+0.0123", "-0.0040"; "0" when the two figures are the same number.
  if (value == 0.0) return "0";
  return absl::StrFormat("%+.4f", value);
}

std::string Worst(const Retention& r) {
  return absl::StrFormat("%s (step %s)", Fixed4(r.worst),
                         WithCommas(r.worst_step));
}

std::string Alike(const Figures& figures, const Run& run) {
  const std::vector<std::string> alike = figures.EvictAlike(run);
  if (alike.empty()) return "";
  std::vector<std::string> quoted;
  for (const std::string& label : alike) quoted.push_back("`" + label + "`");
  return absl::StrJoin(quoted, ", ");
}

// "`tova`" when the same runs evict alike at every budget; otherwise each
// budget's list, "`tova` at 256; `h2o` at 1,024".
std::string AlikeAcrossBudgets(const Figures& figures,
                               const std::vector<std::string>& alike) {
  if (std::all_of(alike.begin(), alike.end(),
                  [&](const std::string& a) { return a == alike[0]; })) {
    return alike[0];
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < alike.size(); ++i) {
    if (alike[i].empty()) continue;
    parts.push_back(
        absl::StrCat(alike[i], " at ", WithCommas(figures.config.budgets[i])));
  }
  return absl::StrJoin(parts, "; ");
}

// Rank of `run`'s mean among the bounded policies at its budget: 1 for the
// most mass; equal means share a rank.
int Rank(const Figures& figures, const Run& run) {
  int rank = 1;
  for (const Run& other : figures.runs) {
    if (other.group == Group::kPolicies && other.budget == run.budget &&
        other.budget != 0 && other.retention.mean > run.retention.mean) {
      ++rank;
    }
  }
  return rank;
}

std::string Header(const Figures& figures) {
  const FigureConfig& c = figures.config;
  return absl::StrFormat(
      "Computed by `bazel run -c opt //tools:bench` (a test fails when this "
      "block is stale): the canonical trace, %s steps; retained mass is the "
      "mean, over steps %s to %s, of the share of each step's full-cache row "
      "on the positions the policy kept ([measures.md](../measures.md)); "
      "heavy hitters kept is the mean share of the epoch's heavy hitters "
      "(by multiplicity) among them; memory is the peak of the policy's own "
      "accounting.\n\n",
      WithCommas(c.steps), WithCommas(c.from), WithCommas(c.steps - 1));
}

std::string PolicyTable(const Figures& figures, const std::string& policy) {
  const size_t bounded = BoundedPolicies().size();
  std::string out;
  if (policy == "full") {
    const Run* run = figures.Find(Group::kPolicies, "full", 0);
    out += "| budget | mean retained mass | worst step | heavy hitters kept "
           "| peak memory (bytes) |\n";
    out += "| --- | --- | --- | --- | --- |\n";
    out += absl::StrFormat("| none | %s | %s | %s | %s |\n",
                           Fixed4(run->retention.mean), Worst(run->retention),
                           Fixed4(run->retention.heavy_kept),
                           WithCommas(run->retention.peak_memory_bytes));
    return out;
  }
  out += absl::StrFormat(
      "| budget | mean retained mass | worst step | heavy hitters kept | "
      "peak memory (bytes) | rank of %d | vs `window` | evicts alike |\n",
      bounded);
  out += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (uint32_t budget : figures.config.budgets) {
    const Run* run = figures.Find(Group::kPolicies, policy, budget);
    const Run* window = figures.Find(Group::kPolicies, "window", budget);
    out += absl::StrFormat(
        "| %s | %s | %s | %s | %s | %d | %s | %s |\n", WithCommas(budget),
        Fixed4(run->retention.mean), Worst(run->retention),
        Fixed4(run->retention.heavy_kept),
        WithCommas(run->retention.peak_memory_bytes), Rank(figures, *run),
        policy == "window"
            ? std::string("")
            : Signed4(run->retention.mean - window->retention.mean),
        Alike(figures, *run));
  }
  return out;
}

// A sweep: one row per label, one column per budget, each cell the mean
// and its difference from the policy's defaults (the policies-table row).
std::string SweepTable(const Figures& figures, Group group,
                       const std::string& policy, const std::string& title) {
  std::vector<std::string> labels;
  for (const Run& run : figures.runs) {
    if (run.group == group &&
        std::find(labels.begin(), labels.end(), run.label) == labels.end()) {
      labels.push_back(run.label);
    }
  }
  std::string out = absl::StrCat("| ", title);
  std::string rule = "| ---";
  for (uint32_t budget : figures.config.budgets) {
    absl::StrAppend(&out, " | budget ", WithCommas(budget));
    rule += " | ---";
  }
  out += " | evicts alike |\n" + rule + " | --- |\n";
  for (const std::string& label : labels) {
    absl::StrAppend(&out, "| ", label);
    std::vector<std::string> alike;  // per budget
    for (uint32_t budget : figures.config.budgets) {
      const Run* run = figures.Find(group, label, budget);
      const Run* base = figures.Find(Group::kPolicies, policy, budget);
      absl::StrAppend(&out, " | ", Fixed4(run->retention.mean), " (",
                      Signed4(run->retention.mean - base->retention.mean), ")");
      alike.push_back(Alike(figures, *run));
    }
    absl::StrAppend(&out, " | ", AlikeAcrossBudgets(figures, alike), " |\n");
  }
  return out;
}

// Two sentences computed from the snapkv sweep: what pooling does against no
// pooling at each (obs_window, budget), and how far obs_window moves the mean
// with pooling off.
std::string SnapKvVerdicts(const Figures& figures) {
  const FigureConfig& c = figures.config;
  int more = 0, less = 0, equal = 0;
  std::vector<std::string> spreads;
  for (int64_t obs : c.snapkv_obs_windows) {
    for (uint32_t budget : c.budgets) {
      const Run* off = figures.Find(
          Group::kSnapKvSweep,
          absl::StrFormat("obs_window %d, pool_kernel 1", obs), budget);
      for (int64_t kernel : c.snapkv_pool_kernels) {
        if (kernel == 1 || off == nullptr) continue;
        const Run* on = figures.Find(
            Group::kSnapKvSweep,
            absl::StrFormat("obs_window %d, pool_kernel %d", obs, kernel),
            budget);
        if (on->retention.mean > off->retention.mean) ++more;
        if (on->retention.mean < off->retention.mean) ++less;
        if (on->retention.mean == off->retention.mean) ++equal;
      }
    }
  }
  for (uint32_t budget : c.budgets) {
    double low = 2.0, high = -1.0;
    for (int64_t obs : c.snapkv_obs_windows) {
      const Run* run = figures.Find(
          Group::kSnapKvSweep,
          absl::StrFormat("obs_window %d, pool_kernel 1", obs), budget);
      low = std::min(low, run->retention.mean);
      high = std::max(high, run->retention.mean);
    }
    spreads.push_back(absl::StrFormat("%s at budget %s", Fixed4(high - low),
                                      WithCommas(budget)));
  }
  return absl::StrFormat(
      "Pooling against no pooling, at the same `obs_window` and budget: more "
      "mass at %d of %d points, less at %d, equal at %d. With pooling off, "
      "the spread of the mean over `obs_window` %s is %s.\n",
      more, more + less + equal, less, equal,
      absl::StrJoin(c.snapkv_obs_windows, ", "), absl::StrJoin(spreads, ", "));
}

}  // namespace

std::string WithCommas(uint64_t value) {
  std::string digits = std::to_string(value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<size_t>(i), ",");
  }
  return digits;
}

std::string Fixed4(double value) { return absl::StrFormat("%.4f", value); }

const Run* Figures::Find(Group group, const std::string& label,
                         uint32_t budget) const {
  for (const Run& run : runs) {
    if (run.group == group && run.label == label &&
        (run.budget == budget || run.budget == 0)) {
      return &run;
    }
  }
  return nullptr;
}

std::vector<std::string> Figures::EvictAlike(const Run& run) const {
  std::vector<std::string> alike;
  for (const Run& other : runs) {
    if (&other == &run || other.budget != run.budget) continue;
    if (other.group != Group::kPolicies && other.group != run.group) continue;
    if (Key(other.policy) == Key(run.policy)) continue;  // the same run
    if (other.retention.EvictsAlike(run.retention)) {
      alike.push_back(other.group == Group::kPolicies
                          ? other.label
                          : absl::StrCat(other.policy.name, " ", other.label));
    }
  }
  return alike;
}

absl::StatusOr<Figures> ComputeFigures(const FigureConfig& config,
                                       const Progress& progress) {
  TraceConfig trace;  // the canonical trace
  trace.steps = config.steps;
  if (progress) progress(0, 0, "row sums of the canonical trace");
  absl::StatusOr<std::vector<double>> row_sums = TraceRowSums(trace);
  if (!row_sums.ok()) return row_sums.status();

  Figures figures;
  figures.config = config;
  figures.runs = PlannedRuns(config);
  std::map<std::string, const Retention*> done;
  for (size_t i = 0; i < figures.runs.size(); ++i) {
    Run& run = figures.runs[i];
    const std::string key = Key(run.policy);
    if (auto it = done.find(key); it != done.end()) {
      run.retention = *it->second;
      continue;
    }
    if (progress) progress(i, figures.runs.size(), Describe(run));
    absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(run.policy);
    if (!policy.ok()) return policy.status();
    absl::StatusOr<Retention> retention =
        MeasureTrace(**policy, trace, *row_sums, config.from);
    if (!retention.ok()) {
      return absl::Status(retention.status().code(),
                          absl::StrCat(Describe(run), ": ",
                                       retention.status().message()));
    }
    run.retention = *std::move(retention);
    done[key] = &run.retention;
  }
  return figures;
}

std::string SweepSection(const Figures& figures, const std::string& policy) {
  if (policy == "snapkv") {
    return "The sweep: mean retained mass, and in brackets its difference "
           "from the defaults (`obs_window` 16, `pool_kernel` 5) at the same "
           "budget.\n\n" +
           SweepTable(figures, Group::kSnapKvSweep, "snapkv", "parameters") +
           "\n" + SnapKvVerdicts(figures);
  }
  if (policy == "streamingllm") {
    return "The sweep over `sinks` (the trace has 4): mean retained mass, "
           "and in brackets its difference from the default of 4 at the same "
           "budget.\n\n" +
           SweepTable(figures, Group::kSinksSweep, "streamingllm", "sinks");
  }
  return "";
}

std::string CardBlock(const Figures& figures, const std::string& policy) {
  std::string out = Header(figures) + PolicyTable(figures, policy);
  const std::string sweep = SweepSection(figures, policy);
  if (!sweep.empty()) out += "\n" + sweep;
  return out;
}

// ---------------------------------------------------------------- plots ---

namespace {

const char* const kColors[] = {"#4d4d4d", "#1f77b4", "#2ca02c", "#d62728",
                               "#9467bd", "#ff7f0e", "#8c564b"};

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

std::string SvgOpen(int width, int height, const std::string& title) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
      "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">%s"
      "</text>\n",
      width, height, width, height, width, height, width / 2, title);
}

}  // namespace

std::string MassPlotSvg(const Figures& figures) {
  const std::vector<uint32_t>& budgets = figures.config.budgets;
  const int width = 640, height = 400;
  const double left = 60, right = 470, top = 40, bottom = 350;
  // y from the lowest mean, rounded down to 0.1, to 1.
  double lowest = 1.0;
  for (const Run& run : figures.runs) {
    if (run.group == Group::kPolicies) {
      lowest = std::min(lowest, run.retention.mean);
    }
  }
  const double y_min = std::floor(lowest * 10.0) / 10.0;
  const auto x_of = [&](size_t i) {
    return budgets.size() < 2 ? (left + right) / 2
                              : left + (right - left) * static_cast<double>(i) /
                                           static_cast<double>(budgets.size() - 1);
  };
  const auto y_of = [&](double mass) {
    return bottom - (bottom - top) * (mass - y_min) / (1.0 - y_min);
  };
  std::string svg = SvgOpen(
      width, height,
      absl::StrFormat("Mean retained attention mass, canonical trace, steps "
                      "%s-%s",
                      WithCommas(figures.config.from),
                      WithCommas(figures.config.steps - 1)));
  // Axes, grid and ticks.
  for (int k = 0; k <= static_cast<int>(std::lround((1.0 - y_min) * 20)); ++k) {
    const double mass = y_min + 0.05 * k;
    const double y = y_of(mass);
    svg += absl::StrFormat(
        "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#dddddd\"/>\n"
        "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%.2f</text>\n",
        Num(left), Num(y), Num(right), Num(y), Num(left - 6), Num(y + 4), mass);
  }
  for (size_t i = 0; i < budgets.size(); ++i) {
    svg += absl::StrFormat(
        "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#dddddd\"/>\n"
        "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n",
        Num(x_of(i)), Num(top), Num(x_of(i)), Num(bottom), Num(x_of(i)),
        Num(bottom + 18), WithCommas(budgets[i]));
  }
  svg += absl::StrFormat(
      "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\">budget (positions "
      "kept)</text>\n"
      "<text x=\"16\" y=\"%s\" text-anchor=\"middle\" transform=\"rotate(-90 "
      "16 %s)\">mean retained mass</text>\n",
      Num((left + right) / 2), height - 12, Num((top + bottom) / 2),
      Num((top + bottom) / 2));
  // One line per policy, with its value at each budget in the legend.
  size_t colour = 0;
  double legend_y = top + 10;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    // A trace has no keys and no query rows: a policy reading keys, or
    // deciding at prefill steps only, without a budget (simlayerkv), is not run.
    if (ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget"))) continue;
    const char* c = kColors[colour++ % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string points;
    std::vector<std::string> values;
    for (size_t i = 0; i < budgets.size(); ++i) {
      const Run* run = figures.Find(Group::kPolicies, info.name, budgets[i]);
      if (run == nullptr) continue;
      absl::StrAppend(&points, i == 0 ? "" : " ", Num(x_of(i)), ",",
                      Num(y_of(run->retention.mean)));
      svg += absl::StrFormat(
          "<circle cx=\"%s\" cy=\"%s\" r=\"3\" fill=\"%s\"/>\n", Num(x_of(i)),
          Num(y_of(run->retention.mean)), c);
      values.push_back(Fixed4(run->retention.mean));
    }
    svg += absl::StrFormat(
        "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"2\"%s/>\n",
        points, c, info.name == "full" ? " stroke-dasharray=\"6 4\"" : "");
    svg += absl::StrFormat(
        "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" "
        "stroke-width=\"3\"/>\n<text x=\"%s\" y=\"%s\">%s</text>\n"
        "<text x=\"%s\" y=\"%s\" font-size=\"10\" fill=\"#555555\">%s</text>\n",
        Num(right + 15), Num(legend_y), Num(right + 35), Num(legend_y), c,
        Num(right + 40), Num(legend_y + 4), info.name, Num(right + 40),
        Num(legend_y + 17), absl::StrJoin(values, " / "));
    legend_y += 38;
  }
  svg += "</svg>\n";
  return svg;
}

std::string MemoryPlotSvg(const Figures& figures) {
  const std::vector<uint32_t>& budgets = figures.config.budgets;
  // The policies the canonical trace runs: not those reading keys.
  std::vector<PolicyInfo> policies;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (!(ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget")))) policies.push_back(info);
  }
  const int width = 640, height = 400;
  const double left = 70, right = 620, top = 60, bottom = 340;
  size_t most = 1;
  for (const Run& run : figures.runs) {
    if (run.group == Group::kPolicies) {
      most = std::max(most, run.retention.peak_memory_bytes);
    }
  }
  // Gridlines every 10 KiB (or 1 KiB for small figures); the top is the
  // first gridline at or above the largest bar.
  const double step = most > 20480 ? 10240.0 : 1024.0;
  const double y_max = std::ceil(static_cast<double>(most) / step) * step;
  const auto y_of = [&](double bytes) {
    return bottom - (bottom - top) * bytes / y_max;
  };
  std::string svg = SvgOpen(
      width, height,
      absl::StrFormat("Peak policy memory, canonical trace, %s steps",
                      WithCommas(figures.config.steps)));
  for (double bytes = 0; bytes <= y_max + 0.5; bytes += step) {
    svg += absl::StrFormat(
        "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#dddddd\"/>\n"
        "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s KiB</text>\n",
        Num(left), Num(y_of(bytes)), Num(right), Num(y_of(bytes)),
        Num(left - 6), Num(y_of(bytes) + 4),
        WithCommas(static_cast<uint64_t>(bytes / 1024)));
  }
  const double group_width = (right - left) / static_cast<double>(policies.size());
  const double bar = group_width * 0.8 / static_cast<double>(budgets.size());
  const char* const shades[] = {"#9ecae1", "#4292c6", "#08519c"};
  for (size_t g = 0; g < policies.size(); ++g) {
    const double x0 = left + group_width * static_cast<double>(g) + group_width * 0.1;
    for (size_t b = 0; b < budgets.size(); ++b) {
      const Run* run = figures.Find(Group::kPolicies, policies[g].name, budgets[b]);
      if (run == nullptr) continue;
      const double bytes = static_cast<double>(run->retention.peak_memory_bytes);
      // full has one run: one wide bar.
      const bool single = run->budget == 0;
      const double x = single ? x0 : x0 + bar * static_cast<double>(b);
      const double w = single ? bar * static_cast<double>(budgets.size()) : bar;
      svg += absl::StrFormat(
          "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n",
          Num(x), Num(y_of(bytes)), Num(w - 1), Num(bottom - y_of(bytes)),
          single ? "#bdbdbd" : shades[b % 3]);
      svg += absl::StrFormat(
          "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" font-size=\"9\">%s"
          "</text>\n",
          Num(x + w / 2), Num(y_of(bytes) - 3),
          absl::StrFormat("%.1fK", bytes / 1024.0));
      if (single) break;
    }
    svg += absl::StrFormat(
        "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n",
        Num(x0 + group_width * 0.4), Num(bottom + 18), policies[g].name);
  }
  // Legend: one swatch per budget, and full's note.
  double lx = left;
  for (size_t b = 0; b < budgets.size(); ++b) {
    svg += absl::StrFormat(
        "<rect x=\"%s\" y=\"34\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
        "<text x=\"%s\" y=\"45\">budget %s</text>\n",
        Num(lx), shades[b % 3], Num(lx + 16), WithCommas(budgets[b]));
    lx += 110;
  }
  svg += absl::StrFormat(
      "<rect x=\"%s\" y=\"34\" width=\"12\" height=\"12\" fill=\"#bdbdbd\"/>\n"
      "<text x=\"%s\" y=\"45\">full: no budget, after %s steps</text>\n",
      Num(lx), Num(lx + 16), WithCommas(figures.config.steps));
  svg += "</svg>\n";
  return svg;
}

}  // namespace bench
}  // namespace kvspec
