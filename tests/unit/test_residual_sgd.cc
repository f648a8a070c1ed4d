// ResidualSgd (src/sparse/residual_sgd.h) on the in-process transport: dense warm-up steps
// average the gradient and leave the residual at zero; sparse steps apply exactly the
// sparse allreduce's U (paper form: w -= U with lr folded into acc; reference form: the
// dense U handed back), weights stay identical on every rank, and the residuals conserve
// sum_i eps_i + P U = sum_i (eps_i + lr g_i). Messages name rank, P, n, step and element.
#include <gtest/gtest.h>

#include <cmath>

#include "concord/errors.h"
#include "oktopk_runner.h"
#include "sparse/residual_sgd.h"

namespace concord::sparse {
namespace {

using testing_util::cat;

struct StepRecord {
  std::vector<float> acc;       // eps + lr g before the step
  std::vector<float> residual;  // eps after
  std::vector<float> update;    // dense U (or the weights' decrease)
  std::vector<float> weights;   // after the step (paper form)
  SparseResult result;
};

void run_and_check(int P, int64_t n, bool paper_form) {
  const int warmup = 2, steps = 6;
  const float lr = paper_form ? 0.5f : 1.0f;
  const auto gradient = testing_util::integer_gradient(7u);
  std::vector<std::vector<StepRecord>> records(steps, std::vector<StepRecord>(P));
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    const int rank = comm.rank();
    SparseOptions options;
    options.density = 0.05;
    OkTopk oktopk(comm, options);
    ResidualSgd sgd(oktopk, comm, n, warmup);
    std::vector<float> g(n), weights(n, 100.0f), averaged(n);
    for (int t = 0; t < steps; ++t) {
      gradient(rank, t, g);
      StepRecord& record = records[t][rank];
      record.acc = sgd.residual();
      for (int64_t j = 0; j < n; ++j) record.acc[j] += lr * g[j];
      if (paper_form) {
        const std::vector<float> before = weights;
        sgd.sgd_step(g.data(), lr, weights.data());
        record.update.resize(n);
        for (int64_t j = 0; j < n; ++j) record.update[j] = before[j] - weights[j];
      } else {
        sgd.average(g.data(), averaged.data());
        record.update = averaged;
      }
      record.weights = weights;
      record.residual = sgd.residual();
      record.result = sgd.last_result();
    }
  });
  ASSERT_EQ(failure, "") << "P=" << P << " n=" << n;

  std::vector<float> g(n);
  for (int t = 0; t < steps; ++t)
    for (int rank = 0; rank < P; ++rank) {
      const StepRecord& r = records[t][rank];
      const std::string at = cat("P=", P, " n=", n, " step=", t, " rank=", rank, paper_form ? " paper" : " reference");
      EXPECT_EQ(r.weights, records[t][0].weights) << at << ": weights differ from rank 0's";
      if (t < warmup) {
        for (int64_t j = 0; j < n; ++j) {
          float sum = 0;
          for (int q = 0; q < P; ++q) {
            gradient(q, t, g);
            sum += lr * g[j];
          }
          // Weights: 100 - (100 - x) may round; compare the mean itself in the reference form.
          if (paper_form) {
            EXPECT_NEAR(r.update[j], sum / static_cast<float>(P), 1e-4) << at << " warm-up element " << j;
          } else {
            EXPECT_EQ(r.update[j], sum / static_cast<float>(P)) << at << " warm-up element " << j;
          }
          EXPECT_EQ(r.residual[j], 0.0f) << at << " warm-up residual element " << j;
        }
        continue;
      }
      std::vector<float> dense(n, 0.0f);
      for (size_t e = 0; e < r.result.indices.size(); ++e) dense[r.result.indices[e]] = r.result.values[e];
      for (int64_t j = 0; j < n; ++j) {
        if (paper_form) {
          EXPECT_NEAR(r.update[j], dense[j], 1e-4) << at << " element " << j;
        } else {
          EXPECT_EQ(r.update[j], dense[j]) << at << " element " << j;
        }
      }
      if (rank == 0)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0, eps = 0, magnitude = 0;
          for (int q = 0; q < P; ++q) {
            acc += records[t][q].acc[j];
            eps += records[t][q].residual[j];
            magnitude += std::fabs(records[t][q].acc[j]);
          }
          EXPECT_NEAR(eps + P * static_cast<double>(dense[j]), acc, 4.0 * P * 0x1p-24 * magnitude)
              << at << " conservation element " << j;
        }
    }
}

TEST(ResidualSgd, PaperFormAppliesSparseUpdateAfterDenseWarmup) {
  for (int P : {1, 3, 4}) run_and_check(P, 300, true);
}

TEST(ResidualSgd, ReferenceFormReturnsDenseAveragedUpdate) {
  for (int P : {1, 2, 5}) run_and_check(P, 300, false);
}

TEST(ResidualSgd, RejectsNegativeArguments) {
  const std::string failure = testing_util::run_ranks(1, [&](Communicator& comm, const testing_util::AbortFlag&) {
    OkTopk oktopk(comm, SparseOptions{});
    EXPECT_THROW(ResidualSgd(oktopk, comm, -1), InvalidArgument);
    EXPECT_THROW(ResidualSgd(oktopk, comm, 10, -1), InvalidArgument);
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace concord::sparse
