// Forcing an algorithm per message-size range (UCC's score maps such as
// "allreduce:0-4k:@0#4k-inf:@1"): CONCORD_<COLLECTIVE>_ALGORITHM is either one registry
// name for every size ("ring"), "auto" (empty: no rule), or rules separated by ';', each
// "LOW-HIGH:name" for LOW <= bytes < HIGH, HIGH empty for no upper bound, sizes in bytes
// with an optional K, M or G suffix (powers of 1024):
//   CONCORD_ALLREDUCE_ALGORITHM="0-64K:recursive_doubling;64K-:ring"
// A size no rule covers, or whose named algorithm declines the problem, is chosen as
// without rules (measured, or by the cost model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace concord {

struct SizeRule {
  size_t min_bytes = 0;         ///< inclusive
  size_t max_bytes = SIZE_MAX;  ///< exclusive; SIZE_MAX = no upper bound
  std::string algorithm;
};

/// Parses a CONCORD_<COLLECTIVE>_ALGORITHM value as described above. Throws
/// InvalidArgument naming `variable` and the malformed part (bad size, LOW >= HIGH, no
/// name). Names are not checked here (see find_algorithm).
std::vector<SizeRule> parse_size_rules(const std::string& text, const std::string& variable);

/// The algorithm of the first rule covering `bytes`, or "" when none does.
std::string rule_for(const std::vector<SizeRule>& rules, size_t bytes);

}  // namespace concord
