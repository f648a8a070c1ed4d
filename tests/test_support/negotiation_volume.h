// The control-plane volume of a training loop, per iteration, for the response-cache tests
// (Horovod's response cache and bit-vector coordination: Sergeev & Del Balso, "Horovod",
// 2018; Romero et al., NSDI 2022). Every rank submits the same `tensors` allreduce requests
// each iteration (in a rank-dependent order) in one negotiate() call, then empty calls until
// every tensor is answered; the bytes the negotiator puts through the control transport on
// this rank are read from a TransportLog around it. Used on the in-process transport
// (tests/unit/test_response_cache_volume.cc) and under mpirun (tests/mpi/mechanisms_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "control/negotiator.h"
#include "test_support/transport_log.h"

namespace concord::testing_util {

/// What one rank's negotiator put through the control transport in one iteration.
struct IterationVolume {
  uint64_t bytes = 0;  ///< bytes handed to and back from the transport (TransportEvent bytes_in + bytes_out)
  int gathers = 0;     ///< gather_bytes calls (the coordinator's slow path and stall checks)
  int broadcasts = 0;  ///< broadcast_bytes calls
  int cycles = 0;      ///< negotiate() calls until every tensor was answered
  uint64_t cache_hits = 0;
};

/// Runs `iterations` iterations of `tensors` float32 allreduce requests ("grad.<i>", i + 1
/// elements) through a Negotiator on `control` with `cache_capacity`, and returns this
/// rank's volume per iteration. Collective over `control`. Throws std::runtime_error when a
/// response is an error or an iteration needs more than 100 cycles. The stall inspector is
/// kept out (its checks are timed).
inline std::vector<IterationVolume> negotiation_volume(Communicator& control, uint32_t cache_capacity, int tensors,
                                                       int iterations) {
  std::vector<TransportEvent> log;
  TransportLog logged(control, log, nullptr, 0);
  NegotiatorOptions options;
  options.cache_capacity = cache_capacity;
  options.stall_warning_seconds = 1e9;
  options.stall_shutdown_seconds = 0;
  Negotiator negotiator(logged, options);
  std::vector<IterationVolume> volumes;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    std::vector<Request> requests;
    for (int i = 0; i < tensors; ++i) {
      const int t = (i + control.rank()) % tensors;  // every rank in another order
      Request request;
      request.rank = control.rank();
      request.name = "grad." + std::to_string(t);
      request.shape = {t + 1};
      requests.push_back(std::move(request));
    }
    const size_t first_event = log.size();
    const uint64_t hits_before = negotiator.stats().cache_hits;
    IterationVolume volume;
    int answered = 0;
    for (;;) {
      const ResponseList list =
          negotiator.negotiate(volume.cycles == 0 ? std::move(requests) : std::vector<Request>{}, false);
      ++volume.cycles;
      for (const Response& response : list.responses) {
        if (response.type == ResponseType::kError)
          throw std::runtime_error("rank " + std::to_string(control.rank()) + ", iteration " +
                                   std::to_string(iteration) + ": " + response.error);
        answered += static_cast<int>(response.names.size());
      }
      std::vector<uint64_t> done{answered == tensors ? 1u : 0u};  // through `control` itself: not logged
      control.allreduce_bits(done, /*bitwise_and=*/true);
      if (done[0] != 0) break;
      if (volume.cycles == 100)
        throw std::runtime_error("rank " + std::to_string(control.rank()) + ", iteration " + std::to_string(iteration) +
                                 ": " + std::to_string(tensors - answered) + " tensors unanswered after 100 cycles");
    }
    for (size_t e = first_event; e < log.size(); ++e) {
      volume.bytes += log[e].bytes_in + log[e].bytes_out;
      volume.gathers += log[e].kind == TransportEvent::kGather;
      volume.broadcasts += log[e].kind == TransportEvent::kBroadcast;
    }
    volume.cache_hits = negotiator.stats().cache_hits - hits_before;
    volumes.push_back(volume);
  }
  negotiator.finish();
  return volumes;
}

}  // namespace concord::testing_util
