// The process sets the unit (in-process) and MPI suites exercise at `size` ranks, as
// tests/python/test_process_sets.py does: the even ranks, the odd ranks and the last rank
// alone, each only if it is not empty, not the world and not already listed (so odd sizes
// give sets of odd sizes, and size 1 gives none).
#pragma once

#include <algorithm>
#include <vector>

namespace concord::testlists {

inline std::vector<std::vector<int>> process_subsets(int size) {
  std::vector<std::vector<int>> candidates(2), result;
  for (int r = 0; r < size; ++r) candidates[r % 2].push_back(r);
  candidates.push_back({size - 1});
  for (const auto& ranks : candidates)
    if (!ranks.empty() && static_cast<int>(ranks.size()) < size &&
        std::find(result.begin(), result.end(), ranks) == result.end())
      result.push_back(ranks);
  return result;
}

}  // namespace concord::testlists
