// Executor::reducescatter: one (possibly fused) reduce-scatter with Horovod's row split.
//
// Tensor t has R_t rows of E_t elements; rank r receives rows_r(t) = R_t / P (+1 for the
// first R_t mod P ranks, as Horovod) starting at row start_r(t). Rank r's block of the
// collective buffer is its rows of every tensor back to back; every block is padded with
// zeros to rank 0's (the largest), so the buffer is P equal blocks of B elements and the
// registry's reduce-scatter (ring or recursive halving, which give rank r elements
// [r B, (r+1) B) = patterns::segment(P B, P, r)) leaves rank r's reduced rows in its block.
// prescale is applied while packing, postscale (and 1 / active ranks for Average) while
// copying out. A joined rank packs zeros. Bytes on the wire are the algorithm's for P B
// elements; the padding is at most one row per tensor per block.
#include <cstring>

#include "common/enforce.h"
#include "common/reduce.h"
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
  uint8_t* buffer = fusion_buffer_.get(total * element);
  mark(response, "MEMCPY_IN_FUSION_BUFFER");
  for (int r = 0; r < P; ++r) {
    uint8_t* out = buffer + static_cast<size_t>(r) * block * element;
    size_t used = 0;
    for (size_t t = 0; t < entries.size(); ++t) {
      const int64_t row = response.row_elements[t];
      const RowSplit split = row_split(response.rows[t], P, r);
      const size_t n = static_cast<size_t>(split.rows * row);
      const auto* in =
          static_cast<const uint8_t*>(entries[t].input.data) + static_cast<size_t>(split.start * row) * element;
      if (n > 0 && response.prescale_factor != 1.0) {
        scale_buffer(out + used * element, in, n, dtype, response.prescale_factor);
      } else if (n > 0) {
        std::memcpy(out + used * element, in, n * element);
      }
      used += n;
    }
    if (used < block) std::memset(out + used * element, 0, (block - used) * element);
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
  if (response.op == ReduceOp::kAverage) postscale /= active_ranks(response);
  const uint8_t* mine = buffer + static_cast<size_t>(me) * block * element;
  for (size_t t = 0; t < entries.size(); ++t) {
    const size_t n = static_cast<size_t>(row_split(response.rows[t], P, me).rows * response.row_elements[t]);
    if (n > 0 && postscale != 1.0) {
      scale_buffer(entries[t].output.data, mine, n, dtype, postscale);
    } else if (n > 0) {
      std::memcpy(entries[t].output.data, mine, n * element);
    }
    mine += n * element;
  }
}

}  // namespace concord
