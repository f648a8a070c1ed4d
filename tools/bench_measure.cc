#include "tools/bench_measure.h"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

namespace concord::bench {
namespace {

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// -n, or with -T as many calls as fill min_seconds at the time of one probe call (the
// slowest rank's, so every rank makes the same number of collective calls), at most 1e6.
int timed_iterations(CollectiveRunner& runner, const BenchOptions& options) {
  if (options.min_seconds <= 0) return options.iterations;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  runner.run();
  const double mine = MPI_Wtime() - start;
  double probe = 0;
  MPI_Allreduce(&mine, &probe, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
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
    const long wrong = runner->count_wrong();
    MPI_Allreduce(&wrong, &result.wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  runner->fill();
  for (int i = 0; i < options.warmup; ++i) runner->run();
  const int iterations = timed_iterations(*runner, options);
  MPI_Barrier(MPI_COMM_WORLD);
  const long faults_before = minor_page_faults();
  const double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) runner->run();
  const double mean = (MPI_Wtime() - start) / std::max(iterations, 1);
  const double faults = static_cast<double>(minor_page_faults() - faults_before) / std::max(iterations, 1);
  MPI_Allreduce(&mean, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  result.page_faults = faults;
  MPI_Bcast(&result.page_faults, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

}  // namespace concord::bench
