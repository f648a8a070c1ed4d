// Ok-Topk's communication volume per call with the residual carried over many calls, as in
// training (Li & Hoefler, "Near-Optimal Sparse Allreduce for Distributed Deep Learning",
// PPoPP 2022, sec. 3.2; src/sparse/oktopk.h, "Volume cap"): the claim that from call 32 on a
// rank sends fewer than 6k words per call. One rank's calls are recorded by
// oktopk_call_volumes() (bytes counted by the transport, not timed) and checked by
// expect_six_k_words_from_call_32(); used on the in-process transport
// (tests/unit/test_oktopk_bound.cc) and under mpirun (tests/mpi/mechanisms_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparse/oktopk.h"
#include "sparse/synthetic_stream.h"
#include "transport/communicator.h"

namespace concord::testing_util {

/// What one rank sent in one OkTopk call.
struct OkTopkCall {
  uint64_t bytes = 0;         ///< bytes sent through the communicator during the call
  int64_t result_size = 0;    ///< |U|
  bool reevaluation = false;  ///< exact th_g or repartition: outside the spec's bound
};

/// The first call the bound applies to, and how many calls the tests run.
constexpr int kOkTopkFirstBoundCall = 32, kOkTopkCalls = 160;

/// Runs `calls` OkTopk calls on this rank of `comm` on SyntheticGradientStream(n, rank, 1)
/// with the residual carried, and returns each call's record. Collective over `comm`.
inline std::vector<OkTopkCall> oktopk_call_volumes(Communicator& comm, int64_t n, int calls,
                                                   const sparse::SparseOptions& options) {
  sparse::OkTopk algorithm(comm, options);
  sparse::SyntheticGradientStream stream(n, comm.rank(), 1);
  std::vector<float> acc(n, 0.0f);
  sparse::SparseResult result;
  std::vector<OkTopkCall> records(calls);
  for (int t = 0; t < calls; ++t) {
    stream.add_to(acc.data(), t);
    const uint64_t before = comm.counters().bytes_sent;
    algorithm.allreduce(acc.data(), n, result);
    records[t].bytes = comm.counters().bytes_sent - before;
    records[t].result_size = static_cast<int64_t>(result.indices.size());
    records[t].reevaluation = algorithm.trace().exact_global || algorithm.trace().repartitioned;
  }
  return records;
}

/// Ok-Topk's bound on one rank's `records` (k = topk_count(n, options.density), 4-byte
/// words): from call kOkTopkFirstBoundCall on, fewer than 6k words on every threshold-reuse
/// call and |U| <= (1 + max_overshoot) k, and fewer than 6k words per call on average over
/// every whole tau_global period, re-evaluation calls included. `where` names P and rank.
inline void expect_six_k_words_from_call_32(const std::vector<OkTopkCall>& records, int64_t n,
                                            const sparse::SparseOptions& options, const std::string& where) {
  const int64_t k = sparse::topk_count(n, options.density);
  const auto bound = static_cast<uint64_t>(6 * k * 4);
  const int calls = static_cast<int>(records.size());
  for (int t = kOkTopkFirstBoundCall; t < calls; ++t) {
    const OkTopkCall& c = records[t];
    if (c.reevaluation) continue;
    EXPECT_LT(c.bytes, bound) << where << " n=" << n << " k=" << k << " call=" << t
                              << ": bytes sent on a threshold-reuse call";
    EXPECT_LE(c.result_size, static_cast<int64_t>((1 + options.max_overshoot) * static_cast<double>(k)))
        << where << " call=" << t << ": |U|";
  }
  for (int start = kOkTopkFirstBoundCall; start + options.tau_global <= calls; start += options.tau_global) {
    uint64_t sum = 0;
    for (int t = start; t < start + options.tau_global; ++t) sum += records[t].bytes;
    EXPECT_LT(sum / options.tau_global, bound) << where << " calls " << start << ".." << start + options.tau_global - 1
                                               << ": mean bytes sent per call over a whole period";
  }
}

}  // namespace concord::testing_util
