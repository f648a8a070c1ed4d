#include "tools/bench/bench_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "common/enforce.h"
#include "tools/common/sizes.h"

namespace concord::bench {
namespace {

const std::map<std::string, Collective>& collectives() {
  static const std::map<std::string, Collective> names = {{"allreduce", Collective::kAllreduce},
                                                          {"allgather", Collective::kAllgather},
                                                          {"broadcast", Collective::kBroadcast},
                                                          {"reduce_scatter", Collective::kReduceScatter},
                                                          {"alltoall", Collective::kAlltoall}};
  return names;
}

const std::map<std::string, ReduceOp>& ops() {
  static const std::map<std::string, ReduceOp> names = {{"sum", ReduceOp::kSum},
                                                        {"avg", ReduceOp::kAverage},
                                                        {"min", ReduceOp::kMin},
                                                        {"max", ReduceOp::kMax},
                                                        {"prod", ReduceOp::kProduct}};
  return names;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// A CLI11 check that accepts what `parse` accepts (its exception's message otherwise).
template <typename Parse>
CLI::Validator accepted_by(Parse parse, const char* name) {
  return CLI::Validator(
      [parse](std::string& text) {
        try {
          parse(text);
          return std::string();
        } catch (const std::exception& error) {
          return std::string(error.what());
        }
      },
      name);
}

}  // namespace

const char* collective_name(Collective collective) {
  for (const auto& [name, value] : collectives())
    if (value == collective) return name.c_str();
  return "unknown";
}

double bus_factor(Collective collective, int ranks) {
  const double p = ranks;
  switch (collective) {
    case Collective::kAllreduce: return 2.0 * (p - 1) / p;
    case Collective::kBroadcast: return 1.0;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall: return (p - 1) / p;
  }
  return 1.0;
}

bool has_op(Collective collective) {
  return collective == Collective::kAllreduce || collective == Collective::kReduceScatter;
}

size_t row_count(Collective collective, size_t bytes, size_t element_size, int ranks) {
  if (bytes == 0) return 0;
  const size_t count = bytes / element_size;
  if (collective == Collective::kAllreduce || collective == Collective::kBroadcast) return std::max<size_t>(count, 1);
  const size_t p = static_cast<size_t>(ranks);
  return std::max<size_t>(count / p, 1) * p;
}

std::optional<BenchOptions> parse_options(const tools::MpiTool& mpi, int argc, char** argv, int& exit_code) {
  CLI::App app{"concord-bench: collective benchmark in the nccl-tests format"};
  BenchOptions options;
  std::string min_bytes = "1K", max_bytes = "64M", dtype = "float32", collective = "allreduce";
  std::string algorithms = "auto,mpi";
  int check = 1;
  app.add_option("-b,--minbytes", min_bytes, "smallest size (bytes; K, M, G suffixes)")
      ->check(accepted_by(tools::parse_size, "BYTES"));
  app.add_option("-e,--maxbytes", max_bytes, "largest size (bytes; K, M, G suffixes)")
      ->check(accepted_by(tools::parse_size, "BYTES"));
  app.add_option("-f,--stepfactor", options.step_factor, "multiply the size by this factor between rows")
      ->check(CLI::Range(1.0 + 1e-9, 1e9));
  app.add_option("-n,--iters", options.iterations, "timed iterations per row")->check(CLI::Range(1, 1 << 30));
  app.add_option("-w,--warmup_iters", options.warmup, "untimed iterations per row")->check(CLI::NonNegativeNumber);
  app.add_option("-T,--min-time", options.min_seconds,
                 "time each row for at least this many seconds (more iterations than -n where calls are short; "
                 "the same number on every rank, at most 1e6 unless -n is larger); 0: exactly -n")
      ->check(CLI::Range(0.0, 3600.0))
      ->check(CLI::Validator(
          [](std::string& text) { return std::isfinite(std::stod(text)) ? std::string() : "not a finite number"; },
          "FINITE"));
  app.add_option("-R,--repeats", options.repeats,
                 "measure every row this many times, in passes over all sizes and algorithms (within a pass "
                 "all algorithms of one size run back to back); a row's time is its median pass")
      ->check(CLI::Range(1, 1000));
  app.add_option("-c,--check", check, "1: check every element of one call's result; 0: do not");
  app.add_option("-o,--op", options.op_name, "sum, avg, min, max or prod (allreduce, reduce_scatter)")
      ->check(CLI::IsMember({"sum", "avg", "min", "max", "prod"}));
  app.add_option("-d,--datatype", dtype, "float32, float64, float16, bfloat16, int32, int64, int8, uint8")
      ->check(accepted_by(dtype_from_name, "DTYPE"));
  app.add_option("-C,--collective", collective, "allreduce, allgather, broadcast, reduce_scatter or alltoall")
      ->check(CLI::IsMember({"allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall"}));
  app.add_option("-a,--algorithms", algorithms,
                 "comma-separated: registry names, mpi, runtime (allreduce), auto, or all "
                 "(every registered algorithm + mpi + auto); registry:NAME names a registry entry "
                 "whose name is taken by mpi, runtime or auto");
  app.add_option("-J,--json", options.json_path, "write every measurement to this JSON file (rank 0)");
  if (const auto code = mpi.parse(app, argc, argv)) {
    exit_code = *code;
    return std::nullopt;
  }
  options.min_bytes = tools::parse_size(min_bytes);
  options.max_bytes = tools::parse_size(max_bytes);
  options.check = check != 0;
  options.op = ops().at(options.op_name);
  options.dtype = dtype_from_name(dtype);
  options.collective = collectives().at(collective);
  options.algorithms = split_list(algorithms);
  return options;
}

}  // namespace concord::bench
