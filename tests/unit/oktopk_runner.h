// Drives a sparse allreduce over several calls on P in-process ranks and records what each
// rank saw (for test_oktopk.cc): acc_t = eps_{t-1} + g(rank, t), the result U, the residual
// and, for OkTopk, its trace and the bytes it sent.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "rank_runner.h"
#include "sparse/oktopk.h"
#include "test_support/dtype_util.h"

namespace concord::testing_util {

struct SparseCall {
  std::vector<float> acc;       ///< accumulator passed in
  std::vector<float> residual;  ///< accumulator on return
  sparse::SparseResult result;
  sparse::OkTopkTrace trace;
  uint64_t bytes_sent = 0;
};

/// Fills g (n floats) with the gradient of `rank` at call `call`.
using GradientFn = std::function<void(int rank, int64_t call, std::vector<float>& g)>;

/// records[call][rank] of `calls` OkTopk calls on P ranks with gradient length n. With
/// `accumulate` false every call passes acc = g (the residual is dropped). Fails the test
/// (and returns what was recorded) when a rank throws.
inline std::vector<std::vector<SparseCall>> run_oktopk(int P, int64_t n, int calls,
                                                       const sparse::SparseOptions& options, const GradientFn& gradient,
                                                       bool accumulate = true) {
  std::vector<std::vector<SparseCall>> records(calls, std::vector<SparseCall>(P));
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
    const int rank = comm.rank();
    sparse::OkTopk algorithm(comm, options);
    std::vector<float> acc(n, 0.0f), g(n);
    for (int t = 0; t < calls; ++t) {
      gradient(rank, t, g);
      for (int64_t j = 0; j < n; ++j) acc[j] = accumulate ? acc[j] + g[j] : g[j];
      SparseCall& record = records[t][rank];
      record.acc = acc;
      const uint64_t before = comm.counters().bytes_sent;
      algorithm.allreduce(acc.data(), n, record.result);
      record.bytes_sent = comm.counters().bytes_sent - before;
      record.residual = acc;
      record.trace = algorithm.trace();
    }
  });
  EXPECT_EQ(error, "") << "P=" << P << " n=" << n;
  return records;
}

/// Small integers in [-range, range] (sums stay exact in float32), seeded by (seed, rank,
/// call); about `zero_fraction` of them zero.
inline GradientFn integer_gradient(uint32_t seed, int range = 64, double zero_fraction = 0.2) {
  return [=](int rank, int64_t call, std::vector<float>& g) {
    std::mt19937 random(seed * 7919u + static_cast<uint32_t>(rank) * 104729u + static_cast<uint32_t>(call) * 31u);
    std::uniform_int_distribution<int> value(-range, range);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (auto& x : g) x = unit(random) < zero_fraction ? 0.0f : static_cast<float>(value(random));
  };
}

/// Normal floats (distinct magnitudes with probability ~1), seeded by (seed, rank, call).
inline GradientFn normal_gradient(uint32_t seed) {
  return [=](int rank, int64_t call, std::vector<float>& g) {
    std::mt19937 random(seed * 7919u + static_cast<uint32_t>(rank) * 104729u + static_cast<uint32_t>(call) * 31u);
    std::normal_distribution<float> value(0.0f, 1.0f);
    for (auto& x : g) x = value(random);
  };
}

}  // namespace concord::testing_util
