// Selection machinery: size-range rules (algorithms/size_rules.h), size buckets and the
// persisted autotune table (algorithms/autotune.h), measure_fastest on the in-process
// transport (with pick_winner, the CPU tie-break), and the config table's shared settings
// adopted by name (common/config.h).
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "algorithms/autotune.h"
#include "algorithms/cost_model.h"
#include "algorithms/size_rules.h"
#include "common/config.h"
#include "concord/errors.h"
#include "control/negotiator.h"
#include "kvstore/kvstore.h"
#include "rank_runner.h"

namespace concord {
namespace {

TEST(SizeRules, RangesPickTheirAlgorithm) {
  const auto rules = parse_size_rules("0-64K:recursive_doubling;64K-:ring", "CONCORD_ALLREDUCE_ALGORITHM");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rule_for(rules, 0), "recursive_doubling");
  EXPECT_EQ(rule_for(rules, 65535), "recursive_doubling");
  EXPECT_EQ(rule_for(rules, 65536), "ring");
  EXPECT_EQ(rule_for(rules, size_t{1} << 40), "ring");
  const auto middle = parse_size_rules("1K-1M:tree", "V");
  EXPECT_EQ(rule_for(middle, 1023), "") << "no rule covers it: selection as without rules";
  EXPECT_EQ(rule_for(middle, 1024), "tree");
  EXPECT_EQ(rule_for(middle, 1 << 20), "");
}

TEST(SizeRules, PlainNameAndAutoAndErrors) {
  EXPECT_EQ(rule_for(parse_size_rules("ring", "V"), 12345), "ring");
  EXPECT_TRUE(parse_size_rules("auto", "V").empty());
  EXPECT_TRUE(parse_size_rules("", "V").empty());
  for (const char* bad : {"0-64Q:ring", "64K-1K:ring", "0-64K:", "64K:ring", "x-1:ring"}) {
    try {
      parse_size_rules(bad, "CONCORD_ALLREDUCE_ALGORITHM");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("CONCORD_ALLREDUCE_ALGORITHM"), std::string::npos) << error.what();
    }
  }
}

TEST(Autotune, BucketsStartAtPowersOfTwo) {
  EXPECT_EQ(size_bucket(0), -1);
  EXPECT_EQ(size_bucket(1), 0);
  EXPECT_EQ(size_bucket(4095), 11);
  EXPECT_EQ(size_bucket(4096), 12);
  EXPECT_EQ(size_bucket(8191), 12);
  EXPECT_EQ(selection_key("allreduce", DataType::kFloat32, 4096), "allreduce/float32/2^12");
  EXPECT_EQ(selection_key("allreduce", DataType::kFloat16, 0), "allreduce/float16/0B");
}

TEST(Autotune, MeasuredSelectionAppliesFromTwoRanksAndOneByteUpToItsLimit) {
  Problem problem;
  problem.ranks = 2;
  problem.count = 1;
  EXPECT_TRUE(measured_selection_applies(problem));
  problem.count = kMaxMeasuredBytes / 4;
  EXPECT_TRUE(measured_selection_applies(problem));
  problem.count += 1;
  EXPECT_FALSE(measured_selection_applies(problem)) << "above kMaxMeasuredBytes: the cost model decides";
  problem.count = 0;
  EXPECT_FALSE(measured_selection_applies(problem)) << "0 bytes";
  problem.count = 1;
  problem.ranks = 1;
  EXPECT_FALSE(measured_selection_applies(problem)) << "1 rank";
}

