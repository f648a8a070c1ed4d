// Executor::alltoall: Horovod's alltoall with splits on the registry's equal-block
// alltoall (AlltoallPairwise).
//
// Response::sizes holds the P x P split matrix S (S[i][j] = rows rank i sends to rank j,
// identical on every rank after negotiation). Every block is padded to the largest
// S[i][j] row count, b rows of the tensor's row bytes: rank r packs its rows for rank j
// (contiguous in its input, rows being ordered by destination) as block j of a P b send
// buffer, the algorithm exchanges the blocks, and rank r copies S[i][r] rows out of
// received block i, in rank order. Bytes on the wire: (P - 1) b row bytes per rank, so
// skewed splits pay for the padding (an alltoallv algorithm would not). Without padding
// (equal splits) the input is sent and the output received in place, no copy.
// Device tensors are staged through pinned host buffers by their DevicePath
// (runtime/collective_memory.h); the result is device memory owned by the handle.
// Joined ranks have no rows to send: an alltoall while some rank has joined fails on
// every rank with InvalidArgument (Executor::refuse_joined, Horovod's text).
#include <algorithm>
#include <cstring>

#include "common/enforce.h"
#include "runtime/executor.h"

namespace concord {

void Executor::alltoall(const Response& response, TensorEntry& entry) {
  const size_t P = static_cast<size_t>(comm_.size());
  const size_t me = static_cast<size_t>(comm_.rank());
  const auto& S = response.sizes;
  CONCORD_ENFORCE(S.size() == P * P, InternalError, "alltoall of tensor '", response.names[0], "': ", S.size(),
                  " split entries for ", P, " ranks");
  const size_t row_bytes = static_cast<size_t>(response.row_elements.at(0)) * dtype_size(response.dtype);
  const size_t block = static_cast<size_t>(*std::max_element(S.begin(), S.end())) * row_bytes;
  // Blocks that need no padding are exchanged in place: the input is the send buffer when
  // this rank sends `block` bytes to every rank, the output the receive buffer when it gets
  // `block` bytes from every rank (equal splits), so a large alltoall costs no staging copy.
  bool sends_equal = true, receives_equal = true;
  for (size_t j = 0; j < P; ++j) {
    sends_equal = sends_equal && static_cast<size_t>(S[me * P + j]) * row_bytes == block;
    receives_equal = receives_equal && static_cast<size_t>(S[j * P + me]) * row_bytes == block;
  }
  auto& state = *entry.handle;
  CollectiveMemory& memory = this->memory(response, entry);
  const auto* input = static_cast<const uint8_t*>(entry.input.data);
  const uint8_t* send = input;
  if (!sends_equal || !memory.host_accessible()) {
    uint8_t* packed = memory.staging(P * block, 0);
    std::vector<CopySpan> spans;
    for (size_t j = 0; j < P; ++j) {
      const size_t bytes = static_cast<size_t>(S[me * P + j]) * row_bytes;
      spans.push_back(CopySpan{packed + j * block, input, bytes});
      input += bytes;
    }
    memory.copy_in(spans, response.dtype, 1.0);
    send = packed;
  }
  const bool direct = receives_equal && memory.host_accessible();
  uint8_t* receive =
      direct ? static_cast<uint8_t*>(memory.allocate_output(state, P * block)) : memory.staging(P * block, 1);
  std::string activity = "alltoall";
  auto& algorithm =
      this->algorithm(alltoall_algorithms(), problem(P * block, DataType::kUInt8, ReduceOp::kSum), "", activity);
  mark(response, activity);
  algorithm.start(send, receive, block);
  run_to_completion(algorithm);
  unmark(response);

  state.received_splits.clear();
  int64_t rows = 0;
  for (size_t i = 0; i < P; ++i) {
    state.received_splits.push_back(S[i * P + me]);
    rows += S[i * P + me];
  }
  state.output_shape = entry.input.shape;
  state.output_shape.at(0) = rows;
  if (direct) return;  // received in place
  auto* output = static_cast<uint8_t*>(memory.allocate_output(state, static_cast<size_t>(rows) * row_bytes));
  std::vector<CopySpan> spans;
  size_t out = 0;
  for (size_t i = 0; i < P; ++i) {
    const size_t bytes = static_cast<size_t>(S[i * P + me]) * row_bytes;
    spans.push_back(CopySpan{output + out, receive + i * block, bytes});
    out += bytes;
  }
  memory.copy_out(spans, response.dtype, 1.0);
}

}  // namespace concord
