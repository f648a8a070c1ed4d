// The simulator as a model: closed forms agree with the step-by-step engine at small P, the
// known shape of the algorithm landscape holds (latency-bound algorithms win small messages
// at large P, bandwidth-optimal ones win large messages at small P), a P = 32768 tree is
// simulated step by step, and the sweep and validation front ends work on small inputs.
// These assert model properties, never timings of this machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "concord/errors.h"
#include "patterns/recursive_doubling.h"
#include "sim/sweep.h"
#include "sim/validate.h"

namespace concord::sim {
namespace {

CostParams params() {
  CostParams p;  // the library defaults: explicit so the test does not read the environment
  p.alpha = 4e-6;
  p.beta = 1.0 / 4e9;
  p.gamma = 1.0 / 4e9;
  p.inter_alpha = 30e-6;
  p.inter_beta = 1.0 / 1.25e9;
  return p;
}

double step_by_step(const std::string& name, const Problem& problem, const Topology& topology) {
  SimOptions options;
  options.force_step = true;
  return predict(find_simulated(name), problem, topology, params().gamma, options).seconds;
}

double closed_form(const std::string& name, const Problem& problem, const Topology& topology) {
  SimOptions options;
  options.force_closed = true;
  return predict(find_simulated(name), problem, topology, params().gamma, options).seconds;
}

// Relative tolerance of each closed form against the engine (header of sim/closed_form.h):
// the ring and the halving/doubling family are exact up to uneven segments (the closed
// forms price the largest one everywhere); the trees ignore some start-up overlap.
double tolerance(const std::string& name) {
  if (name == "ring" || name == "recursive_doubling" || name == "halving_doubling") return 1e-3;
  return 0.10;
}

TEST(SimClosedForm, EqualsStepByStepAtSmallP) {
  const CostParams p = params();
  for (const auto& model : simulated_algorithms()) {
    if (model.name == "hierarchical") continue;  // covered below on a two-level topology
    for (int P = 2; P <= 64; P *= 2) {
      for (const size_t bytes : {size_t{4}, size_t{4096}, size_t{1} << 20, size_t{6} << 20}) {
        const Topology topology = Topology::flat(P, {p.alpha, p.beta});
        const Problem problem = allreduce_problem(bytes, topology, size_t{1} << 17);
        const double step = step_by_step(model.name, problem, topology);
        const double closed = closed_form(model.name, problem, topology);
        EXPECT_NEAR(closed, step, tolerance(model.name) * step)
            << model.name << " P=" << P << " n=" << bytes << " bytes";
      }
    }
  }
}

TEST(SimClosedForm, RingIsExactForAnyP) {
  const CostParams p = params();
  for (int P = 2; P <= 20; ++P)
    for (const size_t bytes : {size_t{4}, size_t{1000}, size_t{3} << 20}) {
      const Topology topology = Topology::flat(P, {p.alpha, p.beta});
      const Problem problem = allreduce_problem(bytes, topology, size_t{1} << 17);
      const double step = step_by_step("ring", problem, topology);
      EXPECT_NEAR(closed_form("ring", problem, topology), step, 1e-4 * step) << "ring P=" << P << " n=" << bytes;
    }
}

TEST(SimClosedForm, HierarchicalOnTwoLevelTopology) {
  const CostParams p = params();
  for (const int R : {2, 4, 8})
    for (const int nodes : {2, 4, 8})
      for (const size_t bytes : {size_t{4}, size_t{64} << 10, size_t{4} << 20}) {
        const Topology topology = Topology::from_params(R * nodes, R, p);
        const Problem problem = allreduce_problem(bytes, topology, size_t{1} << 17);
        const double step = step_by_step("hierarchical", problem, topology);
        EXPECT_NEAR(closed_form("hierarchical", problem, topology), step, 0.10 * step)
            << "hierarchical R=" << R << " nodes=" << nodes << " n=" << bytes;
      }
}

double predicted(const std::string& name, size_t bytes, int P) {
  const Topology topology = Topology::from_params(P, 1, params());
  return predict(find_simulated(name), allreduce_problem(bytes, topology), topology, params().gamma).seconds;
}

TEST(SimModel, LatencyBoundAlgorithmsWinSmallMessagesAtLargeP) {
  for (const int P : {1024, 32768})
    for (const size_t bytes : {size_t{4}, size_t{1024}}) {
      const double ring = predicted("ring", bytes, P);
      EXPECT_LT(predicted("tree", bytes, P), ring) << "tree vs ring P=" << P << " n=" << bytes;
      EXPECT_LT(predicted("recursive_doubling", bytes, P), ring)
          << "recursive_doubling vs ring P=" << P << " n=" << bytes;
    }
}

TEST(SimModel, BandwidthOptimalAlgorithmsWinLargeMessagesAtSmallP) {
  for (const int P : {2, 4, 8})
    for (const size_t bytes : {size_t{64} << 20, size_t{1} << 30}) {
      const double best = std::min(predicted("ring", bytes, P), predicted("halving_doubling", bytes, P));
      for (const char* other : {"tree", "recursive_doubling", "double_tree"})
        EXPECT_LT(best, predicted(other, bytes, P))
            << "ring/halving_doubling vs " << other << " P=" << P << " n=" << bytes;
    }
}

TEST(SimModel, TreeAt32768RanksIsSimulatedStepByStep) {
  const Topology topology = Topology::from_params(32768, 1, params());
  const Problem problem = allreduce_problem(size_t{4} << 20, topology, size_t{1} << 19);  // 8 chunks
  const Prediction prediction =
      predict(find_simulated("tree"), problem, topology, params().gamma, SimOptions{.max_messages = uint64_t{1} << 20});
  EXPECT_EQ(prediction.method, Method::kStepByStep);
  EXPECT_EQ(prediction.detail.traffic.total_messages_sent, 2u * 32767 * 8);
  EXPECT_EQ(prediction.detail.events, 2u * prediction.messages);
  EXPECT_GT(prediction.seconds, 0);
}

// C-Cube: with the broadcast chained behind the reduction, the first chunk is final on every
// rank after about 2 log P chunk steps instead of a whole reduce phase plus log P steps.
TEST(SimModel, OverlappedTreeTurnsTheFirstChunkAroundFasterAtP64) {
  const Topology topology = Topology::from_params(64, 1, params());
  const Problem problem = allreduce_problem(size_t{64} << 20, topology);  // 128 chunks of 512 KiB
  for (const std::string tree : {"tree", "double_tree"}) {
    const std::string overlapped = "overlapped_" + tree;
    const double baseline = gradient_turnaround(tree, problem, topology, params().gamma);
    const double cube = gradient_turnaround(overlapped, problem, topology, params().gamma);
    EXPECT_GT(cube, 0) << overlapped << " P=64 n=64 MiB";
    EXPECT_LT(5 * cube, baseline) << overlapped << " vs " << tree << " P=64 n=64 MiB: turnaround " << cube << " s vs "
                                  << baseline << " s";
    const double total = predicted(overlapped, size_t{64} << 20, 64);
    EXPECT_LT(cube, total) << overlapped << " P=64 n=64 MiB: turnaround after the end";
    EXPECT_LT(total, predicted(tree, size_t{64} << 20, 64)) << overlapped << " vs " << tree << " total P=64";
  }
  const Topology one = Topology::from_params(1, 1, params());
  EXPECT_EQ(gradient_turnaround("overlapped_tree", allreduce_problem(1024, one), one, params().gamma), 0);
  EXPECT_THROW(gradient_turnaround("ring", problem, topology, params().gamma), InvalidArgument);
}

TEST(SimSweep, CoversEveryPointAndPicksTheFastest) {
  SweepSpec spec;
  spec.sizes = geometric_sizes(4, 4 << 20, 32);
  spec.ranks = power_of_two_ranks(2, 256);
  const auto rows = run_sweep(spec, params());
  const size_t flat_models = simulated_algorithms().size() - 1;  // hierarchical declines on a flat switch
  ASSERT_EQ(rows.size(), spec.sizes.size() * spec.ranks.size() * flat_models);
  const auto best = best_per_point(rows);
  ASSERT_EQ(best.size(), spec.sizes.size() * spec.ranks.size());
  for (const SweepRow& b : best) {
    for (const SweepRow& row : rows) {
      if (row.bytes != b.bytes || row.ranks != b.ranks) continue;
      EXPECT_LE(b.seconds, row.seconds) << "best " << b.algorithm << " vs " << row.algorithm << " P=" << b.ranks
                                        << " n=" << b.bytes;
    }
  }
}

TEST(SimValidate, ReadsBenchJsonAndComparesModelledAlgorithms) {
  const auto path = std::filesystem::temp_directory_path() / "concord_sim_validate_test.json";
  {
    std::ofstream out(path);
    out << R"({"records": [
      {"collective": "allreduce", "algorithm": "ring", "size": 1048576, "in_place": true, "time": 500.0, "P": 4},
      {"collective": "allreduce", "algorithm": "mpi", "size": 1048576, "in_place": true, "time": 400.0, "P": 4},
      {"collective": "allgather", "algorithm": "ring", "size": 1048576, "in_place": true, "time": 300.0, "P": 4},
      {"collective": "allreduce", "algorithm": "tree", "size": 4, "in_place": false, "time": 20.0, "P": 2}]})";
  }
  const auto measurements = read_measurements(path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(measurements.size(), 2u) << "mpi and allgather records must be skipped";
  EXPECT_EQ(measurements[0].algorithm, "ring");
  EXPECT_DOUBLE_EQ(measurements[0].seconds, 500e-6);
  EXPECT_FALSE(measurements[1].in_place);
  const auto rows = validate(measurements, params());
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_GT(row.predicted_seconds, 0) << row.measured.algorithm;
    EXPECT_NEAR(row.relative_error, (row.predicted_seconds - row.measured.seconds) / row.measured.seconds, 1e-12)
        << row.measured.algorithm;
  }
  // Tree at P=2 and 4 bytes on one node: up then down, alpha + 4 beta (+ 4 gamma) each way.
  const CostParams p = params();
  EXPECT_NEAR(rows[1].predicted_seconds, 2 * (p.alpha + 4 * p.beta) + 4 * p.gamma, 1e-12);
}

}  // namespace
}  // namespace concord::sim