// A measured choice counts only when the registry has it and it accepts the problem (as
// judged on problem_for's problem); otherwise it is measured anew ("").
TEST(Autotune, UsableMeasuredChoiceIsAKnownEntryThatAcceptsTheProblem) {
  std::vector<RegistryEntry<AllreduceAlgorithm>> entries(2);
  entries[0].name = "small_only";
  entries[0].declines = [](const Problem& p) { return p.bytes() > 100 ? std::string("too large") : std::string(); };
  entries[1].name = "any";
  entries[1].declines = [](const Problem&) { return std::string(); };
  AutotuneTable table("scope");
  table.set(selection_key("allreduce", DataType::kFloat32, 64), "small_only");
  table.set(selection_key("allreduce", DataType::kFloat32, 256), "small_only");
  table.set(selection_key("allreduce", DataType::kFloat32, 1024), "not_registered");
  table.set(selection_key("allreduce", DataType::kFloat32, 4096), "any");
  Problem problem;
  problem.ranks = 2;
  auto choice = [&](size_t bytes, const ProblemForEntry& problem_for = {}) {
    problem.count = bytes / 4;
    return usable_measured_choice(table, entries, problem, problem_for);
  };
  EXPECT_EQ(choice(64), "small_only");
  EXPECT_EQ(choice(256), "") << "the entry declines 256 B";
  EXPECT_EQ(choice(1024), "") << "not in the registry";
  EXPECT_EQ(choice(4096), "any");
  EXPECT_EQ(choice(16), "") << "no entry for the bucket";
  const ProblemForEntry larger = [](const std::string&, const Problem& p) {
    Problem q = p;
    q.count *= 4;
    return q;
  };
  EXPECT_EQ(choice(64, larger), "") << "judged on problem_for's problem (256 B), which it declines";
}

TEST(Autotune, TablePersistsNextToTheCostConstants) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("concord_autotune_" + std::to_string(::getpid())) / "cache";
  fs::remove_all(dir.parent_path());
  const std::string path = (dir / "cost_model.json").string();
  CostParams cost;
  cost.alpha = 7e-6;
  cost.save(path);
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all) << "cache directory not 0700";
  AutotuneTable table("ranks=2 nodes=1 chunk=524288 tree_chunks=0");
  table.set("allreduce/float32/2^2", "mpi");
  table.set("allreduce/float32/2^20", "ring");
  table.save(path);
  AutotuneTable other("ranks=4 nodes=1 chunk=524288 tree_chunks=0");
  other.set("allreduce/float32/2^2", "recursive_doubling");
  other.save(path);
  cost.beta = 3e-10;
  cost.save(path);  // rewriting the constants keeps the tables

  AutotuneTable loaded(table.scope());
  loaded.load(path);
  EXPECT_EQ(loaded.entries(), table.entries());
  AutotuneTable loaded_other(other.scope());
  loaded_other.load(path);
  EXPECT_EQ(loaded_other.find("allreduce/float32/2^2"), "recursive_doubling");
  EXPECT_EQ(loaded_other.find("allreduce/float32/2^3"), "");
  const CostParams reread = CostParams::load(path);
  EXPECT_EQ(reread.alpha, 7e-6);
  EXPECT_EQ(reread.beta, 3e-10);

  AutotuneTable decoded;
  decoded.decode(table.encode());
  EXPECT_EQ(decoded.entries(), table.entries());
  AutotuneTable missing("s");
  missing.load((dir / "none.json").string());
  EXPECT_TRUE(missing.entries().empty());
  { std::ofstream(path) << "{not json"; }
  EXPECT_THROW(loaded.load(path), InvalidArgument);
  fs::remove_all(dir.parent_path());
}

