#include "tools/census/examples.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvspec {
namespace audit {
namespace {

const char* const kFamilies[] = {"full/",   "window/", "streamingllm/", "h2o/",
                                 "tova/",   "snapkv/", "random/",       "harness/",
                                 "prefill/", "search/", "triggers/", "blocks/",
                                 "openvino/", "knorm/", "tensors/", "keydiff/",
                                 "lagkv/", "simlayerkv/"};

// The backticked tokens of `text` that are case IDs.
std::vector<std::string> CaseIds(absl::string_view text) {
  std::vector<std::string> ids;
  size_t at = 0;
  while ((at = text.find('`', at)) != absl::string_view::npos) {
    const size_t end = text.find('`', at + 1);
    if (end == absl::string_view::npos) break;
    const absl::string_view token = text.substr(at + 1, end - at - 1);
    at = end + 1;
    if (token.find(' ') != absl::string_view::npos) continue;
    for (const char* family : kFamilies) {
      if (absl::StartsWith(token, family) && token.size() > strlen(family)) {
        ids.emplace_back(token);
        break;
      }
    }
  }
  return ids;
}

// Where an example starts in `line`: "Worked example" followed by the end
// of the line, ' ', ',', '(', ':' or 's', or "Example" followed by ':',
// ' (' or ','; npos if neither (a quoted "Worked example" is not one).
size_t ExampleStart(absl::string_view line) {
  size_t best = absl::string_view::npos;
  for (size_t at = line.find("Example"); at != absl::string_view::npos;
       at = line.find("Example", at + 1)) {
    const absl::string_view rest = line.substr(at + 7);
    if (absl::StartsWith(rest, ":") || absl::StartsWith(rest, " (") ||
        absl::StartsWith(rest, ",")) {
      best = std::min(best, at);
      break;
    }
  }
  for (size_t at = line.find("Worked example"); at != absl::string_view::npos;
       at = line.find("Worked example", at + 1)) {
    const absl::string_view rest = line.substr(at + 14);
    if (rest.empty() || absl::string_view(" ,(:s").find(rest[0]) != absl::string_view::npos) {
      return std::min(best, at);
    }
  }
  return best;
}

}  // namespace

std::vector<SpecExample> FindExamples(const std::string& file,
                                      const std::string& markdown) {
  // Paragraphs: runs of non-blank lines, with the line each starts on.
  struct Paragraph {
    int first_line;
    std::vector<std::string> lines;
  };
  std::vector<Paragraph> paragraphs;
  int number = 0;
  bool open = false;
  bool in_fence = false;  // inside a ``` block: code, not prose
  for (absl::string_view line : absl::StrSplit(markdown, '\n')) {
    ++number;
    if (absl::StartsWith(line, "```")) in_fence = !in_fence;
    if (in_fence || absl::StartsWith(line, "```") ||
        absl::StripAsciiWhitespace(line).empty()) {
      open = false;
      continue;
    }
    if (!open) paragraphs.push_back({number, {}});
    open = true;
    paragraphs.back().lines.emplace_back(line);
  }
  std::vector<SpecExample> examples;
  for (const Paragraph& p : paragraphs) {
    // Tables and headings are not prose an example starts in.
    if (absl::StartsWith(p.lines[0], "|") || absl::StartsWith(p.lines[0], "#")) continue;
    int start_line = 0;
    for (size_t i = 0; i < p.lines.size() && start_line == 0; ++i) {
      if (ExampleStart(p.lines[i]) != absl::string_view::npos) {
        start_line = p.first_line + static_cast<int>(i);
      }
    }
    if (start_line == 0) continue;
    // A "Worked examples" paragraph holding a list: one example per item.
    const bool list = absl::StartsWith(p.lines[0], "Worked examples") &&
                      std::any_of(p.lines.begin(), p.lines.end(), [](const std::string& l) {
                        return absl::StartsWith(l, "- ");
                      });
    if (list) {
      // An item runs from its "- " line to the next one; the lines before
      // the first item introduce the list.
      for (size_t i = 0; i < p.lines.size(); ++i) {
        if (absl::StartsWith(p.lines[i], "- ")) {
          examples.push_back({file, p.first_line + static_cast<int>(i), "", {}});
        }
        if (examples.empty() || examples.back().line < p.first_line) continue;
        examples.back().text += p.lines[i] + "\n";
      }
      for (SpecExample& e : examples) {
        if (e.line >= p.first_line) e.cases = CaseIds(e.text);
      }
      continue;
    }
    std::string text;
    for (const std::string& l : p.lines) text += l + "\n";
    examples.push_back({file, start_line, text, CaseIds(text)});
  }
  return examples;
}

int CheckWorkedExamples(const vectors::VectorSet& set, const std::string& spec_dir,
                        std::vector<std::string>& failures) {
  std::map<std::string, std::string> descriptions;  // case ID -> description
  for (const vectors::LoadedCase& loaded : set.cases) {
    descriptions[loaded.vector->id()] = loaded.vector->description();
  }
  std::vector<std::string> files;
  for (const std::string& folder : {spec_dir, spec_dir + "/policies"}) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      if (entry.path().extension() == ".md") files.push_back(entry.path().string());
    }
    if (error) {
      failures.push_back(absl::StrFormat(
          "worked examples: cannot read the spec folder %s (%s); give --spec",
          folder, error.message()));
      return 0;
    }
  }
  std::sort(files.begin(), files.end());
  int checked = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string relative = path.substr(spec_dir.size() + 1);
    const std::string name = std::filesystem::path(path).filename().string();
    for (const SpecExample& example : FindExamples(relative, bytes.str())) {
      ++checked;
      const std::string where = absl::StrFormat("spec/%s:%d", relative, example.line);
      if (example.cases.empty()) {
        failures.push_back(absl::StrFormat(
            "worked examples: the example at %s names no vector (add \"(Vector "
            "`<case id>`)\" for the case that runs its numbers)",
            where));
        continue;
      }
      for (const std::string& id : example.cases) {
        const auto it = descriptions.find(id);
        if (it == descriptions.end()) {
          failures.push_back(absl::StrFormat(
              "worked examples: the example at %s names `%s`, which the suite "
              "does not have",
              where, id));
        } else if (it->second.find(name) == std::string::npos) {
          failures.push_back(absl::StrFormat(
              "worked examples: `%s`, named by the example at %s, does not "
              "name %s back in its description",
              id, where, name));
        }
      }
    }
  }
  return checked;
}

}  // namespace audit
}  // namespace kvspec
