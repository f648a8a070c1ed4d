// The sparse baselines (src/sparse/{dense,topka,topkdsa,gtopk,gaussiank}.h) on the
// in-process transport, P = 1..8, several calls with the residual carried between them:
// each against its test-side reference (sparse_baseline_reference.h: U, residual, bytes and
// messages sent per rank from the transport's counters), U bit-identical on all ranks and
// conservation sum_i eps_i + P U == sum_i acc_i. Data are multiples of 1/64 below 2^10,
// so every sum is exact in any order and the references can compare bits; a second suite
// uses arbitrary floats and checks identity across ranks and conservation to rounding; a
// generic test gives one rank a different n for every registered sparse allreduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "cost_check.h"
#include "rank_runner.h"
#include "sparse/coo_gather.h"
#include "sparse/dense.h"
#include "sparse/gtopk.h"
#include "sparse/sparse_allreduce.h"
#include "sparse/topka.h"
#include "sparse_baseline_reference.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::run_ranks;
using testing_util::SparseExpectation;

struct Case {
  std::string algorithm;
  int P;
  int64_t n;
  double density;
};

std::string case_name(const Case& c) {
  return cat(c.algorithm, "_P", c.P, "_n", c.n, "_d", static_cast<int>(c.density * 1000));
}

constexpr int kCalls = 4;

// Gradient of rank r at call t: a per-rank pattern that drifts slowly plus noise.
std::vector<float> gradient(int r, int t, int64_t n, bool dyadic) {
  std::mt19937 gen(static_cast<uint32_t>(1000003 * r + 7919 * t + 17));
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> g(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const float x =
        std::sin(0.37f * static_cast<float>(j) + 0.1f * static_cast<float>(t + r)) * (1 + j % 5) + noise(gen);
    g[j] = dyadic ? std::round(x * 64.0f) / 64.0f : x;
  }
  return g;
}

// Everything one run of `calls` calls produced, by call and rank.
struct CallLog {
  std::vector<std::vector<std::vector<float>>> acc_before;  // [t][r]
  std::vector<std::vector<std::vector<float>>> acc_after;   // [t][r]
  std::vector<std::vector<sparse::SparseResult>> results;   // [t][r]
  std::vector<std::vector<TrafficCounters>> counters;       // [t][r]
};

CallLog run_calls(const Case& c, const sparse::SparseOptions& options, bool dyadic) {
  CallLog out;
  out.acc_before.assign(kCalls, std::vector<std::vector<float>>(c.P));
  out.acc_after = out.acc_before;
  out.results.assign(kCalls, std::vector<sparse::SparseResult>(c.P));
  out.counters.assign(kCalls, std::vector<TrafficCounters>(c.P));
  const std::string error = run_ranks(c.P, [&](Communicator& comm, const AbortFlag&) {
    const int r = comm.rank();
    auto algorithm = sparse::make_sparse_allreduce(c.algorithm, comm, options);
    std::vector<float> acc(static_cast<size_t>(c.n), 0.0f);
    for (int t = 0; t < kCalls; ++t) {
      const std::vector<float> g = gradient(r, t, c.n, dyadic);
      for (int64_t j = 0; j < c.n; ++j) acc[j] += g[j];
      out.acc_before[t][r] = acc;
      comm.reset_counters();
      algorithm->allreduce(acc.data(), c.n, out.results[t][r]);
      out.counters[t][r] = comm.counters();
      out.acc_after[t][r] = acc;
    }
  });
  EXPECT_EQ(error, "") << case_name(c);
  return out;
}

// Traffic of an allgather of `words` int64 per rank (CooGather::allgather_words, tested with
// the allgather algorithms) on P ranks, by rank: one word is the length check of dense,
// topka and gtopk and topkdsa's count allgather, two words gaussiank's {count, n}.
std::vector<TrafficCounters> count_allgather_traffic(int P, int words = 1) {
  std::vector<TrafficCounters> traffic(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
    sparse::CooGather gather(comm);
    const std::vector<int64_t> counts = gather.allgather_words(std::vector<int64_t>(words, 100 + comm.rank()));
    for (int q = 0; q < P * words; ++q)
      EXPECT_EQ(counts[q], 100 + q / words) << "rank " << comm.rank() << ": word " << q << " (P=" << P << ")";
    traffic[comm.rank()] = comm.counters();
    EXPECT_EQ(traffic[comm.rank()].bytes_sent, sparse::CooGather::words_traffic(P, comm.rank(), words).bytes_sent)
        << "rank " << comm.rank() << " (P=" << P << ", words=" << words << "): CooGather::words_traffic bytes";
    EXPECT_EQ(traffic[comm.rank()].messages_sent, sparse::CooGather::words_traffic(P, comm.rank(), words).messages_sent)
        << "rank " << comm.rank() << " (P=" << P << ", words=" << words << "): CooGather::words_traffic messages";
  });
  EXPECT_EQ(error, "");
  return traffic;
}

