#include "tools/bench_measure.h"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>

namespace concord::bench {
namespace {

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
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
  MPI_Barrier(MPI_COMM_WORLD);
  const long faults_before = minor_page_faults();
  const double start = MPI_Wtime();
  for (int i = 0; i < options.iterations; ++i) runner->run();
  const double mean = (MPI_Wtime() - start) / std::max(options.iterations, 1);
  const double faults = static_cast<double>(minor_page_faults() - faults_before) / std::max(options.iterations, 1);
  MPI_Allreduce(&mean, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  result.page_faults = faults;
  MPI_Bcast(&result.page_faults, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

}  // namespace concord::bench
