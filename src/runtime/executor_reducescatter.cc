// Executor::reducescatter: one (possibly fused) reduce-scatter with Horovod's row split.
//
// Tensor t has R_t rows of E_t elements; rank r receives rows_r(t) = R_t / P (+1 for the
// first R_t mod P ranks, as Horovod) starting at row start_r(t). Rank r's block of the
// collective buffer is its rows of every tensor back to back; every block is padded with
// zeros to rank 0's (the largest), so the buffer is P equal blocks of B elements and the
// registry's reduce-scatter (ring or recursive halving, which give rank r elements
// [r B, (r+1) B) = patterns::segment(P B, P, r)) leaves rank r's reduced rows in its block.
// prescale is applied while packing, postscale (and 1 / P for Average) while copying out.
// While some rank has joined it fails on every rank (Executor::refuse_joined). Device tensors are packed into and copied out of
// a pinned host buffer by their DevicePath (runtime/collective_memory.h). Bytes on the wire are the algorithm's for P B
// elements; the padding is at most one row per tensor per block.
#include <cstring>

#include "common/enforce.h"
#include "runtime/executor.h"

namespace concord {
namespace {

struct RowSplit {
  int64_t rows = 0;   // rows rank r receives
  int64_t start = 0;  // first of them
};

RowSplit row_split(int64_t rows, int ranks, int rank) {
  const int64_t base = rows / ranks, extra = rows % ranks;
  return {base + (rank < extra ? 1 : 0), rank * base + std::min<int64_t>(rank, extra)};
}

}  // namespace

void Executor::reducescatter(const Response& response, std::vector<TensorEntry>& entries) {
  const int P = comm_.size();
  const int me = comm_.rank();
  const DataType dtype = response.dtype;
  const size_t element = dtype_size(dtype);
  // Block size B (elements): rank 0 receives the most rows of every tensor.
  size_t block = 0;
  for (size_t t = 0; t < entries.size(); ++t)
    block += static_cast<size_t>(row_split(response.rows.at(t), P, 0).rows * response.row_elements.at(t));
  const size_t total = block * static_cast<size_t>(P);
  CollectiveMemory& memory = this->memory(response, entries.at(0));
  uint8_t* buffer = memory.staging(total * element, 0);
  mark(response, "MEMCPY_IN_FUSION_BUFFER");
  std::vector<CopySpan> spans;
  std::vector<std::pair<size_t, size_t>> padding;  // per block: [elements used, block)
  for (int r = 0; r < P; ++r) {
    uint8_t* out = buffer + static_cast<size_t>(r) * block * element;
    size_t used = 0;
    for (size_t t = 0; t < entries.size(); ++t) {
      const int64_t row = response.row_elements[t];
      const RowSplit split = row_split(response.rows[t], P, r);
      const size_t n = static_cast<size_t>(split.rows * row);
      const auto* in =
          static_cast<const uint8_t*>(entries[t].input.data) + static_cast<size_t>(split.start * row) * element;
      spans.push_back(CopySpan{out + used * element, in, n * element});
      used += n;
    }
    padding.push_back({used, block});
  }
  memory.copy_in(spans, dtype, response.prescale_factor);
  for (int r = 0; r < P; ++r) {  // after the copy, which may write between its pieces
    const auto [used, end] = padding[static_cast<size_t>(r)];
    if (used < end) std::memset(buffer + (static_cast<size_t>(r) * block + used) * element, 0, (end - used) * element);
  }
  unmark(response);

  const ReduceOp op = response.op == ReduceOp::kAverage ? ReduceOp::kSum : response.op;
  std::string activity = "reducescatter";
  auto& algorithm = this->algorithm(reduce_scatter_algorithms(), problem(total, dtype, op), "", activity);
  mark(response, activity);
  algorithm.start(buffer, total, dtype, op);
  run_to_completion(algorithm);
  unmark(response);

  double postscale = response.postscale_factor;
  if (response.op == ReduceOp::kAverage) postscale /= P;  // no rank has joined: refuse_joined
  uint8_t* mine = buffer + static_cast<size_t>(me) * block * element;
  spans.clear();
  for (size_t t = 0; t < entries.size(); ++t) {
    const size_t n = static_cast<size_t>(row_split(response.rows[t], P, me).rows * response.row_elements[t]);
    spans.push_back(CopySpan{entries[t].output.data, mine, n * element});
    mine += n * element;
  }
  memory.copy_out(spans, dtype, postscale);
}

}  // namespace concord
