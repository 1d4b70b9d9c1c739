// What the tests of the attention importer (import_*_test.cc) share:
// predicates, the byte builders that write every input file byte by byte
// (the .npy and .safetensors layouts written out in full, so the tests need
// no NumPy and no model), the hand-worked examples, and the checks several
// test files make. Test-only (//tools/attention:import_test_util).
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_TEST_UTIL_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_TEST_UTIL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "spec/kvspec.pb.h"
#include "tools/attention/import_attention_lib.h"

namespace kvspec {
namespace import_test {

// (Debian's GoogleTest package has no gMock: plain predicates instead.)
bool Contains(const std::string& text, const std::string& part);
bool StartsWith(const std::string& text, const std::string& prefix);

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kSubnormal = std::numeric_limits<float>::denorm_min();

// The IEEE bits of `value`.
uint32_t Bits(float value);
uint64_t Bits64(double value);

// ---------------------------------------------------------------------------
// Building files.

// The low `width` bytes of `value`, little-endian.
std::string LittleEndian(uint64_t value, int width);

// Each value's four little-endian bytes (float32).
std::string FloatBytes(const std::vector<float>& values);

// Each value's eight little-endian bytes (float64).
std::string DoubleBytes(const std::vector<double>& values);

// A .npy file: magic, version, header length, the dict padded with spaces
// to a multiple of 64 and ended by '\n', then the data.
std::string Npy(const std::string& dict, const std::string& data,
                int major = 1);

// A .npy header's dict: little-endian float32 in C order by default.
std::string NpyDict(const std::vector<uint64_t>& shape,
                    const std::string& descr = "<f4",
                    bool fortran = false);

// A .npy file of float32 `values` of `shape`.
std::string NpyOf(const std::vector<uint64_t>& shape,
                  const std::vector<float>& values, int major = 1);

// One entry of a safetensors header.
std::string TensorJson(const std::string& name, const std::string& dtype,
                       const std::vector<uint64_t>& shape, uint64_t begin,
                       uint64_t end);

// A .safetensors file: the header's length (8 bytes, little-endian), the
// header padded with spaces to a multiple of 8, then the data.
std::string Safetensors(std::string header, const std::string& data);

// A header's JSON from its entries: {entry,entry,...}.
std::string Header(const std::vector<std::string>& entries);

// A safetensors file holding one F32 tensor `name` of `shape`.
std::string SafetensorsOf(const std::string& name,
                          const std::vector<uint64_t>& shape,
                          const std::vector<float>& values);

// A tensor of TensorsFile.
struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
  std::string dtype = "F32";
};

// A safetensors file of the tensors, in order, with `metadata` (a JSON
// object, or empty for none).
std::string TensorsFile(const std::vector<TensorSpec>& tensors,
                        const std::string& metadata = "");

// Writes `bytes` as `name` in the test's temporary directory; returns its
// path.
std::string WriteInput(const std::string& name, const std::string& bytes);

// A file of `size` bytes whose first bytes are `head` and the rest a hole
// (sparse: no disk, no memory until read).
std::string WriteSparse(const std::string& name, const std::string& head,
                        uint64_t size);

// ---------------------------------------------------------------------------
// The hand-worked examples.

// A matrix: 2 heads, L = 3, A[h][q][k].
//
//   head 0            head 1
//   1     0     0     1     0    0
//   0.25  0.75  0     0.5   0.5  0
//   0.125 0.5   0.375 1e-45 +0.0 1
//
// The scenario: step 0 has two empty rows; step 1 carries row 1 without its
// diagonal: [0.25] and [0.5]; step 2: [0.125, 0.5] and [1e-45, +0.0].
inline const std::vector<float> kExample = {
    1, 0, 0, 0.25f, 0.75f, 0, 0.125f, 0.5f, 0.375f,   // head 0
    1, 0, 0, 0.5f, 0.5f, 0, kSubnormal, 0.0f, 1,      // head 1
};

// The rows of one step, head by head, whichever field carries them.
std::vector<std::vector<uint32_t>> RowBits(const v1::Step& step);

using Rows = std::vector<std::vector<uint32_t>>;

// The bits of each value.
std::vector<uint32_t> BitsOfAll(const std::vector<float>& values);

// The query rows of a step, in wire order.
Rows QueryBits(const v1::Step& step);

// The window layout: window.<n> [heads, R, L], row r the query at position
// L - R + r. The hand-worked example: 2 heads, R = 3, L = 5, so rows 0, 1,
// 2 are the queries at positions 2, 3, 4.
//
//   head 0                              head 1
//   q=2  0.5    0.25   0.25  0    0     1e-45 +0.0   1      0      0
//   q=3  0.125  0.125  0.25  0.5  0     0.75  0.125  0.0625 0.0625 0
//   q=4  0.0625 0.0625 0.125 0.25 0.5   0.25  0.25   0.125  0.125  0.25
//
// --decode=0 (default): step 0 admits 5 and carries 3 query rows per head,
// q + 1 weights each, diagonal included. --decode=1: step 0 admits 4 and
// carries the rows of queries 2 and 3 (m = R - D = 2); step 1 admits 1 and
// carries row 4 without its diagonal, [0.0625 0.0625 0.125 0.25] and
// [0.25 0.25 0.125 0.125].
inline const std::vector<float> kWindow = {
    0.5f,       0.25f,  0.25f,   0,       0,                       // h0 q2
    0.125f,     0.125f, 0.25f,   0.5f,    0,                       // h0 q3
    0.0625f,    0.0625f, 0.125f, 0.25f,   0.5f,                    // h0 q4
    kSubnormal, 0.0f,   1,       0,       0,                       // h1 q2
    0.75f,      0.125f, 0.0625f, 0.0625f, 0,                       // h1 q3
    0.25f,      0.25f,  0.125f,  0.125f,  0.25f,                   // h1 q4
};

// kWindow's file, window.0 [2, 3, 5] of `values`, with __metadata__
// `metadata` (a JSON object, or empty for none), written as `name`.
std::string WindowFile(const std::string& name,
                       const std::vector<float>& values = kWindow,
                       const std::string& metadata = "");

// A [heads, L, L] causal matrix whose rows are uniform over keys 0..q.
std::vector<float> Uniform(int heads, int length);

// A uniform causal window [heads, rows, length].
std::vector<float> UniformWindow(int heads, int rows, int length);

// ---------------------------------------------------------------------------
// Checks.

// The message ImportAttention refuses `bytes` with, written as `name`,
// after the file's path that every refusal starts with; "accepted" when
// it is not refused.
std::string Refusal(const std::string& name, const std::string& bytes,
                    const ImportOptions& options = {});

// MeasureImport's scenario_bytes, the built scenario's ByteSizeLong() and
// ScenarioWireBytes agree.
void ExpectExactSize(const std::string& path, const ImportOptions& options);

// This process's peak resident memory, in KiB.
long MaxRssKib();

}  // namespace import_test
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_TEST_UTIL_H_
