// simulate --json: the run as one JSON document, field by field in
// simulate-json.md. JsonWriter writes the JSON text (streamed, no tree in
// memory); the functions below write a run's parts with it: the header
// (what ran, on what, the kept sets), each step and the footer (kept sets
// at the end, the refusal). WriteScenarioJson writes a whole scenario run.
#ifndef KVSPEC_TOOLS_SIMULATE_JSON_H_
#define KVSPEC_TOOLS_SIMULATE_JSON_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "cc/harness.h"
#include "cc/text.h"
#include "tools/simulate/steps.h"
#include "tools/simulate/warnings.h"

namespace kvspec {
namespace simulate {

class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* out) : out_(out) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(absl::string_view key) {
    BeforeValue();
    Quoted(key);
    std::fputc(':', out_);
    after_key_ = true;
  }
  void String(absl::string_view value) {
    BeforeValue();
    Quoted(value);
  }
  void Int(int64_t value) {
    BeforeValue();
    Raw(absl::StrCat(value));
  }
  void Uint(uint64_t value) {
    BeforeValue();
    Raw(absl::StrCat(value));
  }
  void Bool(bool value) {
    BeforeValue();
    Raw(value ? "true" : "false");
  }
  void Null() {
    BeforeValue();
    Raw("null");
  }
  // A finite binary64 as its shortest round-trip decimal, with ".0" added
  // to an integer so that every reader sees a float; +infinity, -infinity
  // and NaN as the strings "inf", "-inf" and "nan" (JSON has no such
  // numbers).
  void Double(double value) {
    std::string text = ShortestDecimal(value);
    if (!std::isfinite(value)) {
      String(text);
      return;
    }
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    BeforeValue();
    Raw(text);
  }
  // A member: its key, then its value.
  void StringField(absl::string_view key, absl::string_view value) {
    Key(key);
    String(value);
  }
  void IntField(absl::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void UintField(absl::string_view key, uint64_t value) {
    Key(key);
    Uint(value);
  }
  void BoolField(absl::string_view key, bool value) {
    Key(key);
    Bool(value);
  }
  void DoubleField(absl::string_view key, double value) {
    Key(key);
    Double(value);
  }
  void Positions(absl::Span<const Position> positions) {
    BeginArray();
    for (Position p : positions) Uint(p);
    EndArray();
  }
  // A line break before the next value (after its comma), for people
  // reading the file.
  void Newline() { newline_ = true; }
  // Ends the document with a line break.
  void Finish() {
    newline_ = false;
    std::fputc('\n', out_);
  }

 private:
  void Raw(absl::string_view text) {
    std::fwrite(text.data(), 1, text.size(), out_);
  }
  void BeforeValue() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) std::fputc(',', out_);
      first_.back() = false;
    }
    BreakLine();
  }
  void BreakLine() {
    if (newline_) std::fputc('\n', out_);
    newline_ = false;
  }
  void Open(char c) {
    BeforeValue();
    std::fputc(c, out_);
    first_.push_back(true);
  }
  void Close(char c) {
    BreakLine();
    first_.pop_back();
    std::fputc(c, out_);
  }
  // A JSON string: '"' and '\' escaped, control characters as \u00XX, valid
  // UTF-8 as is, and each byte of invalid UTF-8 as U+FFFD.
  void Quoted(absl::string_view text) {
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
        ++i;
      } else if (c < 0x20) {
        switch (c) {
          case '\n': out += "\\n"; break;
          case '\t': out += "\\t"; break;
          case '\r': out += "\\r"; break;
          default: absl::StrAppendFormat(&out, "\\u%04x", c);
        }
        ++i;
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++i;
      } else {
        const size_t length = Utf8Length(text.substr(i));
        if (length == 0) {
          out += "\\ufffd";
          ++i;
        } else {
          out.append(text.data() + i, length);
          i += length;
        }
      }
    }
    out += '"';
    Raw(out);
  }
  // Length of the valid UTF-8 sequence `text` starts with (a lead byte at
  // or above 0x80), or 0 if it is not one.
  static size_t Utf8Length(absl::string_view text) {
    const unsigned char c = static_cast<unsigned char>(text[0]);
    size_t length = 0;
    uint32_t min = 0;
    uint32_t code = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2, min = 0x80, code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3, min = 0x800, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4, min = 0x10000, code = c & 0x07;
    } else {
      return 0;
    }
    if (text.size() < length) return 0;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[k]);
      if ((next & 0xc0) != 0x80) return 0;
      code = (code << 6) | (next & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return 0;
    }
    return length;
  }

  std::FILE* out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
  bool newline_ = false;
};

// --json_kept: which kept sets a step carries (simulate-json.md).
enum class KeptMode { kNone, kFinal, kEvicting, kEvery };
std::optional<KeptMode> ParseKeptMode(absl::string_view text);

// The part of the JSON that comes before the steps: what was run, on what,
// and the kept sets.
struct JsonHeader {
  PolicyConfig config;
  std::string preset;  // empty: none
  bool accepted = false;  // the registry accepted `config`
  std::string scenario_source;  // "sample", "file" or "canonical_trace"
  std::string scenario_path;
  std::string scenario_id;
  uint32_t query_heads = 1;
  uint32_t kv_heads = 1;
  uint64_t step_count = 0;
  uint64_t prefill_steps = 0;
  std::vector<std::vector<uint32_t>> covers;  // kept sets; empty if refused
  SharedBudget shared;
  std::vector<Warning> warnings;
  KeptMode kept_mode = KeptMode::kFinal;
};

// Fills the kept sets and the shared budget of `header` from its
// configuration and head counts; none when either is refused.
void DescribeSets(JsonHeader& header);

// Opens the object and writes everything before the steps, then opens the
// steps.
void WriteHeader(JsonWriter& json, const JsonHeader& header);

// One step: what it admitted, and each set's record (`kept` per set when
// given; `ratio_budget` when `config` is given and a ratio set the step's
// budget, steps.h RatioBudget).
void WriteStep(JsonWriter& json, size_t index, const Admitted& admitted,
               bool prefill, const char* attention, const StepRecord& record,
               const std::vector<std::vector<Position>>* kept,
               const PolicyConfig* config);

// Closes the steps and the object: the kept sets after the last step carried
// out, then the refusal.
void WriteFooter(JsonWriter& json, KeptMode mode,
                 const std::vector<std::vector<Position>>& kept_at_end,
                 const RunResult& result);

// Writes a scenario run's JSON. `policy_kept`: the policy's own kept set at
// the end when the run had one kept set, to check the rebuilt one against.
absl::Status WriteScenarioJson(JsonWriter& json, const JsonHeader& header,
                               const Scenario& scenario,
                               const RunResult& result,
                               const std::vector<Position>* policy_kept);

}  // namespace simulate
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SIMULATE_JSON_H_
