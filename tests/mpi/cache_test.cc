// The response cache, bit-vector coordination, grouping and the stall inspector seen through
// the public API under mpirun (concord_mpi_cache_tests; docs/algorithms.md, "Negotiation"):
//  - a fixed tensor set reduced over many iterations, submitted in a different random order
//    on every rank every iteration: results exact; once warm (capacity >= tensor count) the
//    coordinator is never used again and every response comes from the cache
//    (concord::coordination_stats()); with a capacity below the tensor count (the
//    mpi.cache_small run) entries are evicted and results stay exact;
//  - grouped_allreduce_async: exact results, and (rank 0's timeline) each group fused into
//    one allreduce (possibly with other ready tensors: Romero et al. section 3.2);
//  - a tensor whose shape changes between iterations: exact results, one invalidation per
//    change;
//  - a cached tensor submitted with another shape on one rank: MismatchError on every rank,
//    and the cache works again afterwards;
//  - (mpi.stall run only: short CONCORD_STALL_*_TIME) one rank skips a tensor: every rank's
//    pending handle fails with StateError naming the tensor and the missing rank; the
//    runtime is then stopped, so this test runs alone in its own ctest.
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "reference.h"

namespace concord::mpitest {
namespace {

double env_double(const char* name, double fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtod(value, nullptr) : fallback;
}

// The capacity every rank uses (rank 0's; the environment is the same on every rank).
uint64_t cache_capacity() { return static_cast<uint64_t>(env_double("CONCORD_CACHE_CAPACITY", 1024)); }

std::string describe_stats(const CoordinationStats& s) {
  std::ostringstream out;
  out << "{cycles " << s.cycles << ", coordinator_rounds " << s.coordinator_rounds << ", cache_hits " << s.cache_hits
      << ", cache_misses " << s.cache_misses << ", invalidations " << s.invalidations << ", evictions " << s.evictions
      << ", stall_checks " << s.stall_checks << "}";
  return out.str();
}

// coordination_stats() after this rank's waits: the counters are published right after each
// negotiation round, before its responses are executed, so a completed handle's round is
// counted. (No waiting for further rounds: an idle runtime runs none.)
CoordinationStats settled_stats() { return coordination_stats(); }

// A barrier made of one allreduce under a name that stays cached (after its first use a
// cache hit: no coordinator round), so that every rank is past the same point.
void sync_point() {
  int32_t one = 1, count = 0;
  const Handle handle =
      allreduce_async("cache.sync", TensorView{&one, DataType::kInt32, {1}}, TensorView{&count, DataType::kInt32, {1}});
  if (wait_ok(handle, describe("allreduce(sum) used as a barrier", "cache.sync", DataType::kInt32, 1))) {
    EXPECT_EQ(count, concord::size()) << "[rank " << concord::rank() << "] barrier allreduce 'cache.sync', element 0";
  }
}

// settled_stats(), then a barrier: no rank goes on (and submits new tensors, which would
// count as coordinator rounds on every rank) before every rank has read its counters. The
// barrier adds one cache hit after the snapshot.
CoordinationStats synced_stats() {
  const CoordinationStats stats = settled_stats();
  sync_point();
  return stats;
}

// A random pause of 0..400 us on about a third of the calls: spreads one rank's submissions
// over several cycles, differently on every rank.
void maybe_pause(std::mt19937_64& rng) {
  if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
}

std::mt19937_64 rank_rng(uint64_t test, int iteration) {
  return std::mt19937_64(test * 1000003 + static_cast<uint64_t>(iteration) * 7919 +
                         static_cast<uint64_t>(concord::rank()) * 104729);
}

struct Live {
  std::string name;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  Tensor input, output;
  Handle handle;
};

void prepare(Live& live) {
  live.input = Tensor(live.dtype, live.shape);
  live.output = Tensor(live.dtype, live.shape);
  fill_allreduce_input(live.input, live.op, false, concord::rank(), live.seed);
}

// Waits for `live` and checks its result against every rank's input.
void check(Live& live, const std::string& test, int iteration) {
  const std::string what =
      describe(std::string("allreduce(") + reduce_op_name(live.op) + ", ring) in " + test + ", iteration " +
                   std::to_string(iteration) + ", shape " + shape_string(live.shape),
               live.name, live.dtype, live.input.count());
  if (!wait_ok(live.handle, what)) return;
  const Reference ref =
      allreduce_reference(live.dtype, live.op, Scale{}, live.input.count(), live.seed, concord::size());
  expect_elements(what, live.dtype, live.output.data(), ref.value, ref.tolerance);
}

// Waits for every entry in a random order of this rank.
void check_all(std::vector<Live>& lives, const std::string& test, int iteration, std::mt19937_64& rng) {
  std::vector<size_t> order(lives.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i : order) check(lives[i], test, iteration);
}

// The same tensors every iteration, each rank submitting them in its own random order.
TEST(Cache, RandomOrderIterationsUseTheFastPathOnceWarm) {
  constexpr int kTensors = 24, kIterations = 14, kWarmup = 2;
  const DataType dtypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat64, DataType::kInt64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kSum};
  const int64_t counts[] = {1, 7, 100, 1023, 3001};
  const std::string test = "a random-order loop over " + std::to_string(kTensors) + " tensors";
  sync_point();  // also puts "cache.sync" in the cache
  CoordinationStats warm{};
  for (int it = 0; it < kIterations; ++it) {
    if (it == kWarmup) warm = synced_stats();
    std::vector<Live> lives(kTensors);
    for (int t = 0; t < kTensors; ++t) {
      Live& live = lives[t];
      live.name = "cache.loop.t" + std::to_string(t);
      live.dtype = dtypes[t % 4];
      live.op = ops[t % 3];
      live.shape = {counts[t % 5]};
      live.seed = static_cast<uint64_t>(it) * 100 + t;
      prepare(live);
    }
    std::mt19937_64 rng = rank_rng(1, it);
    std::vector<size_t> order(kTensors);
    for (int t = 0; t < kTensors; ++t) order[t] = t;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t t : order) {
      Live& live = lives[t];
      live.handle = allreduce_async(live.name, live.input.view(), live.output.view(), AllreduceOptions{live.op});
      maybe_pause(rng);
    }
    check_all(lives, test, it, rng);
  }
  const CoordinationStats end = synced_stats();
  const uint64_t capacity = cache_capacity();
  const std::string where = "[rank " + std::to_string(concord::rank()) + "] " + test + ", capacity " +
                            std::to_string(capacity) + ": after warm-up " + describe_stats(warm) + ", at the end " +
                            describe_stats(end);
  // The measured iterations, plus the barrier after the warm-up snapshot.
  const uint64_t measured = static_cast<uint64_t>(kIterations - kWarmup) * kTensors + 1;
  if (capacity == 0) {
    EXPECT_EQ(end.cache_hits, 0u) << where << ": the cache is disabled";
    EXPECT_GT(end.coordinator_rounds, warm.coordinator_rounds) << where << ": every tensor goes to rank 0";
  } else if (capacity > static_cast<uint64_t>(kTensors)) {
    EXPECT_EQ(end.coordinator_rounds, warm.coordinator_rounds)
        << where << ": the coordinator must not be used once warm";
    EXPECT_EQ(end.cache_misses, warm.cache_misses) << where << ": no request may reach the coordinator once warm";
    EXPECT_EQ(end.cache_hits - warm.cache_hits, measured) << where << ": every response must come from the cache";
    EXPECT_EQ(end.evictions, warm.evictions) << where << ": everything fits";
  } else {
    EXPECT_GT(end.evictions, warm.evictions) << where << ": the tensor set does not fit";
    EXPECT_GT(end.coordinator_rounds, warm.coordinator_rounds) << where << ": evicted tensors need rank 0";
  }
  EXPECT_EQ(end.invalidations, warm.invalidations) << where << ": no tensor changed";
}

