// CONCORD_TREE_CHUNKS (algorithms/tree_chunking.h): the chunk size the tree allreduces get
// per call. Pure checks of tree_chunked_problem() (a forced K gives exactly K chunks per tree,
// auto gives optimal_chunk_bytes(), other algorithms and "bytes" are unchanged), then the
// runtime's Executor on the in-process transport: with a forced K the transport counts
// exactly 2 (P - 1) K messages per tree (the cost model's count for that chunk size), with
// auto the count of K_opt chunks, and the results are right. select_algorithm's per-entry
// problems (ProblemForEntry).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/registry.h"
#include "algorithms/tree_chunking.h"
#include "common/config.h"
#include "common/enforce.h"
#include "common/timeline.h"
#include "patterns/chunking.h"
#include "rank_runner.h"
#include "runtime/executor.h"
#include "runtime/tensor_queue.h"
#include "sim/simulator.h"
#include "sim/topology.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::run_ranks;

const char* const kTrees[] = {"tree", "double_tree", "overlapped_tree", "overlapped_double_tree"};

Problem float_problem(int P, size_t count) {
  Problem problem;
  problem.ranks = P;
  problem.count = count;
  problem.element_size = 4;
  return problem;
}

// Chunks tree 0 of `algorithm` pipelines `problem` in.
int tree0_chunks(const std::string& algorithm, const Problem& problem) {
  const size_t share = patterns::segment(problem.count, tree_count(algorithm), 0).count;
  return patterns::ChunkPlan::make(share, problem.element_size, problem.chunk_bytes).chunks;
}

TEST(TreeChunking, ForcedKGivesKChunksPerTree) {
  for (const char* name : kTrees) {
    for (int64_t K : {1, 2, 3, 7, 16}) {
      for (size_t count : {size_t(2 * K * K), size_t{1000}, size_t{100003}}) {
        const Problem chosen = tree_chunked_problem(name, float_problem(5, count), K, CostParams{});
        EXPECT_EQ(tree0_chunks(name, chosen), K) << name << " K=" << K << " n=" << count;
      }
    }
  }
}

TEST(TreeChunking, FewElementsGiveAtMostKEqualChunks) {
  const Problem chosen = tree_chunked_problem("tree", float_problem(3, 10), 6, CostParams{});
  EXPECT_EQ(chosen.chunk_bytes, 2u * 4) << "ceil(10 / 6) elements per chunk";
  EXPECT_EQ(tree0_chunks("tree", chosen), 5) << "tree P=3 n=10 K=6";
}

TEST(TreeChunking, AutoIsCCubeOptimalChunkBytes) {
  CostParams params;
  params.alpha = 1e-6;
  params.beta = 1e-9;
  for (int P : {2, 4, 9, 16}) {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
      const Problem problem = float_problem(P, count);
      const Problem chosen = tree_chunked_problem("overlapped_tree", problem, kTreeChunksAuto, params);
      EXPECT_EQ(chosen.chunk_bytes, optimal_chunk_bytes(problem, params)) << "P=" << P << " n=" << count;
      EXPECT_EQ(static_cast<size_t>(tree0_chunks("overlapped_tree", chosen)), overlapped_tree_chunks(problem, params))
          << "P=" << P << " n=" << count;
      // The double tree: K_opt of its half.
      Problem half = problem;
      half.count = patterns::segment(count, 2, 0).count;
      EXPECT_EQ(tree_chunked_problem("overlapped_double_tree", problem, kTreeChunksAuto, params).chunk_bytes,
                optimal_chunk_bytes(half, params))
          << "P=" << P << " n=" << count;
    }
  }
}

