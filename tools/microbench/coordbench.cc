// concord-coordbench: the control plane alone (what Romero et al.,
// NSDI 2022, measured): a Negotiator over an MpiCommunicator (its own duplicate of
// MPI_COMM_WORLD), no data plane, with the response cache off and on in the same run.
//
//   mpirun -np 4 build/tools/concord-coordbench -i 50 -w 5 -t 160 -k 10
//
// Each simulated iteration of data-parallel training submits the same T tensors (a
// ResNet-50-sized gradient set: "layer<k>.weight" / "layer<k>.bias", fixed shapes) on every
// rank, in a different random order per rank and per iteration, spread over K cycles: in
// each cycle a rank submits a random number of its remaining requests (all the rest in the
// last cycle), as backward would produce them. Every rank calls negotiate(new, false) once
// per cycle until every tensor has come back in a response. Responses are identical on
// every rank, so every rank sees its last tensor in the same cycle and all ranks call
// negotiate() equally often (checked after every iteration, with the order of the
// responses). MPI_Barrier separates iterations. No cycle-time sleep and no data transfer:
// the time column is pure negotiation (bit-vector allreduce, and gather + broadcast to and
// from rank 0 on the slow path).
//
// Per iteration after warm-up (means over the timed iterations):
//   cycles      negotiate() calls per rank
//   gathers     coordinator rounds (slow-path gathers to rank 0; stats().coordinator_rounds)
//   hits        responses rank 0 built from its cache (stats().cache_hits)
//   time        wall time of the iteration's negotiate() calls, max over ranks
//   coord B     bytes sent + received by rank 0 on the control communicator (counters())
//   worker B    the same for rank 1
// A closing line gives the coordinator's bytes per iteration cache-off / cache-on.
#include <mpi.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/enforce.h"
#include "control/negotiator.h"
#include "tools/common/mpi_tool.h"
#include "transport/mpi_communicator.h"

using namespace concord;

