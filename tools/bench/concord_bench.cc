// concord-bench: collective bandwidth in the nccl-tests format, for every algorithm of
// Concord's registry (src/algorithms/registry.h), the MPI library's own collective
// ("mpi", the baseline), the Concord runtime ("runtime", allreduce only) and the cost
// model's choice ("auto"), side by side in one run.
//
//   mpirun -np 4 build/tools/concord-bench -C allreduce -a all -b 1K -e 64M -f 2 -n 20 -w 5 -c 1 -J out.json
//
// Flags (nccl-tests' where they exist): -b/-e/-f sizes, -n timed and -w warm-up iterations
// (-T: at least this many seconds per row; -R: passes, median kept), -c check, -o op,
// -d dtype, -C collective (allreduce, allgather, broadcast,
// reduce_scatter, alltoall), -a algorithms ("all" = every registered one + mpi + auto),
// -J JSON output for tools/plot/plot_bench.py. One table block per algorithm, sizes in rows,
// out-of-place then in-place columns `time algbw busbw #wrong` (bench_report.h gives the
// units and busbw factors); "all" adds a comparison per size (vs MPI, best, the model's
// choice, minor page faults per call).
//
// Exit status: 0; 1 when any #wrong > 0; 2 on an error (bad algorithm name, MPI failure);
// CLI11's code for a bad flag.

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "algorithms/autotune.h"
#include "common/config.h"
#include "common/enforce.h"
#include "tools/bench/bench_context.h"
#include "tools/bench/bench_measure.h"
#include "tools/bench/bench_report.h"
#include "tools/common/mpi_tool.h"

using namespace concord;
using namespace concord::bench;

namespace {

std::vector<size_t> row_sizes(const BenchOptions& options, int ranks) {
  const size_t element = dtype_size(options.dtype);
  std::vector<size_t> sizes;
  for (double bytes = static_cast<double>(options.min_bytes); bytes <= static_cast<double>(options.max_bytes);
       bytes = std::max(bytes * options.step_factor, bytes + 1)) {
    const size_t row = row_count(options.collective, static_cast<size_t>(bytes), element, ranks) * element;
    if (sizes.empty() || row > sizes.back()) sizes.push_back(row);
  }
  return sizes;
}

// Measures every algorithm at every size in -R passes: in each pass, size by size, every
// algorithm back to back (so the algorithms of one size are compared at nearly the same
// time, and drift over the run hits each pass alike); each row keeps its median pass (the
// lower of the two middle ones for an even count; its largest #wrong). Prints the rows
// (rank 0) once all are done; returns the exit status (0, or 1 for wrong results).
int measure_rows(const BenchOptions& options, BenchContext& context, Report& report, const std::vector<size_t>& sizes) {
  const size_t element = dtype_size(options.dtype);
  const size_t halves = 2;
  std::vector<std::vector<Measurement>> passes(report.algorithms.size() * sizes.size() * halves);
  for (int pass = 0; pass < options.repeats; ++pass)
    for (size_t s = 0; s < sizes.size(); ++s)
      for (size_t a = 0; a < report.algorithms.size(); ++a)
        for (bool in_place : {false, true}) {
          const RowSpec spec{options.collective, sizes[s] / element, options.dtype, options.op, in_place};
          passes[(a * sizes.size() + s) * halves + in_place].push_back(
              measure(context, report.algorithms[a], spec, options));
        }
  int status = 0;
  for (size_t a = 0; a < report.algorithms.size(); ++a) {
    if (context.rank() == 0) print_algorithm_title(report.algorithms[a]);
    for (size_t s = 0; s < sizes.size(); ++s) {
      Record rows[2];
      for (bool in_place : {false, true}) {
        std::vector<Measurement>& runs = passes[(a * sizes.size() + s) * halves + in_place];
        std::sort(runs.begin(), runs.end(),
                  [](const Measurement& x, const Measurement& y) { return x.seconds < y.seconds; });
        Measurement median = runs[(runs.size() - 1) / 2];  // the lower median for an even -R
        for (const auto& run : runs) median.wrong = std::max(median.wrong, run.wrong);
        rows[in_place] = Record{report.algorithms[a], sizes[s], sizes[s] / element, in_place, median};
        if (median.wrong > 0) status = 1;
        report.records.push_back(rows[in_place]);
      }
      if (context.rank() == 0) print_row(report, rows[0], rows[1]);
    }
  }
  return status;
}

// Runs every algorithm over every size; returns the exit status (0 or 1 for wrong results).
int run(const BenchOptions& options, BenchContext& context, Report& report) {
  const bool print = context.rank() == 0;
  const size_t element = dtype_size(options.dtype);
  const auto sizes = row_sizes(options, context.size());
  for (size_t bytes : sizes) {
    RowSpec spec{options.collective, bytes / element, options.dtype, options.op, false};
    report.choices.emplace_back(bytes, resolve_row(context, "auto", spec).registry_name);
    if (options.collective == Collective::kAllreduce && Config::from_env().autotune && context.size() > 1 &&
        bytes > 0) {
      const ReduceOp op = options.op == ReduceOp::kAverage ? ReduceOp::kSum : options.op;
      // As the runtime: above kMaxMeasuredBytes the cost model's choice.
      report.tuned_choices[bytes] = bytes <= kMaxMeasuredBytes
                                        ? context.tuned_allreduce(context.problem(spec.count, options.dtype, op))
                                        : report.choices.back().second;
    }
  }
  if (print) print_header(report);
  const int status = measure_rows(options, context, report, sizes);
  if (print && report.algorithms.size() > 1) print_comparison(report);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  int exit_code = 0;
  const auto options = parse_options(mpi, argc, argv, exit_code);
  if (!options) return exit_code;
  int status = 0;
  try {
    BenchContext context;
    Report report;
    report.options = *options;
    report.ranks = context.size();
    report.nodes = context.nodes();
    report.algorithms = expand_algorithms(options->algorithms, options->collective);
    try {  // unknown names fail here, on every rank alike
      for (const auto& name : report.algorithms)
        resolve_row(
            context, name,
            RowSpec{options->collective, static_cast<size_t>(context.size()), options->dtype, options->op, false});
    } catch (const InvalidArgument& error) {
      if (mpi.rank() == 0) std::fprintf(stderr, "concord-bench: %s\n", error.what());
      return 2;
    }
    status = run(*options, context, report);
    if (mpi.rank() == 0 && !options->json_path.empty()) write_json(report, options->json_path);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-bench (rank %d): %s\n", mpi.rank(), error.what());
    std::fflush(stderr);
    std::_Exit(2);  // at once: the launcher (mpirun, concord-run) then ends the other ranks
  }
  return status;
}
