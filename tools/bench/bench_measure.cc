#include "tools/bench/bench_measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>

namespace concord::bench {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// `value` combined over every rank by `combine` (gathered to rank 0, the result
// broadcast): the control collectives every transport has, so the bench runs over MPI and UCX.
template <typename T>
T over_ranks(Communicator& comm, T value, const std::function<T(T, T)>& combine) {
  std::vector<uint8_t> mine(sizeof(T));
  std::memcpy(mine.data(), &value, sizeof(T));
  const auto all = comm.gather_bytes(mine, 0);
  std::vector<uint8_t> result(sizeof(T));
  if (comm.rank() == 0) {
    T total;
    std::memcpy(&total, all[0].data(), sizeof(T));
    for (size_t r = 1; r < all.size(); ++r) {
      T other;
      std::memcpy(&other, all[r].data(), sizeof(T));
      total = combine(total, other);
    }
    std::memcpy(result.data(), &total, sizeof(T));
  }
  comm.broadcast_bytes(result, 0);
  std::memcpy(&value, result.data(), sizeof(T));
  return value;
}

double max_over_ranks(Communicator& comm, double value) {
  return over_ranks<double>(comm, value, [](double a, double b) { return std::max(a, b); });
}

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// -n, or with -T as many calls as fill min_seconds at the time of one probe call (the
// slowest rank's, so every rank makes the same number of collective calls), at most 1e6.
int timed_iterations(Communicator& comm, CollectiveRunner& runner, const BenchOptions& options) {
  if (options.min_seconds <= 0) return options.iterations;
  comm.barrier();
  const double start = now_seconds();
  runner.run();
  const double probe = max_over_ranks(comm, now_seconds() - start);
  const double wanted = std::min(std::ceil(options.min_seconds / std::max(probe, 1e-9)), 1e6);
  return static_cast<int>(std::max(wanted, static_cast<double>(options.iterations)));
}

}  // namespace

Measurement measure(BenchContext& context, const std::string& algorithm, const RowSpec& spec,
                    const BenchOptions& options) {
  Measurement result;
  Resolution resolution;
  auto runner = make_runner(context, algorithm, spec, resolution);
  result.chosen = resolution.registry_name;
  if (!runner) {
    result.skip_reason = resolution.skip_reason;
    return result;
  }
  result.measured = true;
  if (options.check) {
    runner->fill();
    runner->run();
    result.wrong = over_ranks<long>(context.comm(), runner->count_wrong(), [](long a, long b) { return a + b; });
  }
  runner->fill();
  for (int i = 0; i < options.warmup; ++i) runner->run();
  Communicator& comm = context.comm();
  const int iterations = timed_iterations(comm, *runner, options);
  comm.barrier();
  const long faults_before = minor_page_faults();
  const double start = now_seconds();
  for (int i = 0; i < iterations; ++i) runner->run();
  const double mean = (now_seconds() - start) / std::max(iterations, 1);
  const double faults = static_cast<double>(minor_page_faults() - faults_before) / std::max(iterations, 1);
  result.seconds = max_over_ranks(comm, mean);
  std::vector<uint8_t> rank0_faults(sizeof faults);  // rank 0's page faults on every rank
  std::memcpy(rank0_faults.data(), &faults, sizeof faults);
  comm.broadcast_bytes(rank0_faults, 0);
  std::memcpy(&result.page_faults, rank0_faults.data(), sizeof faults);
  return result;
}

}  // namespace concord::bench