// --- grouped allreduce ---------------------------------------------------------------------

// Rank 0's timeline as (tensor, event, phase) in file order: "ALLREDUCE_RING" / "B".
struct TimelineEvent {
  std::string tensor, name, phase;
};

std::string json_field(const std::string& line, const std::string& key) {
  const std::string pattern = "\"" + key + "\":";
  const size_t at = line.find(pattern);
  if (at == std::string::npos) return "";
  size_t start = at + pattern.size();
  if (start < line.size() && line[start] == '"') {
    const size_t end = line.find('"', start + 1);
    return end == std::string::npos ? "" : line.substr(start + 1, end - start - 1);
  }
  size_t end = start;
  while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
  return line.substr(start, end - start);
}

std::vector<TimelineEvent> read_timeline(const std::string& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> tensor_of_tid;
  std::map<std::string, std::vector<std::string>> open;  // tid -> open activities
  std::vector<TimelineEvent> events;
  std::string line;
  while (std::getline(in, line)) {
    const std::string tid = json_field(line, "tid"), phase = json_field(line, "ph");
    if (phase == "M") {
      const size_t args = line.find("\"args\"");
      if (args != std::string::npos) tensor_of_tid[tid] = json_field(line.substr(args), "name");
    } else if (phase == "B") {
      open[tid].push_back(json_field(line, "name"));
      events.push_back({tensor_of_tid[tid], open[tid].back(), "B"});
    } else if (phase == "E" && !open[tid].empty()) {
      events.push_back({tensor_of_tid[tid], open[tid].back(), "E"});
      open[tid].pop_back();
    }
  }
  return events;
}

