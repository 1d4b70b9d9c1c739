// card_figures: computes the figures the policy cards quote and keeps the
// cards' generated blocks in step with them, so no number in a card is typed
// by hand.
//
//   bazel run //tools:card_figures              # rewrite the cards' blocks
//   bazel run //tools:card_figures -- --check   # fail if a block is stale
//
// Each card in spec/policies/ holds one block between the lines
//   <!-- BEGIN GENERATED: card_figures -->
//   <!-- END GENERATED: card_figures -->
// whose content this tool owns.
//
// The figures: each policy is built at its defaults and run over a fill
// scenario of 2 x budget single-position decode steps (1,024 steps for
// `full`, which has no budget), each with a full-cache row giving every
// position the weight 1/n (one binary32 division). The memory reported is
// Policy::MemoryBytes() after the last step, computed from the policy's own
// containers.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "cc/text.h"
#include "tools/vectors/markdown_block.h"
#include "cc/registry.h"

ABSL_FLAG(bool, check, false,
          "Compare each card's generated block with freshly computed figures "
          "and exit 1 if any differs, instead of rewriting the cards.");
ABSL_FLAG(std::string, root, "",
          "Checkout whose spec/policies/ cards are read or rewritten. Default: "
          "$BUILD_WORKSPACE_DIRECTORY under `bazel run`, else the current "
          "directory.");

namespace kvspec {
namespace {

std::string WithCommas(uint64_t value) {
  std::string digits = std::to_string(value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<size_t>(i), ",");
  }
  return digits;
}

Scenario FillScenario(uint32_t steps) {
  Scenario scenario;
  scenario.id = "card-figures-fill";
  for (uint32_t step = 0; step < steps; ++step) {
    std::vector<float> row(step, step == 0 ? 0.0f : 1.0f / static_cast<float>(step));
    scenario.steps.push_back({1, std::move(row)});
  }
  return scenario;
}

// The block's content for one policy, or an error message.
absl::StatusOr<std::string> Block(const PolicyInfo& info) {
  int64_t budget = 0;
  for (const ParameterInfo& p : info.parameters) {
    if (p.name == "budget") budget = *p.default_value;
  }
  const uint32_t steps = budget > 0 ? static_cast<uint32_t>(2 * budget) : 1024;
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy({info.name, {}});
  if (!policy.ok()) return policy.status();
  const RunResult result = RunScenario(**policy, FillScenario(steps));
  if (!result.refusal.ok()) return result.refusal;
  const size_t kept = (*policy)->kept().size();
  const size_t bytes = (*policy)->MemoryBytes();
  std::string block;
  block += absl::StrFormat(
      "Measured by `bazel run //tools:card_figures` at the defaults, after "
      "%s single-position steps:\n\n",
      WithCommas(steps));
  block += "| figure | value |\n| --- | --- |\n";
  block += absl::StrFormat("| positions kept | %s |\n", WithCommas(kept));
  block += absl::StrFormat("| bytes of policy state | %s |\n", WithCommas(bytes));
  block += absl::StrFormat(
      "| bytes per kept position | %s |\n",
      kept == 0 ? std::string("n/a")
                : ShortestDecimal(static_cast<double>(bytes) /
                                  static_cast<double>(kept)));
  return block;
}

std::string CardPath(const std::string& root, const PolicyInfo& info) {
  return root.empty() ? info.card : root + "/" + info.card;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Main() {
  std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
      root = workspace;
    }
  }
  const bool check = absl::GetFlag(FLAGS_check);
  int stale = 0;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    const std::string path = CardPath(root, info);
    absl::StatusOr<std::string> block = Block(info);
    absl::StatusOr<std::string> card = ReadFile(path);
    if (!block.ok() || !card.ok()) {
      std::fprintf(stderr, "%s: %s\n", info.name.c_str(),
                   std::string((block.ok() ? card.status() : block.status())
                                   .message())
                       .c_str());
      return 2;
    }
    absl::StatusOr<std::string> updated =
        vectors::ReplaceBlock(*card, "card_figures", *block, path);
    if (!updated.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(updated.status().message()).c_str());
      return 2;
    }
    if (*updated == *card) {
      std::printf("%s: up to date\n", path.c_str());
      continue;
    }
    if (check) {
      std::printf("%s: stale; run `bazel run //tools:card_figures`\n",
                  path.c_str());
      ++stale;
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!(out << *updated)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 2;
    }
    std::printf("%s: rewritten\n", path.c_str());
  }
  return stale == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Computes the figures the policy cards quote and rewrites (or, with "
      "--check, verifies) each card's generated block.");
  absl::ParseCommandLine(argc, argv);
  return kvspec::Main();
}
