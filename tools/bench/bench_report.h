// What concord-bench prints and writes: the nccl-tests table (one block per algorithm,
// columns `size count type redop | time algbw busbw #wrong` out of place, then the same
// in place), the closing comparison per size, and the JSON of every measurement.
//
// algbw = size / time (GB/s, 1e9 bytes), busbw = algbw * bus_factor(collective, P); times in
// microseconds, each the slowest rank's mean. #wrong is "N/A" when not checked, and a
// half that was skipped (e.g. in-place alltoall of a registry algorithm) prints N/A.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/bench/bench_measure.h"
#include "tools/bench/bench_options.h"

namespace concord::bench {

/// One measured half-row.
struct Record {
  std::string algorithm;  ///< as -a names it ("auto", "mpi", "ring", ...)
  size_t bytes = 0;
  size_t count = 0;
  bool in_place = false;
  Measurement measurement;
};

/// Everything one run produced, and how it was run.
struct Report {
  BenchOptions options;
  int ranks = 1;
  int nodes = 1;
  std::vector<std::string> algorithms;  ///< in -a order
  std::vector<Record> records;
  /// Per size in bytes, the cost model's choice for that size ("" when none accepts it).
  std::vector<std::pair<size_t, std::string>> choices;
  /// Allreduce with CONCORD_AUTOTUNE=1: per size, the algorithm measured selection chose
  /// (algorithms/autotune.h, timed before the rows are measured); empty otherwise.
  std::map<size_t, std::string> tuned_choices;
};

/// The title lines and the column header (rank 0 only prints).
void print_header(const Report& report);
/// "# algorithm NAME" before its rows.
void print_algorithm_title(const std::string& algorithm);
/// One table row from the out-of-place and in-place halves; skipped halves print N/A and
/// a comment line gives the reason; "auto" rows are preceded by the entry it chose.
void print_row(const Report& report, const Record& out_of_place, const Record& in_place);
/// The comparison per size: each algorithm's time, mpi time / its time (> 1 = faster than
/// MPI), its minor page faults per call, the best algorithm measured (auto and runtime
/// excluded), the cost model's choice and whether the choice's time is within 10% of the
/// best. In-place times, except for alltoall (out of place).
void print_comparison(const Report& report);
/// Writes the report as JSON: run settings and one object per record (collective,
/// algorithm, chosen, size in bytes, count, in_place, time in microseconds, algbw and busbw
/// in GB/s, wrong (-1 = not checked), page_faults per call, P, nodes) under "results", the
/// format tools/plot/plot_bench.py and concord-sim --validate read. Throws InvalidArgument when the
/// file cannot be written.
void write_json(const Report& report, const std::string& path);

}  // namespace concord::bench
