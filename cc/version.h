// Versions of what the reference implements. kSpecVersion must equal the
// "Spec version" line of spec/README.md (a test checks); raise both together.
#ifndef KVSPEC_CC_VERSION_H_
#define KVSPEC_CC_VERSION_H_

namespace kvspec {

inline constexpr char kSpecVersion[] = "0.20.0";

// Version of the vector generator (tools/vectors/regen_vectors). Raised when the
// generator's output changes for a reason other than a spec change (a new
// case, a new rendering).
inline constexpr char kGeneratorVersion[] = "1";

}  // namespace kvspec

#endif  // KVSPEC_CC_VERSION_H_
