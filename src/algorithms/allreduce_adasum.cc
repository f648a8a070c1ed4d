#include "algorithms/allreduce_adasum.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/enforce.h"
#include "patterns/vector_halving.h"
#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAdasumData;
constexpr int kDotTag = tags::kAdasumDot;
constexpr double kZeroNorm = 1e-30;

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

std::pair<double, double> AllreduceAdasum::coefficients(double ab, double aa, double bb) {
  return {aa < kZeroNorm ? 1.0 : 1.0 - ab / (2.0 * aa), bb < kZeroNorm ? 1.0 : 1.0 - ab / (2.0 * bb)};
}

void AllreduceAdasum::combine(double* a_out, const double* b, size_t n, double ab, double aa, double bb) {
  const auto [ca, cb] = coefficients(ab, aa, bb);
  for (size_t i = 0; i < n; ++i) a_out[i] = ca * a_out[i] + cb * b[i];
}

void AllreduceAdasum::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  CONCORD_ENFORCE(op == ReduceOp::kAdasum, InvalidArgument, "AllreduceAdasum: op must be adasum, got ",
                  reduce_op_name(op));
  CONCORD_ENFORCE(is_power_of_two(comm_.size()), InvalidArgument,
                  "Adasum needs a power-of-two number of ranks (Maleki et al.'s vector-halving distance-doubling "
                  "schedule); this job has ",
                  comm_.size(), " ranks");
  CONCORD_ENFORCE(dtype == DataType::kFloat32 || dtype == DataType::kFloat64, InvalidArgument,
                  "Adasum supports float32 and float64 tensors; got ", dtype_name(dtype));
  dtype_ = dtype;
  buffer_ = static_cast<uint8_t*>(data);
  const size_t element = dtype_size(dtype);
  tensors_.clear();
  size_t elements = 0;
  for (size_t bytes : tensor_bytes_) {
    CONCORD_ENFORCE(bytes % element == 0, InvalidArgument, "AllreduceAdasum: a tensor of ", bytes,
                    " bytes is not whole ", dtype_name(dtype), " elements");
    tensors_.push_back(bytes / element);
    elements += bytes / element;
  }
  tensor_bytes_.clear();
  if (tensors_.empty()) {
    tensors_.push_back(count);
    elements = count;
  }
  CONCORD_ENFORCE(elements == count, InvalidArgument, "AllreduceAdasum: the tensors hold ", elements,
                  " elements, the buffer ", count);
  next_tensor_ = 0;
  data_ = buffer_;
  begin_tensor();
}

void AllreduceAdasum::begin_tensor() {
  count_ = tensors_[next_tensor_];
  next_ = 0;
  posted_ = false;
  build_steps();
}

std::string AllreduceAdasum::declines(const Problem& problem) {
  if (problem.op != ReduceOp::kAdasum) return "adasum only";
  if (!is_power_of_two(problem.ranks)) return "needs a power-of-two number of ranks";
  if (problem.dtype != DataType::kFloat32 && problem.dtype != DataType::kFloat64) return "float32 and float64 only";
  return "";
}

Cost AllreduceAdasum::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  const int levels = patterns::VectorHalving{0, P}.levels();
  uint64_t messages = 0;  // the same on every rank: per level one data and k + 1 dot messages
  for (int k = 0; k < levels; ++k) messages += static_cast<uint64_t>(k + 2);
  for (int r = 0; r < P; ++r) {
    const patterns::VectorHalving pattern{r, P};
    uint64_t bytes = 0;
    for (int k = 0; k < levels; ++k) {
      const patterns::Segment held = pattern.held(problem.count, k);
      bytes += patterns::VectorHalving::half(held, !pattern.keeps_lower(k)).count * problem.element_size;
      bytes += static_cast<uint64_t>(k + 1) * 3 * sizeof(double);
    }
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, bytes);
    cost.total_bytes_sent += bytes;
  }
  const patterns::VectorHalving first{0, P};
  for (int k = 0; k < levels; ++k) {
    const double held = static_cast<double>(first.held(problem.count, k).count * problem.element_size);
    cost.wire_bytes += held / 2;
    cost.reduce_bytes += held / 2;
  }
  cost.rounds = static_cast<double>(messages);
  cost.max_messages_sent = messages;
  cost.total_messages_sent = messages * P;
  return cost.place(problem.nodes);
}