// Line positions of one activity of one tensor in the timeline (-1: absent).
struct Span {
  int begin = -1, end = -1;
};

Span span_of(const std::vector<TimelineEvent>& events, const std::string& tensor, const std::string& activity) {
  Span span;
  for (int i = 0; i < static_cast<int>(events.size()); ++i) {
    if (events[i].tensor != tensor || events[i].name != activity) continue;
    if (events[i].phase == "B" && span.begin < 0) span.begin = i;
    if (events[i].phase == "E" && span.begin >= 0 && span.end < 0) span.end = i;
  }
  return span;
}

TEST(Cache, GroupedAllreduceIsExactAndFusedPerGroup) {
  constexpr int kGroups = 3, kMembers = 4, kSingles = 2, kIterations = 7, kWarmup = 2, kTimelineIteration = 5;
  const int64_t member_counts[kMembers] = {5, 1023, 64, 1};
  const ReduceOp group_ops[kGroups] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kSum};
  const int rank = concord::rank();
  const std::string test =
      "grouped allreduce (" + std::to_string(kGroups) + " groups of " + std::to_string(kMembers) + ")";
  const std::string timeline_path =
      (std::filesystem::temp_directory_path() / ("concord_cache_test_" + std::to_string(::getpid()) + ".json"))
          .string();
  sync_point();
  CoordinationStats warm{};
  for (int it = 0; it < kIterations; ++it) {
    if (it == kWarmup) warm = synced_stats();
    // Units 0..kGroups-1 are groups, the rest single float32 sums (fusable with group 0 but
    // for the grouping).
    std::vector<std::vector<Live>> units(kGroups + kSingles);
    for (int g = 0; g < kGroups + kSingles; ++g) {
      const bool group = g < kGroups;
      for (int m = 0; m < (group ? kMembers : 1); ++m) {
        Live live;
        live.name =
            group ? "cache.group" + std::to_string(g) + ".m" + std::to_string(m) : "cache.single" + std::to_string(g);
        live.dtype = DataType::kFloat32;
        live.op = group ? group_ops[g] : ReduceOp::kSum;
        live.shape = {group ? member_counts[m] : 300};
        live.seed = static_cast<uint64_t>(it) * 100 + 10 * g + m;
        units[g].push_back(std::move(live));
      }
      for (auto& live : units[g]) prepare(live);
    }
    if (it == kTimelineIteration) start_timeline(timeline_path);  // rank 0 writes; no-op elsewhere
    std::mt19937_64 rng = rank_rng(2, it);
    std::vector<size_t> order(units.size());
    for (size_t u = 0; u < order.size(); ++u) order[u] = u;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t u : order) {
      auto& unit = units[u];
      if (u < kGroups) {
        std::vector<std::string> names;
        std::vector<TensorView> inputs, outputs;
        for (auto& live : unit) {
          names.push_back(live.name);
          inputs.push_back(live.input.view());
          outputs.push_back(live.output.view());
        }
        const auto handles = grouped_allreduce_async(names, inputs, outputs, AllreduceOptions{group_ops[u]});
        EXPECT_EQ(handles.size(), unit.size()) << "[rank " << rank << "] one handle per member";
        for (size_t m = 0; m < handles.size() && m < unit.size(); ++m) unit[m].handle = handles[m];
      } else {
        unit[0].handle = allreduce_async(unit[0].name, unit[0].input.view(), unit[0].output.view());
      }
      maybe_pause(rng);
    }
    std::vector<Live*> all;
    for (auto& unit : units)
      for (auto& live : unit) all.push_back(&live);
    std::shuffle(all.begin(), all.end(), rng);
    for (Live* live : all) check(*live, test, it);
    if (it != kTimelineIteration) continue;
    stop_timeline();
    if (rank != 0) continue;
    // Fusion, from rank 0's timeline: every member of a group went through the fusion
    // buffer, and the members' ALLREDUCE_RING spans all begin before any ends (one ring).
    const auto events = read_timeline(timeline_path);
    EXPECT_FALSE(events.empty()) << "[rank 0] " << test << ": no events in the timeline " << timeline_path;
    for (size_t u = 0; u < units.size(); ++u) {
      int last_begin = -1, first_end = -1;
      for (const auto& live : units[u]) {
        const Span ring = span_of(events, live.name, "ALLREDUCE_RING");
        const std::string what =
            "[rank 0] " + test + ", iteration " + std::to_string(it) + ", tensor '" + live.name + "'";
        EXPECT_GE(ring.begin, 0) << what << ": no ALLREDUCE_RING span in the timeline";
        EXPECT_GE(ring.end, 0) << what << ": ALLREDUCE_RING span not closed in the timeline";
        if (ring.begin < 0 || ring.end < 0) continue;
        if (u < kGroups) {
          EXPECT_GE(span_of(events, live.name, "MEMCPY_IN_FUSION_BUFFER").begin, 0)
              << what << ": a group member must be fused (copied into the fusion buffer)";
        }
        last_begin = std::max(last_begin, ring.begin);
        first_end = first_end < 0 ? ring.end : std::min(first_end, ring.end);
      }
      if (u < kGroups && last_begin >= 0) {
        EXPECT_LT(last_begin, first_end) << "[rank 0] " << test << ": the members of group " << u
                                         << " ran in more than one allreduce (a ring ended before another began)";
      }
    }
    std::filesystem::remove(timeline_path);
  }
  const CoordinationStats end = synced_stats();
  const uint64_t tensors = kGroups * kMembers + kSingles;
  const std::string where = "[rank " + std::to_string(rank) + "] " + test + ", capacity " +
                            std::to_string(cache_capacity()) + ": after warm-up " + describe_stats(warm) +
                            ", at the end " + describe_stats(end);
  if (cache_capacity() > tensors) {  // + "cache.sync"
    EXPECT_EQ(end.coordinator_rounds, warm.coordinator_rounds) << where << ": cached groups need no coordinator";
    EXPECT_EQ(end.cache_hits - warm.cache_hits, (kIterations - kWarmup) * tensors + 1)
        << where << ": every member (and the barrier after the warm-up snapshot) from the cache";
  }
}

