// Collectives above 2^31 bytes and 2^31 int8 elements through the public C++ API
// (broadcast, allreduce, allgather, alltoall, reducescatter): every count and offset on the path (request shapes, control messages,
// fusion, executor, algorithms, the MPI transport's 1 GiB message pieces, MPI_Allreduce's
// int count) must be 64-bit. Run at 2 ranks by ctest (mpi.large.np2, RUN_SERIAL, label
// "large"): about 2.1 GB per tensor, at most 2 such buffers per rank at a time (the tensor
// and the allgather/alltoall output or the ring's scratch); the tests run in file order,
// so the ring's scratch is released (re-init for MPI_Allreduce) before the outputs are made.
//
// Each element's value depends on every byte of its index (fold()), so a piece delivered at
// an offset wrapped at 2^31 or 2^32 (or off by a chunk) is caught; every element of every
// result is checked (block-wise loops that vectorise: the check is not the bottleneck).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "concord/concord.h"

namespace concord {
namespace {

// 2^31 + 4099 int8 elements: above INT_MAX elements and bytes, odd.
constexpr int64_t kCount = (int64_t{1} << 31) + 4099;

// XOR of the five low bytes of i: flips when any byte of the index changes.
inline uint8_t fold(uint64_t i) { return static_cast<uint8_t>(i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24) ^ (i >> 32)); }

// Element i of a result: scale * fold(i + offset) + add (mod 256). A rank's input is
// {1, 13 * rank, 0}; the sum of P ranks' inputs is {P, 13 P (P - 1) / 2, 0}.
struct Pattern {
  int scale = 1;
  int add = 0;
  uint64_t offset = 0;
  uint8_t at(uint64_t i) const { return static_cast<uint8_t>(scale * fold(i + offset) + add); }
};

Pattern input_of(int rank, uint64_t offset = 0) { return {1, 13 * rank, offset}; }

// Calls body(i, n, high): elements [i, i + n) have indices (plus the offset) in one
// 256-aligned block whose fold of the upper bytes is `high`, so fold(i + offset) = low
// byte ^ high and the inner loops over bytes vectorise (a 2 GB pass takes ~0.1 s, not ~2 s).
template <typename Body>
void by_block(int64_t count, uint64_t offset, const Body& body) {
  for (int64_t i = 0; i < count;) {
    const uint64_t index = static_cast<uint64_t>(i) + offset;
    const int64_t n = std::min<int64_t>(count - i, static_cast<int64_t>(256 - index % 256));
    body(i, n, static_cast<uint8_t>(fold(index & ~uint64_t{255})), static_cast<uint8_t>(index % 256));
    i += n;
  }
}

// out[i] = pattern.at(i) for i in [0, n).
void fill(uint8_t* out, int64_t count, const Pattern& p) {
  by_block(count, p.offset, [&](int64_t i, int64_t n, uint8_t high, uint8_t low) {
    for (int64_t j = 0; j < n; ++j)
      out[i + j] = static_cast<uint8_t>(p.scale * static_cast<uint8_t>((low + j) ^ high) + p.add);
  });
}

// Checks out[i] == pattern.at(i) for i in [0, n): one failure naming the rank, the
// collective, the size, how many elements are wrong and the first.
void expect_all(const uint8_t* out, int64_t count, const std::string& what, const Pattern& p) {
  int64_t wrong = 0;
  by_block(count, p.offset, [&](int64_t i, int64_t n, uint8_t high, uint8_t low) {
    for (int64_t j = 0; j < n; ++j)
      wrong += out[i + j] != static_cast<uint8_t>(p.scale * static_cast<uint8_t>((low + j) ^ high) + p.add);
  });
  int64_t first = -1;
  for (int64_t i = 0; wrong > 0 && first < 0; ++i)
    if (out[i] != p.at(static_cast<uint64_t>(i))) first = i;
  EXPECT_EQ(wrong, 0) << "rank " << rank() << ": " << what << " of " << count << " int8 elements: " << wrong
                      << " wrong, first at element " << first << " (got " << (first < 0 ? 0 : int(out[first]))
                      << ", want " << (first < 0 ? 0 : int(p.at(static_cast<uint64_t>(first)))) << ")";
}

TensorView int8_view(std::vector<int8_t>& data, int64_t n) { return TensorView{data.data(), DataType::kInt8, {n}}; }

class LargeCount : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { buffer_ = new std::vector<int8_t>(kCount); }
  static void TearDownTestSuite() {
    delete buffer_;
    buffer_ = nullptr;
  }
  static uint8_t* bytes() { return reinterpret_cast<uint8_t*>(buffer_->data()); }
  // The first n elements (all by default) get rank `r`'s input.
  static void fill_input(int r, int64_t n = kCount) { fill(bytes(), n, input_of(r)); }
  static std::vector<int8_t>* buffer_;
};
std::vector<int8_t>* LargeCount::buffer_ = nullptr;

