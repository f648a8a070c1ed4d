// concord-calibrate: measures the machine constants of the alpha-beta-gamma cost model
// (src/algorithms/cost_model.h) and writes them with CostParams::save, so that the
// registry's "auto" choice ranks algorithms with this machine's numbers.
//
//   mpirun -np 4 build/tools/concord-calibrate [-o ~/.cache/concord/cost_model.json] [-s 4M] [-n 200]
//
// Steps (all through Communicator isend/irecv, as the algorithms send):
//   1. alpha: ranks are paired within their node (local ranks 0-1, 2-3, ...; nodes from
//      MPI's shared-memory split) and all pairs ping-pong 8-byte messages at once;
//      alpha = half the median round trip, averaged over pairs.
//   2. beta: the same pairs ping-pong -s bytes; beta = (half median round trip - alpha) / bytes.
//   3. gamma: every rank times reduce_inplace of max(-s, 32 MiB) bytes of float32 (sum),
//      larger than the caches as a gradient buffer is;
//      gamma = seconds / byte, averaged over ranks.
//   3b. mpi_alpha, mpi_beta: MPI_Allreduce over all ranks of 8 bytes and of max(-s, 64 MiB)
//      bytes (large enough to include the fresh-scratch page faults Open MPI pays there),
//      timed; the rounds and bytes of AllreduceMpi::cost (the model of MPI's algorithm) are
//      solved for the two constants (gamma taken from step 3).
//   4. inter_alpha, inter_beta: as 1 and 2 with rank l of node 2k paired with rank l of
//      node 2k+1, when the ranks span more than one node; otherwise the intra-node values
//      are copied (and the output says so).
//   5. inter_gap (LogGP's gap g, for concord-sim --inter-gap): the same inter-node pairs; the
//      initiator sends a burst of 32 8-byte messages, the responder answers the last one;
//      g = (median burst round trip - 2 inter_alpha) / 31, at least 0. Written into the JSON file
//      as "inter_gap" (CostParams ignores it; only the simulator uses it), and removed from
//      the file when not measured (one node).
// Phases are separated by barriers; pairs run concurrently, as ranks do in a collective.
// Needs at least 2 ranks on one node for the intra-node values (else they keep their
// defaults, and the output says so). Exit status: 0; 1 with fewer than 2 ranks; 2 on an
// error; CLI11's code for a bad flag.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "algorithms/allreduce_mpi.h"
#include "algorithms/cost_model.h"
#include "common/reduce.h"
#include "tools/common/mpi_tool.h"
#include "tools/common/sizes.h"
#include "tools/common/timing.h"
#include "transport/mpi_communicator.h"
#include "transport/request_set.h"

using namespace concord;

