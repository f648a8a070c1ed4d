// concord-bench: allreduce bandwidth in the nccl-tests format, with Concord's ring,
// MPI_Allreduce and the full Concord runtime side by side in one run.
//
//   mpirun -np 4 build/tools/concord-bench -b 1K -e 64M -f 2 -n 20 -w 5 -c 1
//
// Columns (per size and algorithm, out-of-place then in-place): time in microseconds (the
// slowest rank's mean), algbw = bytes / time, busbw = algbw * 2(P-1)/P (the nccl-tests
// allreduce factor: the bytes each rank's busiest link carries per byte of message), and
// #wrong, the number of result elements different from the exact expected value. A closing
// table gives, per size, each algorithm's in-place time and its speed relative to
// MPI_Allreduce (mpi time / algorithm time: > 1 means faster than MPI).
#include <CLI/CLI.hpp>
#include <mpi.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "tools/mpi_tool.h"
#include "common/enforce.h"
#include "tools/bench_allreduce.h"

using namespace concord;

namespace {

size_t parse_size(const std::string& text) {
  size_t end = 0;
  const double value = std::stod(text, &end);
  const std::string suffix = text.substr(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw CLI::ValidationError("size", "bad size suffix in '" + text + "'");
  return static_cast<size_t>(value * scale);
}

ReduceOp parse_op(const std::string& text) {
  static const std::map<std::string, ReduceOp> ops = {{"sum", ReduceOp::kSum},   {"avg", ReduceOp::kAverage},
                                                      {"min", ReduceOp::kMin},   {"max", ReduceOp::kMax},
                                                      {"prod", ReduceOp::kProduct}};
  auto it = ops.find(text);
  if (it == ops.end()) throw CLI::ValidationError("-o", "op must be sum, avg, min, max or prod");
  return it->second;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  const int rank = mpi.rank(), size = mpi.size();

  CLI::App app{"concord-bench: allreduce benchmark in the nccl-tests format"};
  std::string min_bytes = "1K", max_bytes = "64M", op_name = "sum", dtype_name_arg = "float32";
  std::string algorithms = "ring,mpi";
  double factor = 2;
  int iterations = 20, warmup = 5, check = 1;
  app.add_option("-b,--minbytes", min_bytes, "smallest message (bytes; K, M, G suffixes)");
  app.add_option("-e,--maxbytes", max_bytes, "largest message (bytes; K, M, G suffixes)");
  app.add_option("-f,--stepfactor", factor, "multiply the size by this factor between rows")->check(CLI::PositiveNumber);
  app.add_option("-n,--iters", iterations, "timed iterations per size")->check(CLI::NonNegativeNumber);
  app.add_option("-w,--warmup_iters", warmup, "untimed iterations per size")->check(CLI::NonNegativeNumber);
  app.add_option("-c,--check", check, "1: check every element of one run's result");
  app.add_option("-o,--op", op_name, "sum, avg, min, max or prod");
  app.add_option("-d,--datatype", dtype_name_arg, "float32, float64, float16, bfloat16, int32, int64, int8, uint8");
  app.add_option("-a,--algorithms", algorithms, "comma-separated: ring, mpi, runtime");
  if (const auto code = mpi.parse(app, argc, argv)) return *code;

  int status = 0;
  try {
    const DataType dtype = dtype_from_name(dtype_name_arg);
    const ReduceOp op = parse_op(op_name);
    const auto names = split(algorithms);
    for (const auto& name : names)
      CONCORD_ENFORCE(bench::is_known_algorithm(name), InvalidArgument, "unknown algorithm '", name,
                      "': use ring, mpi or runtime");
    const size_t element = dtype_size(dtype);
    const double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 0.0;
    if (rank == 0) {
      std::printf("# concord-bench allreduce: %d ranks, %s, %s, %d iterations, %d warm-up\n", size,
                  dtype_name(dtype), op_name.c_str(), iterations, warmup);
      std::printf("# busbw = algbw * 2(P-1)/P = algbw * %.3f\n#\n", bus_factor);
      std::printf("#%11s %11s %9s %6s %9s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "", "", "", "", "",
                  "out-of-place", "", "", "", "in-place", "", "", "");
      std::printf("#%11s %11s %9s %6s %9s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "size", "count", "type",
                  "redop", "algorithm", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
      std::printf("#%11s %11s %9s %6s %9s   %10s %8s %8s %6s   %10s %8s %8s %6s\n", "(B)", "(elements)", "", "",
                  "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    std::map<size_t, std::map<std::string, double>> in_place_time;
    for (double bytes_f = static_cast<double>(parse_size(min_bytes)); bytes_f <= parse_size(max_bytes);
         bytes_f = std::max(bytes_f * factor, bytes_f + element)) {
      const size_t count = std::max<size_t>(static_cast<size_t>(bytes_f) / element, 1);
      const size_t bytes = count * element;
      for (const auto& name : names) {
        const auto out = bench::measure(name, count, dtype, op, false, iterations, warmup, check != 0);
        const auto in = bench::measure(name, count, dtype, op, true, iterations, warmup, check != 0);
        in_place_time[bytes][name] = in.seconds;
        if (rank != 0) continue;
        const double out_algbw = bytes / out.seconds / 1e9, in_algbw = bytes / in.seconds / 1e9;
        std::printf(" %11zu %11zu %9s %6s %9s   %10.1f %8.3f %8.3f %6ld   %10.1f %8.3f %8.3f %6ld\n", bytes, count,
                    dtype_name(dtype), op_name.c_str(), name.c_str(), out.seconds * 1e6, out_algbw,
                    out_algbw * bus_factor, out.wrong, in.seconds * 1e6, in_algbw, in_algbw * bus_factor,
                    in.wrong);
        std::fflush(stdout);
        if (out.wrong > 0 || in.wrong > 0) status = 1;
      }
    }
    if (rank == 0 && in_place_time.size() > 0 && in_place_time.begin()->second.contains("mpi")) {
      std::printf("#\n# in-place time (us) and speed relative to MPI_Allreduce (mpi time / time; > 1 = faster)\n");
      std::printf("#%11s", "size");
      for (const auto& name : names) std::printf(" %10s", name.c_str());
      for (const auto& name : names)
        if (name != "mpi") std::printf(" %12s", (name + "/mpi").c_str());
      std::printf("\n");
      for (const auto& [bytes, times] : in_place_time) {
        std::printf(" %11zu", bytes);
        for (const auto& name : names) std::printf(" %10.1f", times.at(name) * 1e6);
        for (const auto& name : names)
          if (name != "mpi") std::printf(" %12.2f", times.at("mpi") / times.at(name));
        std::printf("\n");
      }
    }
  } catch (const std::exception& error) {
    if (rank == 0) std::fprintf(stderr, "concord-bench: %s\n", error.what());
    status = 2;
  }
  return status;
}
