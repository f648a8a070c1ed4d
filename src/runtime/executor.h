// Executes one (possibly fused) response on this rank: takes the named entries from the
// tensor queue, packs allreduce inputs into the persistent fusion buffer (applying the
// prescale factor), runs the collective's algorithm over the data communicator, unpacks
// (applying the postscale factor, and 1/size for kAverage) and completes the handles.
// An ERROR response fails the named handle with MismatchError on every rank.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "common/config.h"
#include "common/timeline.h"
#include "control/message.h"
#include "runtime/tensor_queue.h"
#include "transport/communicator.h"

namespace concord {

class Executor {
 public:
  /// `timeline` receives QUEUE, MEMCPY_IN_FUSION_BUFFER, the algorithm's activity and
  /// MEMCPY_OUT spans while it is active (only rank 0's is ever started).
  Executor(Communicator& data, const Config& config, Timeline& timeline);

  /// Runs `response`. Failures (e.g. CommError) are stored in the affected handles, never
  /// thrown. Collective: every rank executes the same responses in the same order.
  void execute(const Response& response, TensorQueue& queue);

 private:
  void allreduce(const Response& response, std::vector<TensorEntry>& entries);
  void allgather(const Response& response, TensorEntry& entry);
  void broadcast(const Response& response, TensorEntry& entry);

  // Opens `activity` on the timeline for every tensor of `response`.
  void mark(const Response& response, const char* activity);
  void unmark(const Response& response);

  Communicator& comm_;
  Timeline& timeline_;
  size_t ring_chunk_bytes_;
  ScratchBuffer fusion_buffer_;
  ScratchBuffer scratch_;
};

}  // namespace concord
