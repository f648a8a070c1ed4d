// The negotiator with its response cache (src/control/negotiator.h) over the in-process
// transport, as a training loop drives it: the same ~40 tensors (two of them request groups)
// every iteration, submitted by every rank in its own random order spread over several
// negotiate() calls (one call = one cycle), then empty calls until every tensor has been
// answered. Checked, at P = 1, 2, 3, 5, 8 and cache capacity 0 (off), 4 (smaller than the
// tensor set: evictions) and 1024:
//  - every rank receives identical response lists, cycle by cycle;
//  - every tensor is answered exactly once per iteration, with the size submitted in that
//    iteration (no stale cached response after a shape change);
//  - with the whole set cached, iterations after the first take the fast path only: the
//    coordinator is not used and every response comes from the cache;
//  - a tensor whose shape changes is INVALID: its entry is erased on every rank;
//  - one rank changing a cached tensor's shape yields the same ERROR response on every rank,
//    and the next iteration works again;
//  - a group is answered only once every rank has submitted it, all members in one cycle.
// Also: a shutdown flag from one rank stops every rank, and the stall inspector shuts
// everything down, naming the tensor and the missing rank, when one rank never submits a
// tensor the others did (cached and uncached).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "control/negotiator.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

constexpr int kIterations = 30;
constexpr int kShapeChangeIteration = 12;  // "t07" has another size from this iteration on
constexpr int kMismatchIteration = 20;     // the last rank submits "t09" with another size
constexpr int kSingles = 34;
const std::string kChanged = "t07";
const std::string kMismatched = "t09";

struct Spec {
  std::string name;
  int64_t base_size = 0;
  std::string group;  // first member's name, "" when not grouped
  int32_t group_size = 0;
};

// 34 single tensors and two groups of three: 40 tensors.
const std::vector<std::vector<Spec>>& units() {
  static const std::vector<std::vector<Spec>> all = [] {
    std::vector<std::vector<Spec>> out;
    for (int i = 0; i < kSingles; ++i) {
      char name[8];
      std::snprintf(name, sizeof name, "t%02d", i);
      out.push_back({Spec{name, 10 + i, "", 0}});
    }
    for (int g = 0; g < 2; ++g) {
      std::vector<Spec> members;
      const std::string first = "g" + std::to_string(g) + ".m0";
      for (int m = 0; m < 3; ++m)
        members.push_back(Spec{"g" + std::to_string(g) + ".m" + std::to_string(m), 100 + 10 * g + m, first, 3});
      out.push_back(members);
    }
    return out;
  }();
  return all;
}

const std::vector<Spec>& all_specs() {
  static const std::vector<Spec> all = [] {
    std::vector<Spec> out;
    for (const auto& unit : units()) out.insert(out.end(), unit.begin(), unit.end());
    return out;
  }();
  return all;
}

int64_t expected_size(const Spec& spec, int iteration) {
  if (spec.name == kChanged && iteration >= kShapeChangeIteration) return 500;
  return spec.base_size;
}

int64_t submitted_size(const Spec& spec, int iteration, int rank, int size) {
  if (spec.name == kMismatched && iteration == kMismatchIteration && size > 1 && rank == size - 1)
    return spec.base_size + 1;
  return expected_size(spec, iteration);
}

bool mismatch_expected(const std::string& name, int iteration, int size) {
  return name == kMismatched && iteration == kMismatchIteration && size > 1;
}

Request make_request(int rank, const Spec& spec, int64_t elements) {
  Request r;
  r.rank = rank;
  r.name = spec.name;
  r.type = CollectiveType::kAllreduce;
  r.dtype = DataType::kFloat32;
  r.shape = {elements};
  r.group = spec.group;
  r.group_size = spec.group_size;
  return r;
}