// --- shape changes and mismatches ----------------------------------------------------------

// One allreduce of `name` with `shape` on this rank; returns the live entry (not waited).
Live submit_one(const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
  Live live;
  live.name = name;
  live.dtype = DataType::kInt32;
  live.shape = std::move(shape);
  live.seed = seed;
  prepare(live);
  live.handle = allreduce_async(live.name, live.input.view(), live.output.view());
  return live;
}

TEST(Cache, ShapeChangeBetweenIterationsInvalidatesTheEntry) {
  const std::vector<std::vector<int64_t>> shapes = {{6}, {6}, {9}, {9}, {9}, {3, 2}, {3, 2}, {6}, {6}};
  int changes = 0;
  for (size_t it = 1; it < shapes.size(); ++it) changes += shapes[it] != shapes[it - 1];
  sync_point();
  const CoordinationStats before = synced_stats();
  for (size_t it = 0; it < shapes.size(); ++it) {
    Live live = submit_one("cache.reshape", shapes[it], 500 + it);
    check(live, "a tensor whose shape changes between iterations", static_cast<int>(it));
  }
  const CoordinationStats after = synced_stats();
  EXPECT_EQ(after.invalidations - before.invalidations, cache_capacity() > 0 ? static_cast<uint64_t>(changes) : 0u)
      << "[rank " << concord::rank() << "] tensor 'cache.reshape', capacity " << cache_capacity() << ", " << changes
      << " shape changes: before " << describe_stats(before) << ", after " << describe_stats(after);
}