// The default (kTreeChunksTurnaround): the overlapped trees take C-Cube's
// K_opt exactly where it has more chunks than the byte chunking, so the simulated gradient
// turnaround (sim::gradient_turnaround, step by step) is never later than with either
// choice; the non-overlapped trees keep the byte chunking. The sweep must take both
// branches (small buffers: K_opt; 128 MiB at the default intra-node constants: bytes).
TEST(TreeChunking, TurnaroundDefaultTakesKOptWhereItTurnsTheFirstChunkAroundSooner) {
  const CostParams params;
  EXPECT_EQ(Config{}.tree_chunks, kTreeChunksTurnaround) << "the default setting";
  int took_kopt = 0, kept_bytes = 0;
  for (int P : {2, 4, 8, 16}) {
    const sim::Topology topology = sim::Topology::from_params(P, P, params);  // one node: intra constants
    for (size_t count : {size_t{1} << 16, size_t{1} << 18, size_t{1} << 20, size_t{1} << 25}) {
      const Problem problem = float_problem(P, count);
      for (const char* name : {"overlapped_tree", "overlapped_double_tree"}) {
        const std::string where = std::string(name) + " P=" + std::to_string(P) + " n=" + std::to_string(count);
        const Problem chosen = tree_chunked_problem(name, problem, kTreeChunksTurnaround, params);
        const Problem kopt = tree_chunked_problem(name, problem, kTreeChunksAuto, params);
        EXPECT_EQ(chosen.chunk_bytes, std::min(problem.chunk_bytes, kopt.chunk_bytes)) << where;
        (chosen.chunk_bytes < problem.chunk_bytes ? took_kopt : kept_bytes) += 1;
        const double turnaround = sim::gradient_turnaround(name, chosen, topology, params.gamma);
        EXPECT_LE(turnaround, sim::gradient_turnaround(name, problem, topology, params.gamma) * (1 + 1e-9)) << where;
        EXPECT_LE(turnaround, sim::gradient_turnaround(name, kopt, topology, params.gamma) * (1 + 1e-9)) << where;
      }
      for (const char* name : {"tree", "double_tree"})
        EXPECT_EQ(tree_chunked_problem(name, problem, kTreeChunksTurnaround, params).chunk_bytes, problem.chunk_bytes)
            << name << " P=" << P << " n=" << count;
    }
  }
  EXPECT_GT(took_kopt, 0) << "no size took K_opt";
  EXPECT_GT(kept_bytes, 0) << "no size kept the byte chunking";
}

TEST(TreeChunking, OtherAlgorithmsBytesModeAndEmptyAreUnchanged) {
  const Problem problem = float_problem(4, 5000);
  for (const auto& entry : allreduce_algorithms()) {
    const bool tree = tree_count(entry.name) > 0;
    EXPECT_EQ(tree_chunked_problem(entry.name, problem, 3, CostParams{}).chunk_bytes != problem.chunk_bytes, tree)
        << entry.name;
    EXPECT_EQ(tree_chunked_problem(entry.name, problem, kTreeChunksFromBytes, CostParams{}).chunk_bytes,
              problem.chunk_bytes)
        << entry.name;
  }
  EXPECT_EQ(tree_chunked_problem("tree", float_problem(4, 0), 3, CostParams{}).chunk_bytes, problem.chunk_bytes);
  EXPECT_THROW(tree_chunked_problem("tree", problem, -3, CostParams{}), InvalidArgument);
}

TEST(TreeChunking, SelectionJudgesEachEntryOnItsOwnProblem) {
  const Problem problem = float_problem(6, 1 << 20);
  // An adjustment that makes one entry's problem empty (cost 0) must make it the choice.
  for (const char* favourite : {"tree", "recursive_doubling"}) {
    const ProblemForEntry problem_for = [&](const std::string& name, const Problem& p) {
      Problem adjusted = p;
      if (name == favourite) adjusted.count = 0;
      return adjusted;
    };
    EXPECT_EQ(select_algorithm(allreduce_algorithms(), problem, CostParams{}, "", problem_for).name, favourite)
        << "P=6 n=" << problem.count;
  }
  // The executor's adjustment: with K_opt the overlapped tree is priced at its own chunks.
  CostParams params;
  const ProblemForEntry tree_chunks = [&](const std::string& name, const Problem& p) {
    return tree_chunked_problem(name, p, kTreeChunksAuto, params);
  };
  const auto& chosen = select_algorithm(allreduce_algorithms(), problem, params, "", tree_chunks);
  double best = 1e300;
  for (const auto& entry : allreduce_algorithms())
    if (entry.declines(tree_chunks(entry.name, problem)).empty())
      best = std::min(best, entry.cost(tree_chunks(entry.name, problem)).seconds(params));
  EXPECT_EQ(chosen.cost(tree_chunks(chosen.name, problem)).seconds(params), best) << chosen.name << " P=6";
}

