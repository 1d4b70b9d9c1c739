// Text a port supplies (its hello's names, error messages, skip reasons,
// rejection messages, its stderr) as the runner keeps it for its reports
// (spec/protocol.md#what-the-runner-keeps): a hostile or broken port can
// neither grow a report without bound nor corrupt one.
#ifndef KVSPEC_CONFORMANCE_PORT_TEXT_H_
#define KVSPEC_CONFORMANCE_PORT_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace kvspec {
namespace conformance {

// The most bytes of one port-supplied string a report keeps.
inline constexpr size_t kPortTextBytes = 4096;

// `raw` made safe for every report: valid UTF-8 is kept as it is, except
// control characters (below U+0020 but for newline and tab, and U+007F),
// which are written as "\xNN", like every byte that is not part of valid
// UTF-8 (a stray continuation byte, an overlong form, a surrogate, a
// sequence cut short). Whole characters only: when the result would pass
// `cap` bytes it ends at the last character that fits, followed by
// " [cut: N more bytes from the port]".
std::string PortText(absl::string_view raw, size_t cap = kPortTextBytes);

// The last `cap` bytes of `text`, starting on a character boundary (the
// leading continuation bytes of a character cut in two are dropped).
std::string TailOnBoundary(absl::string_view text, size_t cap);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_PORT_TEXT_H_
