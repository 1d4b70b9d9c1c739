// The attention importer's shared test helpers (import_test_util.h).
#include "tools/attention/import_test_util.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_attention_lib.h"

namespace kvspec {
namespace import_test {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

uint64_t Bits64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

std::string LittleEndian(uint64_t value, int width) {
  std::string bytes;
  for (int i = 0; i < width; ++i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}

std::string FloatBytes(const std::vector<float>& values) {
  std::string bytes;
  for (float v : values) bytes += LittleEndian(Bits(v), 4);
  return bytes;
}

std::string DoubleBytes(const std::vector<double>& values) {
  std::string bytes;
  for (double v : values) bytes += LittleEndian(Bits64(v), 8);
  return bytes;
}

std::string Npy(const std::string& dict, const std::string& data,
                int major) {
  const int length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((10 + (length_bytes - 2) + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' +
         LittleEndian(header.size(), length_bytes) + header + data;
}

std::string NpyDict(const std::vector<uint64_t>& shape,
                    const std::string& descr,
                    bool fortran) {
  std::string tuple = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) tuple += ",";
  return absl::StrCat("{'descr': '", descr, "', 'fortran_order': ",
                      fortran ? "True" : "False", ", 'shape': (", tuple,
                      "), }");
}

std::string NpyOf(const std::vector<uint64_t>& shape,
                  const std::vector<float>& values, int major) {
  return Npy(NpyDict(shape), FloatBytes(values), major);
}

std::string TensorJson(const std::string& name, const std::string& dtype,
                       const std::vector<uint64_t>& shape, uint64_t begin,
                       uint64_t end) {
  return absl::StrCat("\"", name, "\":{\"dtype\":\"", dtype,
                      "\",\"shape\":[", absl::StrJoin(shape, ","),
                      "],\"data_offsets\":[", begin, ",", end, "]}");
}

std::string Safetensors(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  return LittleEndian(header.size(), 8) + header + data;
}

std::string Header(const std::vector<std::string>& entries) {
  return "{" + absl::StrJoin(entries, ",") + "}";
}

std::string SafetensorsOf(const std::string& name,
                          const std::vector<uint64_t>& shape,
                          const std::vector<float>& values) {
  const std::string data = FloatBytes(values);
  return Safetensors(
      "{" + TensorJson(name, "F32", shape, 0, data.size()) + "}", data);
}

std::string TensorsFile(const std::vector<TensorSpec>& tensors,
                        const std::string& metadata) {
  std::vector<std::string> entries;
  std::string data;
  for (const TensorSpec& t : tensors) {
    const std::string bytes = FloatBytes(t.values);
    entries.push_back(TensorJson(t.name, t.dtype, t.shape, data.size(),
                                 data.size() + bytes.size()));
    data += bytes;
  }
  if (!metadata.empty()) entries.push_back("\"__metadata__\":" + metadata);
  return Safetensors(Header(entries), data);
}

std::string WriteInput(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  EXPECT_TRUE(out.good()) << path;
  return path;
}

std::string WriteSparse(const std::string& name, const std::string& head,
                        uint64_t size) {
  const std::string path = WriteInput(name, head);
  EXPECT_EQ(truncate(path.c_str(), static_cast<off_t>(size)), 0) << path;
  return path;
}

std::vector<std::vector<uint32_t>> RowBits(const v1::Step& step) {
  std::vector<std::vector<uint32_t>> rows;
  auto add = [&rows](const v1::AttentionRow& row) {
    std::vector<uint32_t> bits;
    for (float w : row.weights()) bits.push_back(Bits(w));
    rows.push_back(bits);
  };
  if (step.has_attention()) add(step.attention());
  for (const v1::AttentionRow& row : step.heads()) add(row);
  return rows;
}

std::vector<uint32_t> BitsOfAll(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float v : values) bits.push_back(Bits(v));
  return bits;
}

Rows QueryBits(const v1::Step& step) {
  Rows rows;
  for (const v1::AttentionRow& row : step.queries()) {
    std::vector<uint32_t> bits;
    for (float w : row.weights()) bits.push_back(Bits(w));
    rows.push_back(bits);
  }
  return rows;
}

std::string WindowFile(const std::string& name,
                       const std::vector<float>& values,
                       const std::string& metadata) {
  const std::string data = FloatBytes(values);
  std::string header =
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, data.size());
  if (!metadata.empty()) header += ",\"__metadata__\":" + metadata;
  return WriteInput(name, Safetensors(header + "}", data));
}

std::vector<float> Uniform(int heads, int length) {
  std::vector<float> values;
  for (int h = 0; h < heads; ++h) {
    for (int q = 0; q < length; ++q) {
      for (int k = 0; k < length; ++k) {
        values.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
      }
    }
  }
  return values;
}

std::vector<float> UniformWindow(int heads, int rows, int length) {
  std::vector<float> values;
  values.reserve(static_cast<size_t>(heads) * rows * length);
  for (int h = 0; h < heads; ++h) {
    for (int r = 0; r < rows; ++r) {
      const int q = length - rows + r;
      for (int k = 0; k < length; ++k) {
        values.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
      }
    }
  }
  return values;
}

std::string Refusal(const std::string& name, const std::string& bytes,
                    const ImportOptions& options) {
  const std::string path = WriteInput(name, bytes);
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  if (scenario.ok()) return "accepted";
  const std::string message(scenario.status().message());
  EXPECT_TRUE(StartsWith(message, path + ": ")) << message;
  return message.substr(path.size() + 2);
}

void ExpectExactSize(const std::string& path, const ImportOptions& options) {
  absl::StatusOr<ImportSize> size = MeasureImport(path, options);
  ASSERT_TRUE(size.ok()) << size.status();
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(size->scenario_bytes, scenario->ByteSizeLong()) << path;
  EXPECT_EQ(size->scenario_bytes, scenario->SerializeAsString().size());
  EXPECT_EQ(size->steps, static_cast<uint64_t>(scenario->steps_size()));
  uint64_t rows = 0, weights = 0;
  for (const v1::Step& step : scenario->steps()) {
    rows += step.queries_size() + step.heads_size() + step.has_attention();
    for (const v1::AttentionRow& row : step.queries()) {
      weights += row.weights_size();
    }
    for (const v1::AttentionRow& row : step.heads()) {
      weights += row.weights_size();
    }
    weights += step.attention().weights_size();
  }
  EXPECT_EQ(size->rows, rows) << path;
  EXPECT_EQ(size->weights, weights) << path;
  // The prefill steps (those with query rows, first), then decode steps.
  const uint64_t H = scenario->query_heads();
  std::vector<PrefillShape> prefill;
  uint64_t admitted = 0;
  for (const v1::Step& step : scenario->steps()) {
    if (step.queries_size() == 0) break;
    admitted += step.admit();
    prefill.push_back({step.admit(), admitted,
                       static_cast<uint64_t>(step.queries_size()) / H,
                       step.total_rows()});
  }
  const uint64_t length =
      admitted + scenario->steps_size() - prefill.size();
  EXPECT_EQ(ScenarioWireBytes(scenario->id().size(), H,
                              scenario->kv_heads(), prefill, admitted, length,
                              scenario->head_dim(), scenario->value_dim()),
            scenario->ByteSizeLong())
      << path;
  if (prefill.size() <= 1 && (prefill.empty() || prefill[0].total_rows == 0) &&
      !scenario->has_head_dim() && !scenario->has_value_dim()) {
    const uint64_t P = admitted;
    const uint64_t m = prefill.empty() ? 0 : prefill[0].query_rows;
    EXPECT_EQ(ScenarioWireBytes(scenario->id().size(), H,
                                scenario->kv_heads(), P, m, P, length),
              scenario->ByteSizeLong())
        << path;
  }
}

long MaxRssKib() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace import_test
}  // namespace kvspec