// Runs one allreduce (sum) of `count` float32 elements through an Executor on each of P
// in-process ranks with `config`; returns "" or the first failure, and the messages sent
// summed over ranks in `messages`.
std::string run_executor(int P, size_t count, const Config& config, const CostParams& params, uint64_t& messages) {
  std::vector<uint64_t> sent(P, 0);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
    const int rank = comm.rank();
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i % 13));
    Timeline timeline;
    Executor executor(comm, config, params, {}, timeline);
    TensorQueue queue;
    TensorEntry entry;
    entry.request.rank = rank;
    entry.request.name = "grad";
    entry.request.shape = {static_cast<int64_t>(count)};
    entry.input = TensorView{data.data(), DataType::kFloat32, {static_cast<int64_t>(count)}};
    entry.output = entry.input;
    entry.handle = std::make_shared<HandleState>();
    auto handle = entry.handle;
    queue.push(std::move(entry));
    Response response;
    response.names = {"grad"};
    response.sizes = {static_cast<int64_t>(count)};
    comm.reset_counters();
    executor.execute(response, queue);
    handle->wait();
    sent[rank] = comm.counters().messages_sent;
    const float ranks_sum = static_cast<float>(P * (P + 1) / 2);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != ranks_sum * static_cast<float>(i % 13)) {
        std::ostringstream what;
        what << "rank " << rank << " " << config.allreduce_algorithm << " P=" << P << " n=" << count << ": element "
             << i << " is " << data[i];
        throw std::runtime_error(what.str());
      }
    }
  });
  messages = 0;
  for (uint64_t m : sent) messages += m;
  return error;
}

TEST(TreeChunking, ExecutorSendsExactlyKChunksPerTreeEdge) {
  for (const char* name : kTrees) {
    for (int P : {2, 3, 5, 8}) {
      for (int64_t K : {1, 3, 8}) {
        Config config;
        config.allreduce_algorithm = name;
        config.tree_chunks = K;
        const size_t count = 4099;
        uint64_t messages = 0;
        const std::string error = run_executor(P, count, config, CostParams{}, messages);
        ASSERT_EQ(error, "") << name << " P=" << P << " K=" << K;
        const uint64_t per_tree = 2ull * (P - 1) * static_cast<uint64_t>(K);
        EXPECT_EQ(messages, per_tree * tree_count(name)) << name << " P=" << P << " n=" << count << " K=" << K;
        const Problem chosen = tree_chunked_problem(name, float_problem(P, count), K, CostParams{});
        EXPECT_EQ(messages, find_algorithm(allreduce_algorithms(), name).cost(chosen).total_messages_sent)
            << name << " P=" << P << " n=" << count << " K=" << K;
      }
    }
  }
}

TEST(TreeChunking, ExecutorAutoSendsKOptChunks) {
  CostParams params;
  params.alpha = 1e-6;
  params.beta = 1e-9;
  const int P = 4;
  const size_t count = 100000;
  Config config;
  config.allreduce_algorithm = "overlapped_tree";
  config.tree_chunks = kTreeChunksAuto;
  uint64_t messages = 0;
  ASSERT_EQ(run_executor(P, count, config, params, messages), "");
  const size_t k_opt = overlapped_tree_chunks(float_problem(P, count), params);
  ASSERT_GT(k_opt, 1u) << "the constants must make K_opt > 1 for the test to mean something";
  EXPECT_EQ(messages, 2ull * (P - 1) * k_opt) << "overlapped_tree P=4 n=" << count << " K_opt=" << k_opt;
}

}  // namespace
}  // namespace concord