// The cache file never grows past what CostParams::load reads: saving drops the tables of
// another timing (never read again), and past the size limit keeps only its own table; the
// cost constants stay.
TEST(Autotune, SavingKeepsTheCacheFileReadable) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("concord_autotune_size_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = (dir / "cost_model.json").string();
  CostParams cost;
  cost.alpha = 9e-6;
  cost.save(path);
  AutotuneTable old_timing("ranks=2 nodes=1 chunk=524288 tree_chunks=0 timing=pair");
  old_timing.set("allreduce/float32/2^2", "mpi");
  old_timing.save(path);
  AutotuneTable current(autotune_scope(2, 1, 524288, 0));
  current.set("allreduce/float32/2^2", "ring");
  current.save(path);
  AutotuneTable reread_old(old_timing.scope());
  reread_old.load(path);
  EXPECT_TRUE(reread_old.entries().empty()) << "a table of another timing was kept";
  // Many configurations, each a full table (~9 KiB): together past the limit, and the file
  // must stay loadable.
  bool trimmed = false;
  for (int ranks = 3; ranks < 153; ++ranks) {
    AutotuneTable table(autotune_scope(ranks, 1, 524288, 0));
    for (const char* dtype : {"float32", "float16", "bfloat16", "float64", "int32"})
      for (int bucket = 0; bucket < 40; ++bucket)
        table.set(std::string("allreduce/") + dtype + "/2^" + std::to_string(bucket), "ring");
    const auto before = fs::file_size(path);
    table.save(path);
    ASSERT_LE(fs::file_size(path), CostParams::kMaxFileBytes) << ranks << " configurations";
    trimmed = trimmed || fs::file_size(path) < before;
  }
  EXPECT_TRUE(trimmed) << "the file never reached the limit: the test does not cover trimming";
  EXPECT_EQ(CostParams::load(path).alpha, 9e-6);
  AutotuneTable last(autotune_scope(152, 1, 524288, 0));
  last.load(path);
  EXPECT_EQ(last.find("allreduce/int32/2^39"), "ring");
  fs::remove_all(dir);
}

class MeasureFastest : public ::testing::TestWithParam<int> {};

TEST_P(MeasureFastest, EveryRankGetsRankZerosFastest) {
  const int P = GetParam();
  std::vector<size_t> winners(P, 99);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    const auto sleep = [](int us) { return [us] { std::this_thread::sleep_for(std::chrono::microseconds(us)); }; };
    std::vector<TuneCandidate> candidates = {
        {"slow", 1e-3, sleep(1500)}, {"fast", 1e-3, sleep(0)}, {"slower", 1e-3, sleep(3000)}};
    const TuneResult result = measure_fastest(comm, candidates);
    winners[comm.rank()] = result.winner;
    if (comm.rank() == 0) {
      ASSERT_EQ(result.seconds.size(), 3u);
      EXPECT_GE(result.seconds[0], 1.4e-3);
      EXPECT_LT(result.seconds[1], result.seconds[0]);
    }
  });
  ASSERT_EQ(failure, "");
  for (int r = 0; r < P; ++r) EXPECT_EQ(winners[r], 1u) << "rank " << r << " of " << P;
}

// Each rank's cost model predicts a different time per call (as when ranks read different
// cost-model files): without agreement the ranks would make different numbers of calls of
// a collective and hang; rank 0's counts are used everywhere.
TEST_P(MeasureFastest, RanksWithDifferentEstimatesMakeTheSameCalls) {
  const int P = GetParam();
  std::vector<int> calls(P, 0);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    const double estimate = 5e-4 * (comm.rank() + 1);  // 4, 2, 2, 1, ... calls per round
    std::vector<TuneCandidate> candidates = {{"barrier", estimate, [&] {
                                                ++calls[comm.rank()];
                                                comm.barrier();
                                              }}};
    measure_fastest(comm, candidates);
  });
  ASSERT_EQ(failure, "");
  // A warm-up, a probe and 3 rounds of rank 0's 2 ms / 0.5 ms calls (fewer if the probe
  // of its barrier took longer than 0.5 ms).
  EXPECT_GE(calls[0], 2 + 3 * 1);
  EXPECT_LE(calls[0], 2 + 3 * 4);
  for (int r = 1; r < P; ++r) EXPECT_EQ(calls[r], calls[0]) << "rank " << r << " of " << P;
}

TEST_P(MeasureFastest, DifferentCandidateListsFailOnEveryRank) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "a disagreement needs two ranks";
  std::vector<std::string> errors(P);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    std::vector<TuneCandidate> candidates = {{"ring", 1e-3, [] {}}};
    if (comm.rank() == P - 1) candidates.push_back({"tree", 1e-3, [] {}});
    try {
      measure_fastest(comm, candidates);
    } catch (const InternalError& error) {
      errors[comm.rank()] = error.what();
    }
  });
  ASSERT_EQ(failure, "");
  for (int r = 0; r < P; ++r)
    EXPECT_NE(errors[r].find("different candidate algorithms (rank 0: [\"ring\"]"), std::string::npos)
        << "rank " << r << " of " << P << ": '" << errors[r] << "'";
  EXPECT_NE(errors[P - 1].find("[\"ring\",\"tree\"]"), std::string::npos) << errors[P - 1];
}

