// AllreduceAdasum: the adaptive summation of Maleki, Musuvathi, Mytkowicz, Saarikivi, Xu,
// Eksarevskiy, Ekanayake & Barsoum, "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021 (Horovod's op=hvd.Adasum), for float32 and float64 vectors on a
// power-of-two number of ranks.
//
// Two gradients a and b are combined as
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient is 1 when its norm is zero: |v|^2 < 1e-30): orthogonal gradients are
// summed, parallel ones averaged. P = 2^L vectors are combined as a binary tree over rank
// order, Adasum(Adasum(g0, g1), Adasum(g2, g3)) ..., every dot product taken over whole
// vectors (in double precision).
//
// Steps (patterns/vector_halving.h), n elements of s bytes:
//   reduce, levels k = 0..L-1, d = 2^k: swap halves of the held segment with rank XOR d
//     (n s / 2^(k+1) bytes each way); on the kept half compute the partial dot products
//     [a.b, |a|^2, |b|^2] (a: the side whose rank bit k is clear); sum them over the 2d
//     ranks of the group by recursive doubling (k + 1 rounds of 24 bytes, partners adding
//     in one canonical order, so all 2d ranks get identical sums); combine the kept half.
//   allgather, levels k = L-1..0: swap held segments with rank XOR 2^k.
// Per rank: 2L data messages of 2 n s (P-1)/P bytes in all, and L(L+1)/2 scalar messages
// of 24 bytes. Critical path:
//   T = (2L + L(L+1)/2) alpha + 2 n s (P-1)/P beta + 3 n s (P-1)/P gamma
// (gamma counting the dot products and the combination). Each element of the result is
// computed by one rank and then copied, so every rank ends with identical bits.
// P = 1 or n = 0 sends nothing (the result is the input).
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "transport/communicator.h"

namespace concord {

class AllreduceAdasum : public AllreduceAlgorithm {
 public:
  explicit AllreduceAdasum(Communicator& comm) : comm_(comm) {}

  /// In-place Adasum of `count` elements at `data`, each tensor given by set_tensors()
  /// separately (its own dot products), in order; one tensor without it. `op` must be
  /// ReduceOp::kAdasum. Throws InvalidArgument for a size that is not a power of two, a
  /// dtype other than float32/float64, another op, or tensors that do not add up to
  /// `count` whole elements.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  void set_tensors(const std::vector<size_t>& tensor_bytes) override { tensor_bytes_ = tensor_bytes; }

  /// Registry row: name and description; declines() refuses every op but kAdasum (and
  /// is the only row that takes kAdasum: the element-wise rows decline it).
  static constexpr const char* kName = "adasum";
  static constexpr const char* kDescription =
      "Adasum (Maleki et al.): vector-halving distance-doubling with per-tensor dot products; op adasum only";
  /// "" for op kAdasum on a power-of-two world with float32/float64; otherwise why not.
  static std::string declines(const Problem& problem);
  /// Per tensor (the registry sees the buffer as one): log2 P levels, each a data exchange
  /// of the halved vector and k+1 exchanges of three dot products.
  static Cost cost(const Problem& problem);

  /// Adasum(a, b) of two vectors given their dot products (the paper's formula); the
  /// reference the tests compare against uses the same function.
  static void combine(double* a_out, const double* b, size_t n, double ab, double aa, double bb);
  /// The coefficients (of a, of b) for dot products ab, aa, bb.
  static std::pair<double, double> coefficients(double ab, double aa, double bb);

 private:
  struct Step {
    const void* send = nullptr;
    size_t send_bytes = 0;
    void* recv = nullptr;
    size_t recv_bytes = 0;
    int peer = -1;
    int tag = 0;
    int level = -1;      // data exchange of the reduce at this level (then the dot products)
    int dot_round = -1;  // scalar exchange of the dot products (-1: not one)
    bool last_dot_round = false;
  };

  void build_steps();
  void begin_tensor();  // starts tensor next_tensor_ of the operation
  void after(const Step& step);
  template <typename T>
  void dots_of_level(int level);
  template <typename T>
  void combine_level(int level);

  Communicator& comm_;
  std::vector<size_t> tensor_bytes_;  // of the next start()
  std::vector<size_t> tensors_;       // elements of each tensor of this operation
  size_t next_tensor_ = 0;
  uint8_t* buffer_ = nullptr;  // the operation's whole buffer
  uint8_t* data_ = nullptr;    // the current tensor
  size_t count_ = 0;           // of the current tensor
  DataType dtype_ = DataType::kFloat32;
  std::vector<uint8_t> received_;  // the partner's half at the current level
  double dots_[3] = {0, 0, 0};     // a.b, |a|^2, |b|^2 (partial, then summed)
  double peer_dots_[3] = {0, 0, 0};
  std::vector<Step> steps_;
  size_t next_ = 0;
  RequestPtr send_, recv_;
  bool posted_ = false;
};

}  // namespace concord
