#include "algorithms/allreduce_mpi.h"

namespace concord {
namespace {

// MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE: below it, recursive doubling.
constexpr size_t kShortMessageBytes = 2048;

}  // namespace

AllreduceMpi::AllreduceMpi(NativeCollectives& native) : native_(native) {}

void AllreduceMpi::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  start_out_of_place(data, data, count, dtype, op);
}

void AllreduceMpi::start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  input_ = input;
  data_ = output;
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  pending_ = true;
}

Progress AllreduceMpi::progress() {
  if (pending_) {
    pending_ = false;
    native_.native_allreduce(input_, data_, count_, dtype_, op_);
  }
  return Progress::kDone;
}

std::string AllreduceMpi::declines(const Problem& problem) {
  return problem.native_available ? "" : "the transport has no native allreduce";
}

Cost AllreduceMpi::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1) return cost;
  int log_p = 0;
  while ((2 << log_p) <= P) ++log_p;
  const int pof2 = 1 << log_p;
  const double fold = pof2 == P ? 0 : 1;  // pre- and post-step of the non-power-of-two fold
  const double n = static_cast<double>(problem.bytes());
  if (problem.bytes() <= kShortMessageBytes || problem.count < static_cast<size_t>(pof2)) {
    cost.rounds = log_p + 2 * fold;
    cost.wire_bytes = (log_p + 2 * fold) * n;
    cost.reduce_bytes = (log_p + fold) * n;
  } else {
    const double share = static_cast<double>(pof2 - 1) / pof2;
    cost.rounds = 2 * log_p + 2 * fold;
    cost.wire_bytes = 2 * share * n + 2 * fold * n;
    cost.reduce_bytes = share * n + fold * n;
  }
  // Priced with the MPI library's own measured constants (CostParams::mpi_alpha/mpi_beta).
  cost.native_rounds = cost.rounds;
  cost.native_wire_bytes = cost.wire_bytes;
  cost.rounds = 0;
  cost.wire_bytes = 0;
  return cost;
}

}  // namespace concord