SparseExpectation reference(const Case& c, const sparse::SparseOptions& options,
                            const std::vector<std::vector<float>>& acc) {
  if (c.algorithm == "topka") return testing_util::reference_topka(acc, c.density, count_allgather_traffic(c.P));
  if (c.algorithm == "topkdsa") return testing_util::reference_topkdsa(acc, c.density, count_allgather_traffic(c.P));
  if (c.algorithm == "gtopk") return testing_util::reference_gtopk(acc, c.density, count_allgather_traffic(c.P));
  if (c.algorithm == "gaussiank")
    return testing_util::reference_gaussiank(acc, c.density, options.gaussian_corrections,
                                             count_allgather_traffic(c.P, 2));
  return testing_util::reference_dense(acc);
}

// First index where two float vectors differ bitwise, or -1.
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return static_cast<int64_t>(std::min(a.size(), b.size()));
  for (size_t j = 0; j < a.size(); ++j)
    if (std::memcmp(&a[j], &b[j], sizeof(float)) != 0) return static_cast<int64_t>(j);
  return -1;
}

int64_t first_difference(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (size_t j = 0; j < std::min(a.size(), b.size()); ++j)
    if (a[j] != b[j]) return static_cast<int64_t>(j);
  return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

// Expects `got` to equal `want` (indices and value bits); `what` names rank/case/call.
void expect_same_result(const std::string& what, const sparse::SparseResult& got, const sparse::SparseResult& want) {
  const int64_t i = first_difference(got.indices, want.indices);
  EXPECT_EQ(i, -1) << what << ": U indices differ at entry " << i << " (sizes " << got.indices.size() << " vs "
                   << want.indices.size() << ", index "
                   << (i >= 0 && i < static_cast<int64_t>(got.indices.size()) ? got.indices[i] : -1) << ")";
  const int64_t v = first_difference(got.values, want.values);
  EXPECT_EQ(v, -1) << what << ": U values differ at entry " << v << " (index "
                   << (v >= 0 && v < static_cast<int64_t>(got.indices.size()) ? got.indices[v] : -1) << ": "
                   << (v >= 0 && v < static_cast<int64_t>(got.values.size()) ? got.values[v] : 0.0f) << " vs "
                   << (v >= 0 && v < static_cast<int64_t>(want.values.size()) ? want.values[v] : 0.0f) << ")";
}

// sum_i eps_i + P U == sum_i acc_i, elementwise within `tolerance` relative to sum |acc|.
void expect_conservation(const std::string& what, const CallLog& out, int t, int P, int64_t n, double tolerance) {
  std::vector<double> lhs(static_cast<size_t>(n), 0.0), rhs(static_cast<size_t>(n), 0.0),
      scale(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < P; ++i)
    for (int64_t j = 0; j < n; ++j) {
      lhs[j] += out.acc_after[t][i][j];
      rhs[j] += out.acc_before[t][i][j];
      scale[j] += std::abs(out.acc_before[t][i][j]);
    }
  const sparse::SparseResult& U = out.results[t][0];
  for (size_t e = 0; e < U.indices.size(); ++e) lhs[U.indices[e]] += static_cast<double>(P) * U.values[e];
  for (int64_t j = 0; j < n; ++j)
    ASSERT_LE(std::abs(lhs[j] - rhs[j]), tolerance * (scale[j] + 1e-30) + (tolerance == 0 ? 0 : 1e-30))
        << what << ": conservation fails at element " << j << ": sum eps + P U = " << lhs[j]
        << ", sum acc = " << rhs[j];
}

class SparseBaseline : public ::testing::TestWithParam<Case> {
 protected:
  SparseBaseline() { options.density = GetParam().density; }
  sparse::SparseOptions options;
};

TEST_P(SparseBaseline, MatchesReferenceResidualAndBytes) {
  const Case c = GetParam();
  const CallLog out = run_calls(c, options, /*dyadic=*/true);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (int t = 0; t < kCalls; ++t) {
    const SparseExpectation expected = reference(c, options, out.acc_before[t]);
    for (int r = 0; r < c.P; ++r) {
      const std::string what = cat("rank ", r, " of ", case_name(c), " (P=", c.P, ", n=", c.n, ") call ", t);
      expect_same_result(what, out.results[t][r], expected.U);
      const int64_t e = first_difference(out.acc_after[t][r], expected.residual[r]);
      EXPECT_EQ(e, -1) << what << ": residual differs at element " << e << ": "
                       << (e >= 0 ? out.acc_after[t][r][e] : 0.0f) << " vs "
                       << (e >= 0 ? expected.residual[r][e] : 0.0f);
      if (!expected.bytes_sent.empty()) {
        EXPECT_EQ(out.counters[t][r].bytes_sent, expected.bytes_sent[r]) << what << ": bytes sent";
        EXPECT_EQ(out.counters[t][r].messages_sent, expected.messages_sent[r]) << what << ": messages sent";
      }
    }
    if (c.algorithm == "gtopk")
      for (int r = 0; r < c.P; ++r)
        EXPECT_EQ(out.counters[t][r].bytes_sent, sparse::SparseAllreduceGTopk::bytes_sent(c.n, c.density, c.P, r))
            << "rank " << r << " of " << case_name(c) << " call " << t << ": SparseAllreduceGTopk::bytes_sent";
    if (c.algorithm == "dense") {
      // The dense algorithm's own traffic: the counters minus the length check's.
      std::vector<TrafficCounters> allreduce_only = out.counters[t];
      const std::vector<TrafficCounters> check = count_allgather_traffic(c.P);
      for (int r = 0; r < c.P; ++r) {
        allreduce_only[r].bytes_sent -= check[r].bytes_sent;
        allreduce_only[r].messages_sent -= check[r].messages_sent;
      }
      testing_util::expect_counts(cat(case_name(c), " call ", t), sparse::SparseAllreduceDense::cost(c.P, c.n),
                                  allreduce_only);
    }
    expect_conservation(cat(case_name(c), " call ", t), out, t, c.P, c.n, 1e-6);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_P(SparseBaseline, ArbitraryFloatsBitIdenticalAndConserved) {
  const Case c = GetParam();
  const CallLog out = run_calls(c, options, /*dyadic=*/false);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (int t = 0; t < kCalls; ++t) {
    for (int r = 1; r < c.P; ++r)
      expect_same_result(cat("rank ", r, " vs rank 0 of ", case_name(c), " (P=", c.P, ", n=", c.n, ") call ", t),
                         out.results[t][r], out.results[t][0]);
    expect_conservation(cat(case_name(c), " call ", t), out, t, c.P, c.n, 1e-5);
    if (::testing::Test::HasFailure()) return;
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* algorithm : {"dense", "topka", "topkdsa", "gtopk", "gaussiank"})
    for (int P = 1; P <= 8; ++P) {
      std::vector<int64_t> sizes = {0, 1, 37, 1000};
      if (P > 2) sizes.push_back(P - 1);  // n < P: empty regions
      for (int64_t n : sizes)
        for (double density : {0.05, 0.3}) all.push_back({algorithm, P, n, density});
    }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Baselines, SparseBaseline, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

TEST(SparseBaselines, RegistryListsEveryBaselineAndRejectsUnknownNames) {
  const std::vector<std::string> names = sparse::sparse_allreduce_names();
  for (const char* name : {"dense", "topka", "topkdsa", "gtopk", "gaussiank"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " is not registered";
  const std::string error = run_ranks(1, [&](Communicator& comm, const AbortFlag&) {
    EXPECT_THROW(sparse::make_sparse_allreduce("no_such_algorithm", comm), InvalidArgument);
  });
  EXPECT_EQ(error, "");
}

TEST(SparseBaselines, TopkABytesPerRankAre8kPMinus1PlusLengthCheck) {
  // The documented TopkA volume, stated directly: n = 10000, d = 0.01 -> k = 100, and the
  // length check's allgather of one int64 (8(P-1) bytes on a power of two).
  for (int P : {2, 5, 8}) {
    const std::vector<TrafficCounters> check = count_allgather_traffic(P);
    std::vector<uint64_t> bytes(P);
    const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
      sparse::SparseOptions options;
      options.density = 0.01;
      auto algorithm = sparse::make_sparse_allreduce("topka", comm, options);
      std::vector<float> acc = gradient(comm.rank(), 0, 10000, false);
      sparse::SparseResult result;
      algorithm->allreduce(acc.data(), 10000, result);
      bytes[comm.rank()] = comm.counters().bytes_sent;
    });
    ASSERT_EQ(error, "");
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(bytes[r], 8u * 100u * (P - 1) + check[r].bytes_sent) << "rank " << r << " of topka, P=" << P;
      if (P != 5) EXPECT_EQ(check[r].bytes_sent, 8u * (P - 1)) << "rank " << r << ", P=" << P << ": length check";
      EXPECT_EQ(bytes[r], sparse::SparseAllreduceTopkA::bytes_sent(10000, 0.01, P, r)) << "rank " << r << ", P=" << P;
    }
  }
}

// n = -1 on every rank, or on rank 1 only (the others pass 10 and must not wait for it):
// InvalidArgument naming rank 1's n on every rank.
TEST(SparseBaselines, NegativeLengthIsInvalidOnEveryRank) {
  for (const char* name : {"dense", "topka", "topkdsa", "gtopk", "gaussiank"})
    for (const int64_t others : {int64_t{-1}, int64_t{10}}) {
      std::vector<std::string> thrown(3);
      const std::string error = run_ranks(3, [&](Communicator& comm, const AbortFlag&) {
        auto algorithm = sparse::make_sparse_allreduce(name, comm);
        std::vector<float> acc(10, 1.0f);
        sparse::SparseResult result;
        try {
          algorithm->allreduce(acc.data(), comm.rank() == 1 ? -1 : others, result);
        } catch (const InvalidArgument& e) {
          thrown[comm.rank()] = e.what();
        }
      });
      const std::string what = cat(name, " (P=3, rank 1 n=-1, others n=", others, ")");
      ASSERT_EQ(error, "") << what;
      for (int r = 0; r < 3; ++r)
        EXPECT_NE(thrown[r].find("rank 1: n=-1"), std::string::npos)
            << "rank " << r << " of " << what << ": no InvalidArgument naming rank 1's n: " << thrown[r];
    }
}

// Every registered sparse allreduce, P = 2..5: one rank passes a different n (smaller,
// larger or 0, which unchecked would send nothing and leave the others waiting), every rank
// throws MismatchError naming the ranks and both n's (no hang); then a
// consistent call on the same objects gives the U and residual of a fresh object (exact
// mode, dyadic data: independent of state and summation order).
TEST(SparseBaselines, DifferentLengthsThrowOnEveryRankThenRecover) {
  sparse::SparseOptions options;
  options.density = 0.05;
  options.exact = true;
  constexpr int64_t kN = 100;
  for (const std::string& name : sparse::sparse_allreduce_names())
    for (int P = 2; P <= 5; ++P)
      for (const int64_t odd_n : {P % 2 ? kN + 20 : kN - 20, int64_t{0}}) {
        const int odd_rank = P - 1;
        std::vector<std::string> errors(P);
        std::vector<sparse::SparseResult> reused(P), fresh(P);
        std::vector<std::vector<float>> reused_acc(P), fresh_acc(P);
        const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
          const int r = comm.rank();
          auto algorithm = sparse::make_sparse_allreduce(name, comm, options);
          const int64_t n = r == odd_rank ? odd_n : kN;
          std::vector<float> acc = gradient(r, 0, n, true);
          sparse::SparseResult result;
          try {
            algorithm->allreduce(acc.data(), n, result);
          } catch (const MismatchError& e) {
            errors[r] = e.what();
          }
          reused_acc[r] = gradient(r, 1, kN, true);
          algorithm->allreduce(reused_acc[r].data(), kN, reused[r]);
          auto clean = sparse::make_sparse_allreduce(name, comm, options);
          fresh_acc[r] = gradient(r, 1, kN, true);
          clean->allreduce(fresh_acc[r].data(), kN, fresh[r]);
        });
        const std::string what = cat(name, " (P=", P, ", n=", kN, ", rank ", odd_rank, " n=", odd_n, ")");
        ASSERT_EQ(error, "") << what;
        for (int r = 0; r < P; ++r) {
          EXPECT_NE(errors[r], "") << "rank " << r << " of " << what << ": no MismatchError";
          for (const std::string& part : {cat("rank ", odd_rank, ": n=", odd_n), cat("rank 0: n=", kN)})
            EXPECT_NE(errors[r].find(part), std::string::npos)
                << "rank " << r << " of " << what << ": message lacks \"" << part << "\": " << errors[r];
          expect_same_result(cat("rank ", r, " of ", what, ", consistent call after the mismatch"), reused[r],
                             fresh[r]);
          const int64_t e = first_difference(reused_acc[r], fresh_acc[r]);
          EXPECT_EQ(e, -1) << "rank " << r << " of " << what << ": residual after the mismatch differs at element "
                           << e;
        }
      }
}

TEST(SparseBaselines, InvalidOptionsAreRejected) {
  const std::string error = run_ranks(1, [&](Communicator& comm, const AbortFlag&) {
    sparse::SparseOptions options;
    options.density = 0.0;
    for (const char* name : {"dense", "topka", "topkdsa", "gtopk", "gaussiank"})
      EXPECT_THROW(sparse::make_sparse_allreduce(name, comm, options), InvalidArgument) << name << ", density 0";
  });
  EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace concord
