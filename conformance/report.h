// Reports of a conformance run: the text summary (per policy, then the
// closing line "N passed, N failed, N skipped"), JUnit XML and JSON.
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

std::string JUnitXml(const RunReport& report);
std::string JsonSummary(const RunReport& report, const Verdict& verdict);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_REPORT_H_
