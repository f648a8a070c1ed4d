// Helpers of the sparse allreduce MPI suites (sparse_test.cc, sparse_baselines_test.cc).
#pragma once

#include <mpi.h>

#include <vector>

namespace concord::sparse {

/// Every rank's copy of `mine` (the same length on every rank), in rank order: P vectors.
/// Blocking MPI_Allgather over MPI_COMM_WORLD.
inline std::vector<std::vector<float>> allgather_floats(const std::vector<float>& mine, int P) {
  std::vector<float> all(mine.size() * P);
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), static_cast<int>(mine.size()),
                MPI_FLOAT, MPI_COMM_WORLD);
  std::vector<std::vector<float>> result(P);
  for (int q = 0; q < P; ++q) result[q].assign(all.begin() + q * mine.size(), all.begin() + (q + 1) * mine.size());
  return result;
}

}  // namespace concord::sparse