void AllreduceAdasum::build_steps() {
  steps_.clear();
  const int P = comm_.size();
  if (P == 1 || count_ == 0) return;
  const size_t element = dtype_size(dtype_);
  const patterns::VectorHalving pattern{comm_.rank(), P};
  const int levels = pattern.levels();
  received_.resize((count_ / 2 + 1) * element);
  for (int k = 0; k < levels; ++k) {
    const patterns::Segment held = pattern.held(count_, k);
    const patterns::Segment kept = patterns::VectorHalving::half(held, pattern.keeps_lower(k));
    const patterns::Segment sent = patterns::VectorHalving::half(held, !pattern.keeps_lower(k));
    Step exchange;
    exchange.send = data_ + sent.offset * element;
    exchange.send_bytes = sent.count * element;
    exchange.recv = received_.data();
    exchange.recv_bytes = kept.count * element;
    exchange.peer = pattern.partner(k);
    exchange.tag = kDataTag;
    exchange.level = k;
    steps_.push_back(exchange);
    for (int j = 0; j <= k; ++j) {  // sum the dot products over the group of 2^(k+1) ranks
      Step dot;
      dot.send = dots_;
      dot.send_bytes = sizeof(dots_);
      dot.recv = peer_dots_;
      dot.recv_bytes = sizeof(peer_dots_);
      dot.peer = comm_.rank() ^ (1 << j);
      dot.tag = kDotTag;
      dot.level = k;
      dot.dot_round = j;
      dot.last_dot_round = j == k;
      steps_.push_back(dot);
    }
  }
  for (int k = levels - 1; k >= 0; --k) {  // allgather: swap held segments, back up the levels
    const patterns::Segment mine = pattern.held(count_, k + 1);
    const patterns::Segment theirs = patterns::VectorHalving::half(pattern.held(count_, k), !pattern.keeps_lower(k));
    Step gather;
    gather.send = data_ + mine.offset * element;
    gather.send_bytes = mine.count * element;
    gather.recv = data_ + theirs.offset * element;
    gather.recv_bytes = theirs.count * element;
    gather.peer = pattern.partner(k);
    gather.tag = kDataTag;
    steps_.push_back(gather);
  }
}

template <typename T>
void AllreduceAdasum::dots_of_level(int level) {
  const patterns::VectorHalving pattern{comm_.rank(), comm_.size()};
  const patterns::Segment kept = pattern.held(count_, level + 1);
  const T* mine = reinterpret_cast<const T*>(data_) + kept.offset;
  const T* other = reinterpret_cast<const T*>(received_.data());
  const bool mine_is_a = pattern.keeps_lower(level);
  const T* a = mine_is_a ? mine : other;
  const T* b = mine_is_a ? other : mine;
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < kept.count; ++i) {
    const double x = a[i], y = b[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  dots_[0] = ab;
  dots_[1] = aa;
  dots_[2] = bb;
}

template <typename T>
void AllreduceAdasum::combine_level(int level) {
  const patterns::VectorHalving pattern{comm_.rank(), comm_.size()};
  const patterns::Segment kept = pattern.held(count_, level + 1);
  T* mine = reinterpret_cast<T*>(data_) + kept.offset;
  const T* other = reinterpret_cast<const T*>(received_.data());
  const auto [ca, cb] = coefficients(dots_[0], dots_[1], dots_[2]);
  const bool mine_is_a = pattern.keeps_lower(level);
  const double c_mine = mine_is_a ? ca : cb;
  const double c_other = mine_is_a ? cb : ca;
  for (size_t i = 0; i < kept.count; ++i)
    mine[i] = static_cast<T>(c_mine * static_cast<double>(mine[i]) + c_other * static_cast<double>(other[i]));
}

void AllreduceAdasum::after(const Step& step) {
  const bool f32 = dtype_ == DataType::kFloat32;
  if (step.dot_round < 0) {
    if (step.level >= 0) f32 ? dots_of_level<float>(step.level) : dots_of_level<double>(step.level);
    return;
  }
  // Canonical order: the lower rank's partial sums first, so both partners hold the same bits.
  const bool lower = (comm_.rank() & (1 << step.dot_round)) == 0;
  for (int i = 0; i < 3; ++i) dots_[i] = lower ? dots_[i] + peer_dots_[i] : peer_dots_[i] + dots_[i];
  if (step.last_dot_round) f32 ? combine_level<float>(step.level) : combine_level<double>(step.level);
}

Progress AllreduceAdasum::progress() {
  for (;;) {
    while (next_ < steps_.size()) {
      const Step& step = steps_[next_];
      if (!posted_) {
        recv_ = comm_.irecv(step.recv, step.recv_bytes, step.peer, step.tag);
        send_ = comm_.isend(step.send, step.send_bytes, step.peer, step.tag);
        posted_ = true;
      }
      const bool received = reap_one(recv_);
      const bool sent = reap_one(send_);
      if (!received || !sent) return Progress::kInProgress;
      posted_ = false;
      after(step);
      ++next_;
    }
    if (next_tensor_ + 1 >= tensors_.size()) return Progress::kDone;
    data_ += count_ * dtype_size(dtype_);  // the next tensor, with its own dot products
    ++next_tensor_;
    begin_tensor();
  }
}

}  // namespace concord