// A call that takes far longer than the model's estimate (a loaded machine) is repeated
// only as often as fits the round's ~2 ms: measuring stays bounded in time.
TEST_P(MeasureFastest, SlowCallsAreRepeatedLessThanTheEstimateSays) {
  const int P = GetParam();
  std::vector<int> calls(P, 0);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    std::vector<TuneCandidate> candidates = {{"slow", 1e-6, [&] {
                                                ++calls[comm.rank()];
                                                std::this_thread::sleep_for(std::chrono::milliseconds(3));
                                              }}};
    measure_fastest(comm, candidates);
  });
  ASSERT_EQ(failure, "");
  for (int r = 0; r < P; ++r)
    EXPECT_EQ(calls[r], 2 + 3 * 1) << "rank " << r << " of " << P << ": a 3 ms call with a 1 us estimate";
}

// Successive halving: a candidate far slower than the fastest runs only the first 3 rounds;
// the close ones run 6 more, the same number of calls on every rank. A close one drops out
// only if all 3 of its 5 ms rounds overrun the other's median by 30% (1.5 ms), which a loaded
// CI machine does now and then: the measurement is repeated up to 3 times until both close
// ones reach the final rounds, and the far one must never reach them.
TEST_P(MeasureFastest, OnlyCloseContendersRunTheFinalRounds) {
  const int P = GetParam();
  bool both_close_ones_were_finalists = false;
  for (int attempt = 0; attempt < 3 && !both_close_ones_were_finalists; ++attempt) {
    std::vector<std::vector<int>> calls(P, std::vector<int>(3, 0));
    std::vector<size_t> winners(P, 99);
    const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
      const auto timed = [&](size_t i, int us) {
        return [&, i, us] {
          ++calls[comm.rank()][i];
          std::this_thread::sleep_for(std::chrono::microseconds(us));
        };
      };
      // One call per round each (2 ms estimates, 5 ms calls); "far" is 10x the others.
      std::vector<TuneCandidate> candidates = {
          {"close_a", 2e-3, timed(0, 5000)}, {"far", 2e-3, timed(1, 50000)}, {"close_b", 2e-3, timed(2, 5000)}};
      winners[comm.rank()] = measure_fastest(comm, candidates).winner;
    });
    ASSERT_EQ(failure, "");
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(calls[r][1], 2 + 3) << "rank " << r << " of " << P << ", attempt " << attempt
                                    << ": the slow candidate ran the final rounds";
      EXPECT_EQ(calls[r], calls[0]) << "rank " << r << " of " << P << " made other calls than rank 0";
      EXPECT_NE(winners[r], 1u) << "rank " << r;
      EXPECT_EQ(winners[r], winners[0]) << "rank " << r;
      for (const size_t close : {size_t{0}, size_t{2}})
        EXPECT_TRUE(calls[r][close] == 2 + 3 || calls[r][close] == 2 + 3 + 6)
            << "rank " << r << " of " << P << ": candidate " << close << " ran " << calls[r][close] << " calls";
    }
    both_close_ones_were_finalists = calls[0][0] == 2 + 3 + 6 && calls[0][2] == 2 + 3 + 6;
  }
  EXPECT_TRUE(both_close_ones_were_finalists)
      << P << " ranks: in 3 attempts, a close candidate never ran the final rounds";
}

