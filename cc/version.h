// Versions of what the reference implements. kSpecVersion must equal the
// "Spec version" line of spec/README.md (a test checks); raise both together.
#ifndef KVSPEC_CC_VERSION_H_
#define KVSPEC_CC_VERSION_H_

namespace kvspec {

inline constexpr char kSpecVersion[] = "0.2.0";

}  // namespace kvspec

#endif  // KVSPEC_CC_VERSION_H_