namespace {

constexpr size_t kSmallBytes = 8;
constexpr int kTag = 7;

// This rank's partner in one phase, or peer -1 when it sits the phase out.
struct Pairing {
  int peer = -1;
  bool initiator = false;
};

// Pairs local ranks 0-1, 2-3, ... within each node (`inter` false), or local rank l of
// node 2k with local rank l of node 2k+1 (`inter` true).
Pairing pairing(const std::vector<int>& node_of_rank, int rank, bool inter) {
  auto local_index = [&](int r) {
    int index = 0;
    for (int q = 0; q < r; ++q) index += node_of_rank[q] == node_of_rank[r];
    return index;
  };
  auto rank_of = [&](int node, int index) {
    for (int q = 0; q < static_cast<int>(node_of_rank.size()); ++q)
      if (node_of_rank[q] == node && index-- == 0) return q;
    return -1;
  };
  const int node = node_of_rank[rank], local = local_index(rank);
  Pairing result;
  if (inter) {
    result.peer = rank_of(node ^ 1, local);
    result.initiator = node % 2 == 0;
  } else {
    result.peer = rank_of(node, local ^ 1);
    result.initiator = local % 2 == 0;
  }
  return result;
}

// Half the median round trip of `bytes`-byte messages with `pairing.peer`, on the initiator;
// the responder returns -1. `iterations` timed round trips after a few untimed ones. The
// median, not the mean: one stall of the shared machine (tens of ms) lifted the mean of 200
// round trips over 2 emulated hosts from about 10 us to 188 us in one calibration.
double half_round_trip(Communicator& comm, const Pairing& pairing, size_t bytes, int iterations) {
  std::vector<uint8_t> send(bytes, 1), recv(bytes);
  RequestSet requests;
  const double median = tools::median_seconds(3, iterations, [&] {
    if (pairing.initiator) {
      requests.post(comm.isend(send.data(), bytes, pairing.peer, kTag));
      requests.post(comm.irecv(recv.data(), bytes, pairing.peer, kTag));
      requests.wait();
    } else {
      requests.post(comm.irecv(recv.data(), bytes, pairing.peer, kTag));
      requests.wait();
      requests.post(comm.isend(send.data(), bytes, pairing.peer, kTag));
      requests.wait();
    }
  });
  return pairing.initiator ? median / 2 : -1;
}

// Seconds of one burst of `burst` small messages from the initiator to `pairing.peer`,
// answered by one message after the last, on the initiator (median over `iterations` bursts
// after one untimed); the responder returns -1.
double burst_round_trip(Communicator& comm, const Pairing& pairing, int burst, int iterations) {
  std::vector<uint8_t> data(kSmallBytes * burst, 1);
  RequestSet requests;
  const double median = tools::median_seconds(1, iterations, [&] {
    for (int m = 0; m < burst; ++m) {
      uint8_t* slot = data.data() + m * kSmallBytes;
      requests.post(pairing.initiator ? comm.isend(slot, kSmallBytes, pairing.peer, kTag)
                                      : comm.irecv(slot, kSmallBytes, pairing.peer, kTag));
    }
    requests.wait();
    requests.post(pairing.initiator ? comm.irecv(data.data(), kSmallBytes, pairing.peer, kTag)
                                    : comm.isend(data.data(), kSmallBytes, pairing.peer, kTag));
    requests.wait();
  });
  return pairing.initiator ? median : -1;
}

// Mean over ranks of `value`, ignoring ranks that pass a negative value; -1 when none
// measured. Collective.
double mean_over_ranks(double value) {
  double in[2] = {value >= 0 ? value : 0, value >= 0 ? 1.0 : 0.0}, out[2] = {0, 0};
  MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out[1] > 0 ? out[0] / out[1] : -1;
}

// LogGP's gap between `pairing`'s small messages (step 5 of the header), given the pair's
// latency `alpha`; -1 when no pair exists. Collective.
double message_gap(Communicator& comm, const Pairing& pairing, double alpha, int iterations) {
  constexpr int kBurst = 32;
  MPI_Barrier(MPI_COMM_WORLD);
  const double burst = pairing.peer >= 0 ? burst_round_trip(comm, pairing, kBurst, std::max(iterations / 10, 5)) : -1;
  const double mean = mean_over_ranks(burst);
  return mean < 0 ? -1 : std::max(mean - 2 * alpha, 0.0) / (kBurst - 1);
}

// alpha and beta over the pairs of one phase; negative when no pair exists.
std::pair<double, double> link_constants(Communicator& comm, const Pairing& pairing, size_t large_bytes,
                                         int iterations) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double small = pairing.peer >= 0 ? half_round_trip(comm, pairing, kSmallBytes, iterations) : -1;
  const double alpha = mean_over_ranks(small);
  const double large =
      pairing.peer >= 0 ? half_round_trip(comm, pairing, large_bytes, std::max(iterations / 20, 5)) : -1;
  const double large_mean = mean_over_ranks(large);
  if (alpha < 0) return {-1, -1};
  return {alpha, std::max(large_mean - alpha, 1e-12) / static_cast<double>(large_bytes)};
}

double reduction_seconds_per_byte(size_t bytes, int iterations) {
  const size_t count = std::max<size_t>(bytes / 4, 1);
  std::vector<float> dst(count, 1.0f), src(count, 0.5f);
  reduce_inplace(dst.data(), src.data(), count, DataType::kFloat32, ReduceOp::kSum);  // fault the pages in
  const int repeats = std::max(iterations / 20, 5);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < repeats; ++i) reduce_inplace(dst.data(), src.data(), count, DataType::kFloat32, ReduceOp::kSum);
  return mean_over_ranks((MPI_Wtime() - start) / repeats / static_cast<double>(count * 4));
}

// Mean seconds of MPI_Allreduce (float32 sum, in place) of `bytes` bytes, slowest rank.
double mpi_allreduce_seconds(size_t bytes, int iterations) {
  std::vector<float> data(std::max<size_t>(bytes / 4, 1), 1.0f);
  MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i)
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double mine = (MPI_Wtime() - start) / iterations, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Fits mpi_alpha and mpi_beta of `params` (gamma already set) to MPI_Allreduce's times.
void fit_mpi_constants(CostParams& params, int ranks, const std::vector<int>& nodes, size_t large_bytes,
                       int iterations) {
  Problem problem;
  problem.ranks = ranks;
  problem.nodes = *std::max_element(nodes.begin(), nodes.end()) + 1;
  problem.count = 2;
  const Cost small = AllreduceMpi::cost(problem);
  problem.count = large_bytes / 4;
  const Cost large = AllreduceMpi::cost(problem);
  const double t_small = mpi_allreduce_seconds(8, iterations);
  const double t_large = mpi_allreduce_seconds(large_bytes, std::max(iterations / 20, 5));
  params.mpi_alpha = t_small / std::max(small.native_rounds, 1.0);
  const double rest = t_large - large.native_rounds * params.mpi_alpha - large.reduce_bytes * params.gamma;
  params.mpi_beta = std::max(rest, 1e-12) / std::max(large.native_wire_bytes, 1.0);
}