// A candidate fast in one round and slow in every other one (bimodal) loses to a steady one
// that is faster in the median: medians decide, and the steady candidate, whose median is
// the lowest, is always a finalist although its best round is 2x the bimodal one's.
TEST_P(MeasureFastest, OneLuckyRoundDoesNotWin) {
  const int P = GetParam();
  std::vector<size_t> winners(P, 99);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    int bimodal_calls = 0;  // per rank: its own candidate objects
    std::vector<TuneCandidate> candidates = {
        {"bimodal", 2e-3,
         [&bimodal_calls] {  // warm-up, probe, then a 2 ms first round; 8 ms ever after
           ++bimodal_calls;
           std::this_thread::sleep_for(std::chrono::milliseconds(bimodal_calls == 3 ? 2 : 8));
         }},
        {"steady", 2e-3, [] { std::this_thread::sleep_for(std::chrono::milliseconds(4)); }}};
    winners[comm.rank()] = measure_fastest(comm, candidates).winner;
  });
  ASSERT_EQ(failure, "");
  for (int r = 0; r < P; ++r) EXPECT_EQ(winners[r], 1u) << "rank " << r << " of " << P << ": the lucky round won";
}

// The CPU clock of each round is the measuring thread's: a candidate that spins through its
// call uses about its wall time, one that sleeps almost none; rank 0 reports each
// candidate's CPU on the busiest rank (one that spins on the last rank only counts as
// spinning); rank 0's winner is pick_winner's on those numbers, and every rank agrees on it.
// (Which candidate that is depends on the machine's load, so it is not asserted.)
TEST_P(MeasureFastest, CpuTimePerCallIsMeasured) {
  const int P = GetParam();
  std::vector<size_t> winners(P, 99);
  const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    const auto spin = [] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
      while (std::chrono::steady_clock::now() < end) {
      }
    };
    const auto sleep = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    const bool last = comm.rank() == comm.size() - 1;
    std::vector<TuneCandidate> candidates = {
        {"sleeper", 2e-3, sleep}, {"spinner", 2e-3, spin}, {"spins_on_last_rank", 2e-3, last ? spin : sleep}};
    const TuneResult result = measure_fastest(comm, candidates);
    winners[comm.rank()] = result.winner;
    if (comm.rank() == 0) {
      ASSERT_EQ(result.cpu_seconds.size(), 3u);
      EXPECT_LT(result.cpu_seconds[0], 0.2 * result.seconds[0]) << "sleeper";
      EXPECT_GT(result.cpu_seconds[1], 5 * result.cpu_seconds[0]) << "spinner against sleeper";
      EXPECT_GT(result.cpu_seconds[2], 5 * result.cpu_seconds[0]) << "spinning on rank " << P - 1 << " only";
      EXPECT_EQ(result.winner, pick_winner(result.seconds, result.cpu_seconds, result.finalists))
          << "the winner is not the CPU tie-break's";
    } else {
      EXPECT_TRUE(result.cpu_seconds.empty()) << "rank " << comm.rank();
    }
  });
  ASSERT_EQ(failure, "");
  for (int r = 0; r < P; ++r) EXPECT_EQ(winners[r], winners[0]) << "rank " << r << " of " << P;
}