// What one rank saw; cycles run in lockstep, so cycle c is the same cycle on every rank.
struct RankRecord {
  std::vector<ResponseList> lists;                             // per cycle
  std::vector<int> iteration_of_cycle;                         // per cycle
  std::map<std::pair<int, std::string>, int> group_submitted;  // (iteration, group) -> cycle
  std::vector<CoordinationStats> stats;                        // at the end of each iteration
  std::vector<bool> gave_up;                                   // per iteration: not everything answered
  std::string error;                                           // exception thrown on this rank
};

std::string describe_stats(const CoordinationStats& s) {
  std::ostringstream out;
  out << "{cycles " << s.cycles << ", coordinator_rounds " << s.coordinator_rounds << ", cache_hits " << s.cache_hits
      << ", cache_misses " << s.cache_misses << ", invalidations " << s.invalidations << ", evictions " << s.evictions
      << "}";
  return out.str();
}

// Runs body(comm, record) on P in-process ranks. An exception on one rank is printed at once
// (the other ranks then block in a collective and the test times out, so the cause must be
// in the log) and recorded.
void run_world(int P, std::vector<RankRecord>& records, const std::function<void(Communicator&, RankRecord&)>& body) {
  records.assign(P, {});
  InProcessWorld::run(P, [&](Communicator& comm) {
    try {
      body(comm, records[comm.rank()]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d threw: %s\n", comm.rank(), e.what());
      records[comm.rank()].error = e.what();
    }
  });
}

// One rank's training loop: every iteration submits every unit, in a random order, spread
// over 1..4 negotiate() calls, then empty calls until every tensor was answered on every rank
// (decided by an AND over the ranks, so the ranks stay in lockstep whatever they receive).
void training_loop(Communicator& comm, RankRecord& record, uint32_t capacity, uint64_t seed) {
  const int rank = comm.rank(), size = comm.size();
  Negotiator negotiator(comm, NegotiatorOptions{capacity});
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(rank) * 104729);
  constexpr int kMaxCalls = 4, kMaxCyclesPerIteration = kMaxCalls + 40;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    std::vector<size_t> order(units().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    const int calls = 1 + static_cast<int>(rng() % kMaxCalls);
    std::vector<std::vector<Request>> per_call(calls);
    std::vector<std::vector<std::string>> groups_per_call(calls);
    for (size_t u : order) {
      const int call = static_cast<int>(rng() % static_cast<uint64_t>(calls));
      for (const Spec& spec : units()[u])  // a group's members always go together
        per_call[call].push_back(make_request(rank, spec, submitted_size(spec, iteration, rank, size)));
      if (units()[u][0].group_size > 1) groups_per_call[call].push_back(units()[u][0].group);
    }
    std::set<std::string> unanswered;
    for (const auto& spec : all_specs()) unanswered.insert(spec.name);
    for (int call = 0;; ++call) {
      const int cycle = static_cast<int>(record.lists.size());
      std::vector<Request> requests;
      if (call < calls) {
        requests = std::move(per_call[call]);
        for (const auto& group : groups_per_call[call]) record.group_submitted[{iteration, group}] = cycle;
      }
      record.lists.push_back(negotiator.negotiate(std::move(requests), false));
      record.iteration_of_cycle.push_back(iteration);
      for (const auto& response : record.lists.back().responses)
        for (const auto& name : response.names) unanswered.erase(name);
      const bool give_up = call + 1 >= kMaxCyclesPerIteration;  // same on every rank
      std::vector<uint64_t> done{call + 1 >= calls && unanswered.empty() ? 1u : 0u};
      comm.allreduce_bits(done, /*bitwise_and=*/true);
      if (done[0] != 0 || give_up) {
        record.gave_up.push_back(done[0] == 0);
        break;
      }
    }
    record.stats.push_back(negotiator.stats());
  }
}

struct LoopParam {
  int size;
  uint32_t capacity;
};

class NegotiatorCacheLoop : public ::testing::TestWithParam<LoopParam> {};