namespace {

struct Options {
  int iterations = 50;
  int warmup = 5;
  int tensors = 160;
  int cycles = 10;
  uint32_t capacity = 1024;
  std::string cache = "both";
  uint64_t seed = 1;
};

struct Result {
  uint32_t capacity = 0;
  double cycles = 0, gathers = 0, hits = 0, seconds = 0, coordinator_bytes = 0, worker_bytes = 0;
  uint64_t max_gathers = 0;  // largest per-iteration gather count among timed iterations
};

// A ResNet-50-like gradient set: T/2 layers with a 4-d weight and a 1-d bias (an odd T gets
// one extra weight). Shapes vary with the layer but are the same every iteration.
std::vector<Request> tensor_set(int tensors, int rank) {
  static const int64_t kChannels[] = {64, 128, 256, 512, 1024, 2048};
  std::vector<Request> set;
  for (int k = 0; static_cast<int>(set.size()) < tensors; ++k) {
    const int64_t out = kChannels[(k * 5 / 3) % 6];
    const int64_t in = kChannels[(k * 7 / 4 + 1) % 6];
    const int64_t kernel = k % 3 == 1 ? 3 : 1;
    Request weight;
    weight.rank = rank;
    weight.name = "layer" + std::to_string(k) + ".weight";
    weight.type = CollectiveType::kAllreduce;
    weight.dtype = DataType::kFloat32;
    weight.op = ReduceOp::kAverage;
    weight.shape = {out, in, kernel, kernel};
    set.push_back(weight);
    if (static_cast<int>(set.size()) == tensors) break;
    Request bias = weight;
    bias.name = "layer" + std::to_string(k) + ".bias";
    bias.shape = {out};
    set.push_back(bias);
  }
  return set;
}

// This rank's submission schedule for one iteration: the tensor indices in a random order,
// cut into `cycles` consecutive chunks of random sizes (possibly empty; the last takes the
// rest). Seeded by (seed, rank, iteration) only, so both cache settings see the same one.
std::vector<std::vector<int>> schedule(const Options& options, int rank, int iteration) {
  std::seed_seq seq{static_cast<uint64_t>(options.seed), static_cast<uint64_t>(rank), static_cast<uint64_t>(iteration)};
  std::mt19937_64 rng(seq);
  std::vector<int> order(options.tensors);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<int>> chunks(options.cycles);
  size_t next = 0;
  for (int c = 0; c < options.cycles; ++c) {
    const size_t remaining = order.size() - next;
    const int left = options.cycles - c;
    size_t take = remaining;
    if (left > 1) {
      // Mean remaining / left: the rest spread evenly in expectation.
      std::uniform_int_distribution<size_t> pick(0, std::min(remaining, 2 * remaining / left));
      take = pick(rng);
    }
    chunks[c].assign(order.begin() + next, order.begin() + next + take);
    next += take;
  }
  return chunks;
}

uint64_t fnv1a(uint64_t hash, const std::string& text) {
  for (unsigned char ch : text) hash = (hash ^ ch) * 1099511628211ull;
  return (hash ^ 0xff) * 1099511628211ull;
}

Result run(const Options& options, uint32_t capacity, int rank, int size) {
  MpiCommunicator control(MPI_COMM_WORLD);  // owns a duplicate of MPI_COMM_WORLD
  NegotiatorOptions negotiator_options;
  negotiator_options.cache_capacity = capacity;
  // No stall inspection during the benchmark (it would add a gather to rank 0 every
  // quarter of the warning time; the runtime's default is one every 15 s).
  negotiator_options.stall_warning_seconds = 1e9;
  Negotiator negotiator(control, negotiator_options);
  const std::vector<Request> set = tensor_set(options.tensors, rank);

  // Per timed iteration: [cycles, gathers, hits, seconds, bytes] on this rank.
  std::vector<double> cycles, gathers, hits, seconds, bytes;
  for (int it = 0; it < options.warmup + options.iterations; ++it) {
    const auto chunks = schedule(options, rank, it);
    const CoordinationStats before = negotiator.stats();
    MPI_Barrier(MPI_COMM_WORLD);
    control.reset_counters();
    std::vector<bool> seen(set.size(), false);
    int answered = 0, cycle = 0;
    uint64_t order_hash = 1469598103934665603ull;
    double elapsed = 0;
    while (answered < options.tensors) {
      CONCORD_ENFORCE(cycle < options.cycles + 1000, InternalError, "iteration ", it, ": only ", answered, " of ",
                      options.tensors, " tensors answered after ", cycle, " cycles");
      std::vector<Request> fresh;
      if (cycle < options.cycles)
        for (int index : chunks[cycle]) fresh.push_back(set[index]);
      const auto start = std::chrono::steady_clock::now();
      const ResponseList answer = negotiator.negotiate(std::move(fresh), false);
      elapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++cycle;
      for (const auto& response : answer.responses) {
        CONCORD_ENFORCE(response.type != ResponseType::kError, InternalError, "error response: ", response.error);
        for (const auto& name : response.names) {
          order_hash = fnv1a(order_hash, name);
          const auto found = std::find_if(set.begin(), set.end(), [&](const Request& r) { return r.name == name; });
          CONCORD_ENFORCE(found != set.end(), InternalError, "response for unknown tensor '", name, "'");
          const size_t index = found - set.begin();
          CONCORD_ENFORCE(!seen[index], InternalError, "tensor '", name, "' answered twice in iteration ", it);
          seen[index] = true;
          ++answered;
        }
      }
    }
    const TrafficCounters traffic = control.counters();
    const CoordinationStats& after = negotiator.stats();
    // Every rank must have run the same cycles and seen the same responses in the same order.
    uint64_t check[2] = {static_cast<uint64_t>(cycle), order_hash}, low[2], high[2];
    MPI_Allreduce(check, low, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(check, high, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CONCORD_ENFORCE(low[0] == high[0] && low[1] == high[1], InternalError, "iteration ", it,
                    ": ranks disagree on the cycle count (", low[0], "..", high[0], ") or the response order");
    if (it < options.warmup) continue;
    cycles.push_back(static_cast<double>(after.cycles - before.cycles));
    gathers.push_back(static_cast<double>(after.coordinator_rounds - before.coordinator_rounds));
    hits.push_back(static_cast<double>(after.cache_hits - before.cache_hits));
    seconds.push_back(elapsed);
    bytes.push_back(static_cast<double>(traffic.bytes_sent + traffic.bytes_received));
  }

  // Time: max over ranks per iteration; bytes: rank 0's and rank 1's, sent to rank 0.
  const int n = options.iterations;
  std::vector<double> max_seconds(n), worker_bytes(n, 0.0);
  MPI_Reduce(seconds.data(), max_seconds.data(), n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (size > 1) {
    if (rank == 1) MPI_Send(bytes.data(), n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    if (rank == 0) MPI_Recv(worker_bytes.data(), n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  const auto mean = [n](const std::vector<double>& values) {
    return n > 0 ? std::accumulate(values.begin(), values.end(), 0.0) / n : 0.0;
  };
  Result result;
  result.capacity = capacity;
  result.cycles = mean(cycles);
  result.gathers = mean(gathers);
  result.hits = mean(hits);
  result.seconds = mean(max_seconds);
  result.coordinator_bytes = mean(bytes);  // meaningful on rank 0
  result.worker_bytes = mean(worker_bytes);
  result.max_gathers = n > 0 ? static_cast<uint64_t>(*std::max_element(gathers.begin(), gathers.end())) : 0;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  const int rank = mpi.rank(), size = mpi.size();

  CLI::App app{"concord-coordbench: control-plane (negotiation) cost with the response cache off and on"};
  Options options;
  app.add_option("-i,--iters", options.iterations, "timed iterations per cache setting")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", options.warmup,
                 "untimed iterations per cache setting (the cache fills in the first)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-t,--tensors", options.tensors, "tensors per iteration")->check(CLI::PositiveNumber);
  app.add_option("-k,--cycles", options.cycles, "cycles each rank spreads its submissions over")
      ->check(CLI::PositiveNumber);
  app.add_option("-c,--cache", options.cache, "off, on or both")->check(CLI::IsMember({"off", "on", "both"}));
  app.add_option("--capacity", options.capacity, "cache capacity when the cache is on")->check(CLI::PositiveNumber);
  app.add_option("-s,--seed", options.seed, "seed of the submission orders");
  if (const auto code = mpi.parse(app, argc, argv)) return *code;

  int status = 0;
  try {
    std::vector<uint32_t> capacities;
    if (options.cache != "on") capacities.push_back(0);
    if (options.cache != "off") capacities.push_back(options.capacity);
    if (rank == 0) {
      std::printf(
          "# concord-coordbench: %d ranks, %d tensors/iteration over %d cycles, %d iterations after %d "
          "warm-up, seed %llu\n",
          size, options.tensors, options.cycles, options.iterations, options.warmup,
          static_cast<unsigned long long>(options.seed));
      std::printf(
          "# per iteration: gathers = coordinator rounds; time = negotiate() wall time, max over ranks;\n"
          "# coord B / worker B = bytes sent + received on the control communicator by rank 0 / rank 1\n");
      std::printf("%6s %10s %8s %8s %8s %12s %12s %14s %14s\n", "ranks", "cache", "cycles", "gathers", "hits",
                  "time(us)", "us/cycle", "coord B", "worker B");
      std::fflush(stdout);
    }
    std::vector<Result> results;
    for (uint32_t capacity : capacities) {
      const Result r = run(options, capacity, rank, size);
      results.push_back(r);
      if (rank != 0) continue;
      const std::string cache = capacity == 0 ? "off" : "on(" + std::to_string(capacity) + ")";
      std::printf("%6d %10s %8.1f %8.2f %8.1f %12.1f %12.2f %14.0f %14.0f\n", size, cache.c_str(), r.cycles, r.gathers,
                  r.hits, r.seconds * 1e6, r.cycles > 0 ? r.seconds * 1e6 / r.cycles : 0.0, r.coordinator_bytes,
                  r.worker_bytes);
      std::fflush(stdout);
      if (capacity > 0 && capacity >= static_cast<uint32_t>(options.tensors) && r.max_gathers > 0) {
        std::fprintf(stderr, "concord-coordbench: %llu coordinator gathers in a timed iteration with the cache on\n",
                     static_cast<unsigned long long>(r.max_gathers));
        status = 1;
      }
    }
    if (rank == 0 && results.size() == 2 && results[1].coordinator_bytes > 0)
      std::printf("# %d ranks: coordinator bytes/iteration cache-off / cache-on = %.1f (worker: %.1f)\n", size,
                  results[0].coordinator_bytes / results[1].coordinator_bytes,
                  results[1].worker_bytes > 0 ? results[0].worker_bytes / results[1].worker_bytes : 0.0);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-coordbench (rank %d): %s\n", rank, error.what());
    status = 2;
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  return status;
}