INSTANTIATE_TEST_SUITE_P(Ranks, MeasureFastest, ::testing::Values(1, 2, 3, 5),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

// Among finalists as fast as the fastest within kTuneTieBand, the least CPU wins; slower
// ones never do, however little CPU they use; non-finalists are ignored.
TEST(PickWinner, LeastCpuAmongTheEquallyFast) {
  //                      a      b      c      d
  const std::vector<double> seconds = {1.00, 1.03, 1.20, 0.99};
  const std::vector<double> cpu = {0.90, 0.30, 0.01, 0.95};
  EXPECT_EQ(pick_winner(seconds, cpu, {0, 1, 2, 3}), 1u) << "b: within 5% of d, least CPU of a, b, d";
  EXPECT_EQ(pick_winner(seconds, cpu, {0, 2, 3}), 0u) << "a: within 5% of d, less CPU than d; c is 21% slower";
  EXPECT_EQ(pick_winner(seconds, cpu, {2, 3}), 3u) << "d: c is slower than the band";
  EXPECT_EQ(pick_winner(seconds, cpu, {2}), 2u);
  EXPECT_EQ(pick_winner({1.0, 1.0}, {0.5, 0.5}, {1, 0}), 1u) << "a tie goes to the first finalist listed";
  EXPECT_THROW(pick_winner(seconds, cpu, {}), InvalidArgument);
}

TEST(ConfigTable, SharedSettingsAreAdoptedByName) {
  Config root;
  root.cycle_time_ms = 0.3;
  root.fusion_threshold_bytes = 12345;
  root.tree_chunks = kTreeChunksAuto;
  root.allreduce_algorithm = "0-64K:recursive_doubling;64K-:ring";
  root.autotune = false;                       // the default is on
  root.timeline_path = "/tmp/root_only.json";  // per rank: never adopted
  Config mine;
  const auto differed = adopt_shared_settings(mine, encode_shared_settings(root));
  EXPECT_EQ(mine.cycle_time_ms, 0.3);
  EXPECT_EQ(mine.fusion_threshold_bytes, 12345);
  EXPECT_EQ(mine.tree_chunks, kTreeChunksAuto);
  EXPECT_EQ(mine.allreduce_algorithm, root.allreduce_algorithm);
  EXPECT_FALSE(mine.autotune);
  EXPECT_EQ(mine.timeline_path, "");
  EXPECT_EQ(differed, (std::vector<std::string>{"CONCORD_CYCLE_TIME", "CONCORD_FUSION_THRESHOLD", "CONCORD_TREE_CHUNKS",
                                                "CONCORD_ALLREDUCE_ALGORITHM", "CONCORD_AUTOTUNE"}));
  // By name: the order of the keys, or a key this build does not know, changes nothing.
  Config again;
  adopt_shared_settings(again, R"({"CONCORD_FROM_THE_FUTURE": "1", "CONCORD_RING_CHUNK_BYTES": "4096"})");
  EXPECT_EQ(again.ring_chunk_bytes, 4096);
  EXPECT_THROW(adopt_shared_settings(again, R"({"CONCORD_RING_CHUNK_BYTES": "0"})"), InvalidArgument);
}

// The table's default_value is the one place a default is written: Config() and the
// structs that carry a setting outside Config read it (a literal in any of them would differ
// here the day the table changes).
TEST(ConfigTable, DefaultsOutsideConfigAreTheTables) {
  const auto table_default = [](const std::string& name) {
    for (const auto& var : config_table())
      if (name == var.name) return std::string(var.default_value);
    ADD_FAILURE() << name << " is not a row of the table";
    return std::string();
  };
  const std::string chunk = table_default("CONCORD_RING_CHUNK_BYTES");
  EXPECT_EQ(std::to_string(default_chunk_bytes()), chunk) << "default_chunk_bytes()";
  EXPECT_EQ(std::to_string(Config().ring_chunk_bytes), chunk) << "Config::ring_chunk_bytes";
  EXPECT_EQ(std::to_string(Problem{}.chunk_bytes), chunk) << "Problem::chunk_bytes";
  EXPECT_EQ(std::to_string(kvstore::KVStoreOptions{}.chunk_bytes), chunk) << "KVStoreOptions::chunk_bytes";
  const NegotiatorOptions negotiator;
  EXPECT_EQ(std::to_string(negotiator.cache_capacity), table_default("CONCORD_CACHE_CAPACITY"));
  EXPECT_EQ(negotiator.stall_warning_seconds, std::stod(table_default("CONCORD_STALL_WARNING_TIME")));
  EXPECT_EQ(negotiator.stall_shutdown_seconds, std::stod(table_default("CONCORD_STALL_SHUTDOWN_TIME")));
  EXPECT_EQ(negotiator.stall_check, table_default("CONCORD_STALL_CHECK_DISABLE") == "0");
  EXPECT_EQ(Config().log_level, table_default("CONCORD_LOG_LEVEL"));
  EXPECT_EQ(Config().device, table_default("CONCORD_DEVICE"));
}

TEST(ConfigTable, EveryRowParsesItsDefault) {
  for (const auto& var : config_table()) {
    if (var.parse == nullptr) continue;
    Config config;
    EXPECT_NO_THROW(var.parse(config, var.default_value, var.name)) << var.name;
    if (var.shared != nullptr) {
      EXPECT_EQ(var.shared(config), var.shared(Config{})) << var.name << ": default differs";
    }
  }
}

}  // namespace
}  // namespace concord
