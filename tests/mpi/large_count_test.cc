// Collectives above 2^31 bytes and 2^31 int8 elements through the public C++ API (issue
// 15, item 5): every count and offset on the path (request shapes, control messages,
// fusion, executor, algorithms, the MPI transport's 1 GiB message pieces, MPI_Allreduce's
// int count) must be 64-bit. Run at 2 ranks by ctest (mpi.large.np2, RUN_SERIAL, label
// "large"): about 2.1 GB per tensor, at most 2 such buffers per rank at a time (the tensor
// and the allgather/alltoall output or the ring's scratch); the tests run in file order,
// so the ring's scratch is released (re-init for MPI_Allreduce) before the outputs are made.
//
// Each element's value depends on every byte of its index (fold()), so a piece delivered at
// an offset wrapped at 2^31 or 2^32 (or off by a chunk) is caught; every element of every
// result is checked.
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
inline uint8_t fold(uint64_t i) {
  return static_cast<uint8_t>(i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24) ^ (i >> 32));
}

inline uint8_t value(int rank, uint64_t i) { return static_cast<uint8_t>(fold(i) + 13 * rank); }

// Checks out[i] == want(i) for i in [0, n); one failure naming rank, collective, size, the
// first wrong element and how many are wrong.
template <typename Want>
void expect_all(const uint8_t* out, int64_t n, const std::string& what, const Want& want) {
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] != want(static_cast<uint64_t>(i))) {
      if (first < 0) first = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << "rank " << rank() << ": " << what << " of " << n << " int8 elements: " << wrong
                      << " wrong, first at element " << first << " (got " << (first < 0 ? 0 : int(out[first]))
                      << ", want " << (first < 0 ? 0 : int(want(static_cast<uint64_t>(first)))) << ")";
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
  // The first n elements (all by default) get value(rank_value, i).
  static void fill(int rank_value, int64_t n = kCount) {
    uint8_t* b = bytes();
    for (int64_t i = 0; i < n; ++i) b[i] = value(rank_value, static_cast<uint64_t>(i));
  }
  static std::vector<int8_t>* buffer_;
};
std::vector<int8_t>* LargeCount::buffer_ = nullptr;

TEST_F(LargeCount, BroadcastFromTheLastRank) {
  const int root = size() - 1;
  if (rank() == root) fill(root);
  else std::fill(buffer_->begin(), buffer_->end(), int8_t{0});
  broadcast_async("large.broadcast", int8_view(*buffer_, kCount), BroadcastOptions{root}).wait();
  expect_all(bytes(), kCount, "broadcast", [root](uint64_t i) { return value(root, i); });
}

// Sum over `ranks` ranks r of value(r, i), wrapping as int8 does: ranks * fold(i) + 13 *
// (0 + 1 + ... + ranks - 1).
struct Summed {
  int ranks;
  uint8_t operator()(uint64_t i) const {
    return static_cast<uint8_t>(ranks * fold(i) + 13 * ranks * (ranks - 1) / 2);
  }
};

TEST_F(LargeCount, AllreduceSumInPlace) {
  fill(rank());
  allreduce_async("large.allreduce", int8_view(*buffer_, kCount), int8_view(*buffer_, kCount)).wait();
  expect_all(bytes(), kCount, "allreduce (sum, in place)", Summed{size()});
}

TEST_F(LargeCount, AllreduceByMpiAllreduceSplitsTheIntCount) {
  // The runtime again with the `mpi` algorithm forced: MPI_Allreduce takes an int count.
  shutdown();
  setenv("CONCORD_ALLREDUCE_ALGORITHM", "mpi", 1);
  init();
  fill(rank());
  allreduce_async("large.allreduce.mpi", int8_view(*buffer_, kCount), int8_view(*buffer_, kCount)).wait();
  expect_all(bytes(), kCount, "allreduce (sum, CONCORD_ALLREDUCE_ALGORITHM=mpi)", Summed{size()});
  shutdown();
  unsetenv("CONCORD_ALLREDUCE_ALGORITHM");
  init();
}

TEST_F(LargeCount, AllgatherWhoseOutputExceeds2GiB) {
  // Each rank gives kCount / size + 1 rows: the gathered output is above 2^31 bytes.
  const int64_t rows = kCount / size() + 1;
  fill(rank(), rows);
  const Handle handle = allgather_async("large.allgather", int8_view(*buffer_, rows));
  handle.wait();
  ASSERT_EQ(handle.output_shape().at(0), rows * size());
  for (int r = 0; r < size(); ++r)
    expect_all(handle.output_bytes().data() + r * rows, rows, "allgather block of rank " + std::to_string(r),
               [r](uint64_t i) { return value(r, i); });
}

TEST_F(LargeCount, AlltoallOfMoreThan2GiB) {
  // Equal splits: block j (kCount / size rows, rounded down) goes to rank j.
  const int64_t rows = kCount / size() * size();
  fill(rank());
  const Handle handle = alltoall_async("large.alltoall", int8_view(*buffer_, rows));
  handle.wait();
  const int64_t block = rows / size();
  const uint64_t first = static_cast<uint64_t>(rank() * block);  // of the rows each rank sent here
  ASSERT_EQ(handle.output_shape().at(0), rows);
  for (int r = 0; r < size(); ++r)
    expect_all(handle.output_bytes().data() + r * block, block, "alltoall block from rank " + std::to_string(r),
               [r, first](uint64_t i) { return value(r, i + first); });
}

}  // namespace
}  // namespace concord
