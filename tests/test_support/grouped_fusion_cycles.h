// The grouped-allreduce scenario of the fusion tests (Romero et al., NSDI 2022, section 3.2;
// Horovod's grouped_allreduce): every rank negotiates singles a, b, c and a group g.0..g.2
// through a Negotiator and plans fusion over each cycle's answer as Runtime::negotiate_round
// does (plan_fusion), so a test can check which tensors one cycle fused together. Used on the
// in-process transport (tests/unit/test_grouped_fusion.cc) and under mpirun
// (tests/mpi/mechanisms_test.cc).
#pragma once

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "control/negotiator.h"
#include "runtime/fusion.h"

namespace concord::testing_util {

using Batch = std::set<std::string>;   // the tensors of one fused response
using Cycle = std::vector<Batch>;      // the fused responses of one cycle, in order
using Iteration = std::vector<Cycle>;  // its cycles, until every tensor was answered

constexpr int kGroupedFusionIterations = 4;  // the first on the coordinator's path, the others from the cache
inline const std::vector<std::string> kGroup = {"g.0", "g.1", "g.2"};

/// A float32 sum allreduce request of `elements` elements, a member of group kGroup when
/// `grouped`.
inline Request grouped_fusion_request(int rank, const std::string& name, int64_t elements, bool grouped) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {elements};
  if (grouped) {
    r.group = kGroup[0];
    r.group_size = static_cast<int32_t>(kGroup.size());
  }
  return r;
}

/// Every rank submits singles a and b and the group at cycle 0, single c too unless
/// `late`; with `late`, the last rank submits the group and c at cycle 1 instead. Returns
/// each iteration's fused batches per cycle, as this rank planned them.
inline std::vector<Iteration> grouped_fusion_cycles(Communicator& comm, bool late) {
  const int rank = comm.rank(), P = comm.size();
  NegotiatorOptions options;
  options.stall_warning_seconds = 1e9;  // no timed stall checks
  options.stall_shutdown_seconds = 0;
  Negotiator negotiator(comm, options);
  std::vector<Iteration> iterations;
  for (int it = 0; it < kGroupedFusionIterations; ++it) {
    std::vector<std::vector<Request>> calls(2);
    const int group_call = late && rank == P - 1 ? 1 : 0;
    calls[0].push_back(grouped_fusion_request(rank, "a", 3, false));
    calls[group_call].push_back(grouped_fusion_request(rank, "c", 6, false));
    for (size_t m = 0; m < kGroup.size(); ++m)
      calls[group_call].push_back(grouped_fusion_request(rank, kGroup[m], 5 + 2 * static_cast<int64_t>(m), true));
    calls[0].push_back(grouped_fusion_request(rank, "b", 4, false));
    if (rank % 2 == 1) std::reverse(calls[0].begin(), calls[0].end());  // another order on odd ranks
    Iteration cycles;
    size_t answered = 0;
    for (int call = 0;; ++call) {
      const ResponseList list = negotiator.negotiate(call < 2 ? calls[call] : std::vector<Request>{}, false);
      Cycle cycle;
      for (const Response& fused : plan_fusion(list.responses, 64 << 20)) {
        if (fused.type == ResponseType::kError)
          throw std::runtime_error("rank " + std::to_string(rank) + ": " + fused.error);
        cycle.emplace_back(fused.names.begin(), fused.names.end());
        answered += fused.names.size();
      }
      cycles.push_back(std::move(cycle));
      std::vector<uint64_t> done{call >= 1 && answered == 6 ? 1u : 0u};
      comm.allreduce_bits(done, /*bitwise_and=*/true);
      if (done[0] != 0) break;
      if (call == 20)
        throw std::runtime_error("rank " + std::to_string(rank) + " iteration " + std::to_string(it) + ": " +
                                 std::to_string(answered) + " of 6 answered");
    }
    iterations.push_back(std::move(cycles));
  }
  negotiator.finish();
  return iterations;
}

/// The cycles of `iteration` that executed something.
inline std::vector<Cycle> busy_cycles(const Iteration& iteration) {
  std::vector<Cycle> busy;
  for (const Cycle& cycle : iteration)
    if (!cycle.empty()) busy.push_back(cycle);
  return busy;
}

}  // namespace concord::testing_util