TEST(Cache, MismatchAfterCachingFailsOnEveryRankAndTheCacheRecovers) {
  const int rank = concord::rank(), size = concord::size();
  const std::string name = "cache.mismatch";
  const std::string test = "a cached tensor";
  for (int it = 0; it < 2; ++it) {  // negotiated, then served from the cache
    Live live = submit_one(name, {6}, 600 + it);
    check(live, test, it);
  }
  if (size > 1) {
    const bool odd_one = rank == size - 1;
    Live live = submit_one(name, {odd_one ? 7 : 6}, 602);
    const std::string what = describe(
        "allreduce(sum) of a cached tensor, iteration 2, with shape [7] on rank " + std::to_string(size - 1) + " only",
        name, DataType::kInt32, live.input.count());
    const std::string message = wait_error<MismatchError>(live.handle, what);
    if (!message.empty()) {
      EXPECT_NE(message.find("'" + name + "'"), std::string::npos) << what << ": message: " << message;
      EXPECT_NE(message.find("[6]"), std::string::npos) << what << ": message: " << message;
      EXPECT_NE(message.find("[7] on ranks [" + std::to_string(size - 1) + "]"), std::string::npos)
          << what << ": message: " << message;
    }
  }
  expect_allreduce_works("cache.mismatch.other");
  for (int it = 3; it < 5; ++it) {  // renegotiated, then cached again
    const CoordinationStats before = it == 4 ? synced_stats() : CoordinationStats{};
    Live live = submit_one(name, {6}, 600 + it);
    check(live, test + " after a mismatch", it);
    if (it != 4 || cache_capacity() == 0) continue;
    const CoordinationStats after = synced_stats();
    EXPECT_EQ(after.coordinator_rounds, before.coordinator_rounds)
        << "[rank " << rank << "] tensor '" << name << "', iteration 4: cached again after the mismatch, so no "
        << "coordinator round: before " << describe_stats(before) << ", after " << describe_stats(after);
    EXPECT_EQ(after.cache_hits - before.cache_hits, 2u)
        << "[rank " << rank << "] tensor '" << name << "', iteration 4: it and the barrier 'cache.sync' are cache hits";
  }
}

// --- stall shutdown (mpi.stall only; must be the last thing the process does) ---------------

std::string rank_list(int from, int to) {
  std::string list;
  for (int r = from; r < to; ++r) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return "[" + list + "]";
}

TEST(CacheStall, SkippedTensorFailsEveryPendingHandle) {
  const double shutdown_seconds = env_double("CONCORD_STALL_SHUTDOWN_TIME", 0);
  if (shutdown_seconds <= 0 || shutdown_seconds > 10 || concord::size() < 2)
    GTEST_SKIP() << "needs 2+ ranks and CONCORD_STALL_SHUTDOWN_TIME in (0, 10] (the mpi.stall run)";
  const int rank = concord::rank(), size = concord::size(), missing = size - 1;
  for (int it = 0; it < 2; ++it) {  // "stall.cached" is in the cache from now on
    Live live = submit_one("stall.cached", {5}, 700 + it);
    check(live, "the stall test's warm-up", it);
  }
  // Every rank but the last submits stall.cached (a cache hit) and stall.uncached (new); the
  // last submits only stall.lonely, which nobody else does.
  std::vector<Live> lives;
  const auto start = std::chrono::steady_clock::now();
  if (rank != missing) {
    lives.push_back(submit_one("stall.cached", {5}, 702));
    lives.push_back(submit_one("stall.uncached", {4}, 703));
  } else {
    lives.push_back(submit_one("stall.lonely", {3}, 704));
  }
  for (auto& live : lives) {
    const std::string what = describe("allreduce(sum) stalled because rank " + std::to_string(missing) +
                                          " skips 'stall.cached' and 'stall.uncached' and submits 'stall.lonely'",
                                      live.name, live.dtype, live.input.count());
    const std::string message = wait_error<StateError>(live.handle, what);
    if (message.empty()) continue;
    EXPECT_NE(message.find("(tensor '" + live.name + "' was pending)"), std::string::npos) << what << ": " << message;
    EXPECT_NE(message.find("CONCORD_STALL_SHUTDOWN_TIME"), std::string::npos) << what << ": " << message;
    for (const std::string tensor : {"stall.cached", "stall.uncached"})
      EXPECT_NE(message.find("tensor '" + tensor + "' is missing on ranks [" + std::to_string(missing) + "]"),
                std::string::npos)
          << what << ": the message must name '" << tensor << "' and rank " << missing << ": " << message;
    EXPECT_NE(message.find("tensor 'stall.lonely' is missing on ranks " + rank_list(0, missing)), std::string::npos)
        << what << ": " << message;
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The stall clock starts when rank 0 first sees a request, which on a loaded machine can
  // be well after this rank's submission: half the shutdown time still tells a shutdown at
  // the stall warning (a quarter of it) from one at the shutdown time.
  EXPECT_GE(waited, shutdown_seconds * 0.5) << "[rank " << rank << "] shut down before CONCORD_STALL_SHUTDOWN_TIME";
  // The runtime has stopped: new collectives are refused.
  float x = 1;
  EXPECT_THROW(
      allreduce_async("stall.after", TensorView{&x, DataType::kFloat32, {1}}, TensorView{&x, DataType::kFloat32, {1}}),
      StateError)
      << "[rank " << rank << "] after the stall shutdown";
}

}  // namespace
}  // namespace concord::mpitest
