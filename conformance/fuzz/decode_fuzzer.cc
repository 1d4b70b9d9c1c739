// libFuzzer target: conformance/decode.cc's FramesAsText must refuse or
// decode any bytes, as either side's frames, without crashing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "conformance/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (auto side : {kvspec::conformance::Side::kRunner, kvspec::conformance::Side::kPort}) {
    (void)kvspec::conformance::FramesAsText(bytes, side, size_t{1} << 20);
  }
  return 0;
}
