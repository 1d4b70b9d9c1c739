// SHA-256 (FIPS 180-4), for the vectors' manifest: every vector file is
// listed with the SHA-256 of its bytes, so a corrupted or hand-edited file
// is refused before anything runs.
#ifndef KVSPEC_CC_SHA256_H_
#define KVSPEC_CC_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kvspec {

// The lowercase hex SHA-256 digest of `data` (64 characters).
std::string Sha256Hex(absl::string_view data);

}  // namespace kvspec

#endif  // KVSPEC_CC_SHA256_H_
