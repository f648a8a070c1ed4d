// concord-turnaround: gradient turnaround time of allreduce algorithms (C-Cube, "gradient
// queuing"): the time from start() until the first chunk of the buffer (the range that
// begins at byte 0) is final on every rank, next to the time of the whole allreduce.
//
//   mpirun -np 4 build/tools/concord-turnaround -b 1K -e 256M -f 4 -n 10 -a tree,overlapped_tree
//
// Each rank drives the algorithm itself and asks it after every progress() which byte
// ranges became final (AllreduceAlgorithm::take_final_ranges, through FinalRangeCollector);
// it notes the time at which byte 0 is covered and the time of kDone. Per size and
// algorithm the columns are the slowest rank's mean over -n calls (after -w warm-up calls),
// in microseconds, and their ratio. Calls are separated by barriers. Algorithms that report
// nothing before the end (e.g. recursive_doubling) show turnaround == time. Every call
// reduces ones and is checked (every element == P); the exit status is 1 if any is wrong.
// The tree allreduces get their chunk size per size as the runtime gives it
// (CONCORD_TREE_CHUNKS through tree_chunked_problem; default `turnaround`); the last
// column is the chunk size each row ran with.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/tree_chunking.h"
#include "common/config.h"
#include "tools/common/mpi_tool.h"
#include "tools/common/sizes.h"
#include "transport/mpi_communicator.h"

using namespace concord;

namespace {

struct Times {
  double turnaround = 0;  ///< seconds until byte 0 is final on this rank
  double total = 0;       ///< seconds until kDone on this rank
};

// One allreduce of `data` (float32 sum), driven here so that final ranges are seen.
Times timed_allreduce(AllreduceAlgorithm& algorithm, std::vector<float>& data) {
  Times times;
  const size_t bytes = data.size() * sizeof(float);
  const double start = MPI_Wtime();
  algorithm.start(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
  FinalRangeCollector collector(algorithm, bytes);
  std::vector<ByteRange> ranges;
  Backoff backoff;
  bool first_seen = bytes == 0;
  for (;;) {
    const Progress state = algorithm.progress();
    ranges.clear();
    collector.collect(state, ranges);
    for (const ByteRange& range : ranges)
      if (!first_seen && range.offset == 0) {
        times.turnaround = MPI_Wtime() - start;
        first_seen = true;
      }
    if (state == Progress::kDone) break;
    if (ranges.empty()) backoff.wait();
  }
  times.total = MPI_Wtime() - start;
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  CLI::App app{"concord-turnaround: time until the first chunk of an allreduce is final on every rank"};
  std::string min_bytes = "1K", max_bytes = "64M",
              algorithms = "tree,overlapped_tree,double_tree,overlapped_double_tree";
  double factor = 4;
  int iterations = 10, warmup = 3;
  app.add_option("-b,--minbytes", min_bytes, "smallest message (bytes; K, M, G suffixes)");
  app.add_option("-e,--maxbytes", max_bytes, "largest message");
  app.add_option("-f,--stepfactor", factor, "size multiplier between rows")->check(CLI::Range(1.01, 1e6));
  app.add_option("-n,--iters", iterations, "timed calls per row")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", warmup, "untimed calls first")->check(CLI::NonNegativeNumber);
  app.add_option("-a,--algorithms", algorithms, "comma-separated allreduce algorithms of the registry");
  if (const auto code = mpi.parse(app, argc, argv)) return *code;
  try {
    MpiCommunicator comm(MPI_COMM_WORLD);
    ScratchBuffer scratch;
    const Config config = Config::from_env();
    AlgorithmContext context{comm, scratch, static_cast<size_t>(config.ring_chunk_bytes),
                             node_of_every_rank(MPI_COMM_WORLD), CostParams::from_env()};
    long wrong = 0;  // result elements != P, this rank
    std::vector<std::string> names;
    for (size_t at = 0; at <= algorithms.size();) {
      const size_t comma = std::min(algorithms.find(',', at), algorithms.size());
      names.push_back(algorithms.substr(at, comma - at));
      at = comma + 1;
    }
    if (mpi.rank() == 0)
      std::printf(
          "# %d ranks, float32 sum, chunk %zu bytes (trees: CONCORD_TREE_CHUNKS=%s); times in us (slowest "
          "rank's mean)\n"
          "%12s  %-24s %14s %14s %10s %12s\n",
          mpi.size(), context.chunk_bytes, config_value("CONCORD_TREE_CHUNKS").c_str(), "size", "algorithm",
          "turnaround", "time", "time/turn", "chunk");
    for (size_t bytes = tools::parse_size(min_bytes); bytes <= tools::parse_size(max_bytes);
         bytes = std::max(bytes + 1, static_cast<size_t>(bytes * factor))) {
      std::vector<float> data(bytes / sizeof(float), 1.0f);
      for (const auto& name : names) {
        const auto& entry = find_algorithm(allreduce_algorithms(), name);
        const Problem problem = make_problem(context, data.size(), DataType::kFloat32, ReduceOp::kSum);
        if (const std::string reason = entry.declines(problem); !reason.empty()) {
          if (mpi.rank() == 0) std::printf("%12zu  %-24s declines: %s\n", bytes, name.c_str(), reason.c_str());
          continue;
        }
        AlgorithmContext row_context = context;  // the runtime's chunking (tree allreduces)
        row_context.chunk_bytes =
            tree_chunked_problem(name, problem, config.tree_chunks, context.cost_params).chunk_bytes;
        auto algorithm = entry.create(row_context);
        Times sum;
        for (int i = 0; i < warmup + iterations; ++i) {
          std::fill(data.begin(), data.end(), 1.0f);
          MPI_Barrier(MPI_COMM_WORLD);
          const Times t = timed_allreduce(*algorithm, data);
          wrong +=
              std::count_if(data.begin(), data.end(), [&](float x) { return x != static_cast<float>(mpi.size()); });
          if (i < warmup) continue;
          sum.turnaround += t.turnaround;
          sum.total += t.total;
        }
        double mine[2] = {sum.turnaround / iterations, sum.total / iterations}, slowest[2] = {0, 0};
        MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (mpi.rank() == 0)
          std::printf("%12zu  %-24s %14.2f %14.2f %10.2f %12zu\n", bytes, name.c_str(), slowest[0] * 1e6,
                      slowest[1] * 1e6, slowest[0] > 0 ? slowest[1] / slowest[0] : 0.0, row_context.chunk_bytes);
      }
    }
    long total_wrong = 0;
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (total_wrong > 0) {
      if (mpi.rank() == 0) std::printf("# %ld wrong result elements\n", total_wrong);
      return 1;
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-turnaround (rank %d): %s\n", mpi.rank(), error.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return 0;
}