TEST_P(NegotiatorCacheLoop, RandomOrderEveryIteration) {
  const int P = GetParam().size;
  const uint32_t capacity = GetParam().capacity;
  const size_t tensors = all_specs().size();
  ASSERT_EQ(tensors, 40u);
  std::vector<RankRecord> records;
  run_world(P, records, [&](Communicator& comm, RankRecord& record) {
    training_loop(comm, record, capacity, 1000 * static_cast<uint64_t>(P) + capacity);
  });
  for (int r = 0; r < P; ++r) ASSERT_EQ(records[r].error, "") << "rank " << r << " threw";

  // 1. Identical response lists on every rank, cycle by cycle.
  const RankRecord& root = records[0];
  for (int r = 1; r < P; ++r) {
    ASSERT_EQ(records[r].lists.size(), root.lists.size()) << "rank " << r << ": number of cycles";
    for (size_t c = 0; c < root.lists.size(); ++c)
      ASSERT_EQ(records[r].lists[c], root.lists[c])
          << "rank " << r << " and rank 0 received different responses in cycle " << c << " (iteration "
          << root.iteration_of_cycle[c] << ")";
  }
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(records[r].stats.size(), size_t{kIterations}) << "rank " << r;
    for (int it = 0; it < kIterations; ++it)
      EXPECT_FALSE(records[r].gave_up[it])
          << "rank " << r << ", iteration " << it << ": some tensor still unanswered after many empty cycles";
  }

  // 2. Every tensor answered exactly once per iteration, with this iteration's size; groups
  //    whole, in one cycle, not before every rank submitted them.
  std::map<std::string, Spec> spec_of;
  for (const auto& spec : all_specs()) spec_of[spec.name] = spec;
  std::vector<std::map<std::string, int>> answered_in(kIterations);  // name -> cycle
  for (size_t c = 0; c < root.lists.size(); ++c) {
    const int it = root.iteration_of_cycle[c];
    EXPECT_FALSE(root.lists[c].shutdown) << "cycle " << c << " (iteration " << it << ")";
    for (const auto& response : root.lists[c].responses) {
      ASSERT_EQ(response.names.size(), 1u) << "cycle " << c << ": the negotiator answers single tensors";
      const std::string& name = response.names[0];
      const std::string where = "tensor '" + name + "', iteration " + std::to_string(it) + ", cycle " +
                                std::to_string(c) + " (P=" + std::to_string(P) + ", capacity " +
                                std::to_string(capacity) + ")";
      ASSERT_TRUE(spec_of.contains(name)) << where << ": unknown tensor";
      EXPECT_TRUE(answered_in[it].emplace(name, static_cast<int>(c)).second) << where << ": answered twice";
      const Spec& spec = spec_of[name];
      if (mismatch_expected(name, it, P)) {
        EXPECT_EQ(response.type, ResponseType::kError) << where << ": shapes differ between ranks";
        EXPECT_NE(response.error.find("Mismatched shape for tensor '" + name + "'"), std::string::npos)
            << where << ": " << response.error;
        EXPECT_NE(response.error.find("[" + std::to_string(P - 1) + "]"), std::string::npos)
            << where << ": the message must name rank " << P - 1 << ": " << response.error;
        continue;
      }
      EXPECT_EQ(response.type, ResponseType::kAllreduce) << where << ": " << response.error;
      EXPECT_EQ(response.sizes, std::vector<int64_t>{expected_size(spec, it)})
          << where << ": response carries the wrong size (stale cache entry?)";
      EXPECT_EQ(response.group, spec.group) << where;
    }
  }
  for (int it = 0; it < kIterations; ++it) {
    EXPECT_EQ(answered_in[it].size(), tensors) << "iteration " << it << ": not every tensor was answered";
    for (const auto& unit : units()) {
      if (unit[0].group_size <= 1) continue;
      const std::string& group = unit[0].group;
      int last_submission = -1;
      for (int r = 0; r < P; ++r) {
        auto found = records[r].group_submitted.find({it, group});
        ASSERT_NE(found, records[r].group_submitted.end()) << "rank " << r << " never submitted group " << group;
        last_submission = std::max(last_submission, found->second);
      }
      for (const auto& member : unit) {
        auto found = answered_in[it].find(member.name);
        if (found == answered_in[it].end()) continue;  // reported above
        EXPECT_GE(found->second, last_submission)
            << "iteration " << it << ": member '" << member.name << "' of group '" << group << "' answered in cycle "
            << found->second << " before the last rank submitted the group (cycle " << last_submission << ")";
        auto first = answered_in[it].find(unit[0].name);
        if (first != answered_in[it].end()) {
          EXPECT_EQ(found->second, first->second)
              << "iteration " << it << ": members '" << member.name << "' and '" << unit[0].name << "' of group '"
              << group << "' answered in different cycles";
        }
      }
    }
  }

  // 3. Counters.
  for (int r = 0; r < P; ++r) {
    const auto& stats = records[r].stats;
    const CoordinationStats& last = stats.back();
    EXPECT_EQ(last.cycles, records[r].lists.size()) << "rank " << r;
    for (int it = 0; it < kIterations; ++it) {
      // Counters every rank must agree on (each cycle is the same on every rank).
      const CoordinationStats& mine = stats[it];
      const CoordinationStats& r0 = records[0].stats[it];
      EXPECT_EQ(mine.coordinator_rounds, r0.coordinator_rounds) << "rank " << r << ", iteration " << it;
      EXPECT_EQ(mine.cache_hits, r0.cache_hits) << "rank " << r << ", iteration " << it;
      EXPECT_EQ(mine.invalidations, r0.invalidations) << "rank " << r << ", iteration " << it;
      EXPECT_EQ(mine.evictions, r0.evictions) << "rank " << r << ", iteration " << it;
    }
    if (capacity == 0) {
      EXPECT_EQ(last.cache_hits, 0u) << "rank " << r << ": cache disabled";
      EXPECT_EQ(last.invalidations, 0u) << "rank " << r << ": cache disabled";
      EXPECT_EQ(last.evictions, 0u) << "rank " << r << ": cache disabled";
      EXPECT_EQ(last.cache_misses, kIterations * tensors) << "rank " << r << ": every request goes to rank 0";
      continue;
    }
    if (capacity < tensors) {
      EXPECT_GT(last.evictions, 0u) << "rank " << r << ": capacity " << capacity << " < " << tensors << " tensors";
      continue;
    }
    EXPECT_EQ(last.evictions, 0u) << "rank " << r << ": everything fits";
    // With everything cached, only these iterations need the coordinator: the first, the one
    // that changes t07's shape, and (P > 1) the mismatch of t09 and the one re-caching it.
    const std::set<int> slow = P > 1
                                   ? std::set<int>{0, kShapeChangeIteration, kMismatchIteration, kMismatchIteration + 1}
                                   : std::set<int>{0, kShapeChangeIteration};
    for (int it = 1; it < kIterations; ++it) {
      const CoordinationStats& before = stats[it - 1];
      const CoordinationStats& after = stats[it];
      const std::string where = "rank " + std::to_string(r) + ", iteration " + std::to_string(it) + ": before " +
                                describe_stats(before) + ", after " + describe_stats(after);
      const uint64_t invalidated = after.invalidations - before.invalidations;
      if (it == kShapeChangeIteration || (it == kMismatchIteration && P > 1))
        EXPECT_EQ(invalidated, 1u) << where << ": one cached tensor changed its parameters";
      else EXPECT_EQ(invalidated, 0u) << where;
      if (slow.contains(it)) {
        EXPECT_GT(after.coordinator_rounds, before.coordinator_rounds) << where << ": a changed tensor needs rank 0";
        continue;
      }
      EXPECT_EQ(after.coordinator_rounds, before.coordinator_rounds) << where << ": fast path only";
      EXPECT_EQ(after.cache_misses, before.cache_misses) << where << ": fast path only";
      EXPECT_EQ(after.cache_hits - before.cache_hits, tensors) << where << ": every response from the cache";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndCapacities, NegotiatorCacheLoop,
                         ::testing::Values(LoopParam{1, 0}, LoopParam{1, 4}, LoopParam{1, 1024}, LoopParam{2, 0},
                                           LoopParam{2, 4}, LoopParam{2, 1024}, LoopParam{3, 0}, LoopParam{3, 4},
                                           LoopParam{3, 1024}, LoopParam{5, 0}, LoopParam{5, 4}, LoopParam{5, 1024},
                                           LoopParam{8, 0}, LoopParam{8, 4}, LoopParam{8, 1024}),
                         [](const auto& info) {
                           return "P" + std::to_string(info.param.size) + "_capacity" +
                                  std::to_string(info.param.capacity);
                         });

class NegotiatorCacheCapacity : public ::testing::TestWithParam<uint32_t> {};

// Rank 1 asks to shut down in a (fast-path, when cached) cycle: every rank's answer of that
// cycle says shutdown, none before.
TEST_P(NegotiatorCacheCapacity, ShutdownFromOneRankReachesEveryRank) {
  constexpr int P = 3, kCycles = 4, kShutdownCycle = 3;
  std::vector<RankRecord> records;
  run_world(P, records, [&](Communicator& comm, RankRecord& record) {
    Negotiator negotiator(comm, NegotiatorOptions{GetParam()});
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      Spec spec{"x", 6, "", 0};
      record.lists.push_back(
          negotiator.negotiate({make_request(comm.rank(), spec, 6)}, comm.rank() == 1 && cycle == kShutdownCycle));
    }
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(records[r].error, "") << "rank " << r;
    ASSERT_EQ(records[r].lists.size(), size_t{kCycles}) << "rank " << r;
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      const ResponseList& list = records[r].lists[cycle];
      EXPECT_EQ(list.shutdown, cycle == kShutdownCycle) << "rank " << r << ", cycle " << cycle;
      EXPECT_EQ(list.shutdown_message, "") << "rank " << r << ", cycle " << cycle << ": a plain shutdown";
      ASSERT_EQ(list.responses.size(), 1u) << "rank " << r << ", cycle " << cycle << ": 'x' is answered every cycle";
      EXPECT_EQ(list.responses[0].sizes, std::vector<int64_t>{6}) << "rank " << r << ", cycle " << cycle;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CacheOffSmallOn, NegotiatorCacheCapacity, ::testing::Values(0u, 4u, 1024u),
                         [](const auto& info) { return "capacity" + std::to_string(info.param); });

struct StallParam {
  uint32_t capacity;
  bool cached;  // the stalled tensor was negotiated (and, capacity > 0, cached) before
};

class NegotiatorStall : public ::testing::TestWithParam<StallParam> {};

// NegotiatorOptions::stall_check false (CONCORD_STALL_CHECK_DISABLE, Horovod's
// HOROVOD_STALL_CHECK_DISABLE): the stall below, with a 0.1 s shutdown time, goes on for
// 0.5 s of cycles and no cycle shuts down.
TEST(NegotiatorStallCheckDisabled, MissingRankNeverShutsDown) {
  constexpr int P = 3, kMissing = 1, kCycles = 50;
  std::vector<RankRecord> records;
  run_world(P, records, [&](Communicator& comm, RankRecord& record) {
    NegotiatorOptions options{0, 0.05, 0.1};
    options.stall_check = false;
    Negotiator negotiator(comm, options);
    std::vector<Request> mine;
    if (comm.rank() != kMissing) mine.push_back(make_request(comm.rank(), Spec{"stalled", 8, "", 0}, 8));
    record.lists.push_back(negotiator.negotiate(std::move(mine), false));
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      record.lists.push_back(negotiator.negotiate({}, false));
    }
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(records[r].error, "") << "rank " << r;
    for (size_t cycle = 0; cycle < records[r].lists.size(); ++cycle)
      EXPECT_FALSE(records[r].lists[cycle].shutdown) << "rank " << r << " cycle " << cycle;
  }
}

// Ranks 0 and 2 submit "stalled"; rank 1 never does. With a 0.2 s shutdown time, a cycle
// after 0.2 s returns shutdown on every rank with a message naming the tensor and rank 1;
// no cycle before 0.2 s does, and "stalled" is never answered.
TEST_P(NegotiatorStall, MissingRankShutsDownEveryRank) {
  constexpr int P = 3, kMissing = 1, kEarlyCycles = 8;
  constexpr double kShutdownSeconds = 0.2;
  const uint32_t capacity = GetParam().capacity;
  const bool cached = GetParam().cached;
  using Clock = std::chrono::steady_clock;
  std::vector<RankRecord> records;
  std::vector<std::string> premature(P);
  run_world(P, records, [&](Communicator& comm, RankRecord& record) {
    Negotiator negotiator(comm, NegotiatorOptions{capacity, 0.05, kShutdownSeconds});
    const Spec spec{"stalled", 8, "", 0};
    if (cached) {
      const ResponseList warm = negotiator.negotiate({make_request(comm.rank(), spec, 8)}, false);
      if (warm.responses.size() != 1 || warm.shutdown) premature[comm.rank()] = "the warm-up cycle went wrong";
    }
    std::vector<Request> mine;
    if (comm.rank() != kMissing) mine.push_back(make_request(comm.rank(), spec, 8));
    const auto submitted = Clock::now();
    record.lists.push_back(negotiator.negotiate(std::move(mine), false));
    // Every rank sees the shutdown in the same cycle (it is the round's global result), so
    // all leave these loops together. A loaded machine can run the early cycles past 0.2 s,
    // or start the stall clock late (it starts when rank 0 first sees the request, or at the
    // first stall check): the cycles go on until the shutdown comes, for up to 2 s more.
    for (int cycle = 0; cycle < kEarlyCycles && !record.lists.back().shutdown; ++cycle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      record.lists.push_back(negotiator.negotiate({}, false));
      const double waited = std::chrono::duration<double>(Clock::now() - submitted).count();
      if (record.lists.back().shutdown && waited < kShutdownSeconds - 0.01)
        premature[comm.rank()] = "shutdown after only " + std::to_string(waited) + " s";
    }
    if (record.lists.back().shutdown) return;
    std::this_thread::sleep_until(submitted + std::chrono::milliseconds(250));
    record.lists.push_back(negotiator.negotiate({}, false));
    for (int cycle = 0; cycle < 400 && !record.lists.back().shutdown; ++cycle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      record.lists.push_back(negotiator.negotiate({}, false));
    }
    const double waited = std::chrono::duration<double>(Clock::now() - submitted).count();
    if (record.lists.back().shutdown && waited > 1.5)  // 0.2 s, and a loaded machine's delays
      premature[comm.rank()] = "shutdown only after " + std::to_string(waited) + " s (0.2 s configured)";
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(records[r].error, "") << "rank " << r;
    EXPECT_EQ(premature[r], "") << "rank " << r;
    ASSERT_FALSE(records[r].lists.empty());
    // "stalled" is answered only by the warm-up cycle (which is not recorded).
    for (size_t c = 0; c < records[r].lists.size(); ++c)
      EXPECT_TRUE(records[r].lists[c].responses.empty())
          << "rank " << r << ", cycle " << c << ": rank 1 never submitted 'stalled'";
    const ResponseList& last = records[r].lists.back();
    EXPECT_TRUE(last.shutdown) << "rank " << r << ": stalled for over 2 s > 0.2 s without a shutdown";
    EXPECT_NE(last.shutdown_message.find("tensor 'stalled' is missing on ranks [1]"), std::string::npos)
        << "rank " << r << ": " << last.shutdown_message;
    EXPECT_EQ(last.shutdown_message, records[0].lists.back().shutdown_message) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(CachedAndUncached, NegotiatorStall,
                         ::testing::Values(StallParam{0, false}, StallParam{0, true}, StallParam{1024, false},
                                           StallParam{1024, true}),
                         [](const auto& info) {
                           return "capacity" + std::to_string(info.param.capacity) +
                                  (info.param.cached ? "_cached" : "_uncached");
                         });

}  // namespace
}  // namespace concord
