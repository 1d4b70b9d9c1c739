// Text renderings of floats for people: shortest round-trip decimal
// (std::to_chars) and exact hex bits. Never used to carry a float between
// processes (spec/arithmetic.md#floats-as-text).
#ifndef KVSPEC_CC_TEXT_H_
#define KVSPEC_CC_TEXT_H_

#include <string>

namespace kvspec {

// Shortest decimal that reads back to exactly `value`, e.g. "0.1", "1e-45",
// "nan", "-inf".
std::string ShortestDecimal(float value);
std::string ShortestDecimal(double value);

// IEEE bits in hex: "0x3dcccccd" (float), "0x3fb999999999999a" (double).
std::string HexBits(float value);
std::string HexBits(double value);

// "<shortest decimal> (<hex bits>)", the form messages use.
std::string FloatText(float value);
std::string FloatText(double value);

}  // namespace kvspec

#endif  // KVSPEC_CC_TEXT_H_