TEST_F(LargeCount, BroadcastFromTheLastRank) {
  const int root = size() - 1;
  if (rank() == root) fill_input(root);
  else std::fill(buffer_->begin(), buffer_->end(), int8_t{0});
  broadcast_async("large.broadcast", int8_view(*buffer_, kCount), BroadcastOptions{root}).wait();
  expect_all(bytes(), kCount, "broadcast", input_of(root));
}

// The int8 sum (wrapping) of every rank's input.
Pattern summed() { return {size(), 13 * size() * (size() - 1) / 2, 0}; }

TEST_F(LargeCount, AllreduceSumInPlace) {
  fill_input(rank());
  allreduce_async("large.allreduce", int8_view(*buffer_, kCount), int8_view(*buffer_, kCount)).wait();
  expect_all(bytes(), kCount, "allreduce (sum, in place)", summed());
}

TEST_F(LargeCount, AllreduceByMpiAllreduceSplitsTheIntCount) {
  // The runtime again with the `mpi` algorithm forced: MPI_Allreduce takes an int count.
  shutdown();
  setenv("CONCORD_ALLREDUCE_ALGORITHM", "mpi", 1);
  init();
  fill_input(rank());
  allreduce_async("large.allreduce.mpi", int8_view(*buffer_, kCount), int8_view(*buffer_, kCount)).wait();
  expect_all(bytes(), kCount, "allreduce (sum, CONCORD_ALLREDUCE_ALGORITHM=mpi)", summed());
  shutdown();
  unsetenv("CONCORD_ALLREDUCE_ALGORITHM");
  init();
}

TEST_F(LargeCount, AllgatherWhoseOutputExceeds2GiB) {
  // Each rank gives kCount / size + 1 rows: the gathered output is above 2^31 bytes.
  const int64_t rows = kCount / size() + 1;
  fill_input(rank(), rows);
  const Handle handle = allgather_async("large.allgather", int8_view(*buffer_, rows));
  handle.wait();
  ASSERT_EQ(handle.output_shape().at(0), rows * size());
  for (int r = 0; r < size(); ++r)
    expect_all(handle.output_bytes().data() + r * rows, rows, "allgather block of rank " + std::to_string(r),
               input_of(r));
}

TEST_F(LargeCount, AlltoallOfMoreThan2GiB) {
  // Equal splits: block j (kCount / size rows, rounded down) goes to rank j.
  const int64_t rows = kCount / size() * size();
  fill_input(rank());
  const Handle handle = alltoall_async("large.alltoall", int8_view(*buffer_, rows));
  handle.wait();
  const int64_t block = rows / size();
  const uint64_t first = static_cast<uint64_t>(rank() * block);  // of the rows each rank sent here
  ASSERT_EQ(handle.output_shape().at(0), rows);
  for (int r = 0; r < size(); ++r)
    expect_all(handle.output_bytes().data() + r * block, block, "alltoall block from rank " + std::to_string(r),
               input_of(r, first));
}

TEST_F(LargeCount, ReducescatterOfMoreThan2GiB) {
  // The whole tensor is reduced; rank r receives reducescatter_rows(kCount, size, r) rows
  // (the first kCount % size ranks one more), starting after the rows of ranks before it.
  fill_input(rank());
  const int64_t mine = reducescatter_rows(kCount, size(), rank());
  int64_t first = 0;
  for (int r = 0; r < rank(); ++r) first += reducescatter_rows(kCount, size(), r);
  std::vector<int8_t> output(static_cast<size_t>(mine));
  reducescatter_async("large.reducescatter", int8_view(*buffer_, kCount), int8_view(output, mine)).wait();
  Pattern want = summed();
  want.offset = static_cast<uint64_t>(first);
  expect_all(reinterpret_cast<const uint8_t*>(output.data()), mine, "reducescatter (sum)", want);
}

}  // namespace
}  // namespace concord