// Sets `key` to `value` in the JSON object of file `path` (written by CostParams::save), or
// removes it when `value` < 0 (not measured: an earlier run's value must not survive).
void set_key(const std::string& path, const char* key, double value) {
  nlohmann::json json;
  {
    std::ifstream in(path);
    json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  if (!json.is_object()) throw std::runtime_error("cannot read back '" + path + "'");
  if (value < 0) json.erase(key);
  else json[key] = value;
  std::ofstream out(path);
  out << json.dump(2) << "\n";
  if (!out.good()) throw std::runtime_error("cannot write '" + path + "'");
}

std::string default_output() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/concord/cost_model.json";
}

}  // namespace

int main(int argc, char** argv) {
  tools::MpiTool mpi(argc, argv);
  CLI::App app{"concord-calibrate: measure alpha, beta, gamma of the cost model"};
  std::string output = default_output(), large = "4M";
  int iterations = 200;
  app.add_option("-o,--output", output, "JSON file to write (CostParams::save)");
  app.add_option("-s,--size", large, "large message and reduction size (bytes; K, M, G suffixes)");
  app.add_option("-n,--iters", iterations, "small-message round trips (large ones: n/20, at least 5)")
      ->check(CLI::Range(1, 1 << 30));
  if (const auto code = mpi.parse(app, argc, argv)) return *code;
  if (mpi.size() < 2) {
    if (mpi.rank() == 0) std::fprintf(stderr, "concord-calibrate: run under mpirun with at least 2 ranks\n");
    return 1;
  }
  try {
    const size_t large_bytes = std::max<size_t>(tools::parse_size(large), kSmallBytes);
    MpiCommunicator comm(MPI_COMM_WORLD);
    const std::vector<int> nodes = node_of_every_rank(MPI_COMM_WORLD);
    const bool several_nodes = *std::max_element(nodes.begin(), nodes.end()) > 0;
    CostParams params;  // defaults, kept for whatever cannot be measured
    const auto [alpha, beta] = link_constants(comm, pairing(nodes, comm.rank(), false), large_bytes, iterations);
    const bool intra_measured = alpha >= 0;
    if (intra_measured) {
      params.alpha = alpha;
      params.beta = beta;
    }
    params.gamma = reduction_seconds_per_byte(std::max<size_t>(large_bytes, size_t{32} << 20), iterations);
    fit_mpi_constants(params, comm.size(), nodes, std::max<size_t>(large_bytes, size_t{64} << 20), iterations);
    bool inter_measured = false;
    double inter_gap = -1;
    if (several_nodes) {
      const Pairing across = pairing(nodes, comm.rank(), true);
      const auto [inter_alpha, inter_beta] = link_constants(comm, across, large_bytes, iterations);
      inter_measured = inter_alpha >= 0;
      if (inter_measured) {
        params.inter_alpha = inter_alpha;
        params.inter_beta = inter_beta;
        inter_gap = message_gap(comm, across, inter_alpha, iterations);
      }
    } else {
      params.inter_alpha = params.alpha;
      params.inter_beta = params.beta;
    }
    if (comm.rank() == 0) {
      std::printf("# concord-calibrate: %d ranks on %d node(s), %zu-byte large messages\n", comm.size(),
                  *std::max_element(nodes.begin(), nodes.end()) + 1, large_bytes);
      std::printf("alpha       %.3e s        (%s)\n", params.alpha,
                  intra_measured ? "measured" : "no two ranks share a node: default");
      std::printf("beta        %.3e s/B      (%.2f GB/s)\n", params.beta, 1e-9 / params.beta);
      std::printf("gamma       %.3e s/B      (%.2f GB/s float32 sum)\n", params.gamma, 1e-9 / params.gamma);
      const char* inter_note = !several_nodes   ? "one node: copied from the intra-node values"
                               : inter_measured ? "measured"
                                                : "no inter-node pair: default";
      std::printf("inter_alpha %.3e s        (%s)\n", params.inter_alpha, inter_note);
      std::printf("inter_beta  %.3e s/B      (%.2f GB/s)\n", params.inter_beta, 1e-9 / params.inter_beta);
      std::printf("mpi_alpha   %.3e s        (MPI_Allreduce latency per round)\n", params.mpi_alpha);
      std::printf("mpi_beta    %.3e s/B      (MPI_Allreduce, %.2f GB/s per link)\n", params.mpi_beta,
                  1e-9 / params.mpi_beta);
      if (inter_gap >= 0)
        std::printf("inter_gap   %.3e s        (LogGP gap between inter-node messages; simulator only)\n", inter_gap);
      params.save(output);
      set_key(output, "inter_gap", inter_gap);
      std::printf("# written to %s\n", output.c_str());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord-calibrate (rank %d): %s\n", mpi.rank(), error.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return 0;
}
