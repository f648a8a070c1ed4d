// Executes one (possibly fused) response on this rank: takes the named entries from the
// tensor queue, packs allreduce inputs into the persistent fusion buffer (applying the
// prescale factor), runs the collective's algorithm over the data communicator, unpacks
// (applying the postscale factor, and 1/size for kAverage) and completes the handles.
// An ERROR response fails the named handle with MismatchError on every rank.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "common/config.h"
#include "control/message.h"
#include "runtime/tensor_queue.h"
#include "transport/communicator.h"

namespace concord {

class Executor {
 public:
  Executor(Communicator& data, const Config& config);

  /// Runs `response`. Failures (e.g. CommError) are stored in the affected handles, never
  /// thrown. Collective: every rank executes the same responses in the same order.
  void execute(const Response& response, TensorQueue& queue);

 private:
  void allreduce(const Response& response, std::vector<TensorEntry>& entries);
  void allgather(const Response& response, TensorEntry& entry);
  void broadcast(const Response& response, TensorEntry& entry);

  Communicator& comm_;
  size_t ring_chunk_bytes_;
  ScratchBuffer fusion_buffer_;
  ScratchBuffer scratch_;
};

}  // namespace concord
