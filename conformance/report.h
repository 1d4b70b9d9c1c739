// Reports of a conformance run: the text summary (per policy and per
// feature, then the closing line "N passed, N failed, N skipped, N not
// run"), JUnit XML and JSON. Every count is the same in all three: with
// --require_all a case not run is counted as failed everywhere. Port-supplied
// text reaches them only through conformance/port_text.h.
#ifndef KVSPEC_CONFORMANCE_REPORT_H_
#define KVSPEC_CONFORMANCE_REPORT_H_

#include <string>

#include "conformance/expectations.h"
#include "conformance/runner.h"

namespace kvspec {
namespace conformance {

// Per-policy table, every case that did not pass with its detail, the
// exclusions, the verdict's problems, and last the closing line.
std::string TextReport(const RunReport& report, const Verdict& verdict);

std::string JUnitXml(const RunReport& report, const Verdict& verdict);
std::string JsonSummary(const RunReport& report, const Verdict& verdict);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_REPORT_H_
