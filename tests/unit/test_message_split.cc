// Large messages in pieces (src/transport/message_split.h), tested with small buffers: the
// in-process transport cut to a few bytes per piece (Communicator::set_max_message_bytes)
// stands for MPI's 1 GiB limit on a > 2 GiB tensor (tests/mpi/large_count_test.cc runs the
// real thing at 2 ranks):
//   - the piece arithmetic for sizes 0, 1, odd and exact multiples;
//   - point-to-point messages at 1..16 ranks, content and counters;
//   - every registered algorithm of every collective at 1..16 ranks with 5-byte pieces
//     (not a multiple of any element size), sizes 0, 1, odd and multiples, exact results.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "patterns/ring.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"
#include "transport/message_split.h"
#include "transport/request_set.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::drive;
using testing_util::run_ranks;

constexpr size_t kPiece = 5;  // bytes per piece in the algorithm tests

TEST(MessagePieces, CoverTheMessageInOrderWithFullPiecesButTheLast) {
  for (size_t max_piece : {size_t{1}, size_t{3}, size_t{8}, size_t{1} << 30})
    for (size_t bytes : {0, 1, 2, 7, 8, 9, 16, 17, 24, 1000}) {
      const MessagePieces pieces{bytes, max_piece};
      const size_t expected = bytes == 0 ? 1 : (bytes + max_piece - 1) / max_piece;
      ASSERT_EQ(pieces.count(), expected) << "bytes " << bytes << " max " << max_piece;
      size_t next = 0;
      for (size_t i = 0; i < pieces.count(); ++i) {
        ASSERT_EQ(pieces.offset(i), next) << "bytes " << bytes << " max " << max_piece << " piece " << i;
        if (i + 1 < pieces.count()) ASSERT_EQ(pieces.size(i), max_piece) << "bytes " << bytes << " piece " << i;
        ASSERT_GE(pieces.size(i), bytes == 0 ? 0u : 1u);
        next += pieces.size(i);
      }
      ASSERT_EQ(next, bytes) << "max " << max_piece;
    }
}

TEST(MessagePieces, AMessageAbove4GiBIsCutAt1GiB) {
  const MessagePieces pieces{(size_t{9} << 29) + 3, size_t{1} << 30};  // 4.5 GiB + 3
  ASSERT_EQ(pieces.count(), 5u);
  EXPECT_EQ(pieces.offset(4), size_t{4} << 30);
  EXPECT_EQ(pieces.size(4), (size_t{1} << 29) + 3);
}

// Rank r sends messages of every size to rank r + 1 (mod P) and receives from r - 1, all
// posted before any is waited for, with `max_piece`-byte pieces.
class PiecewisePointToPoint : public ::testing::TestWithParam<int> {};

TEST_P(PiecewisePointToPoint, EveryByteArrivesAndCountersCountWholeMessages) {
  const int P = GetParam();
  const std::vector<size_t> sizes = {0, 1, 7, 8, 9, 64, 257};
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  for (size_t max_piece : {size_t{1}, size_t{3}, size_t{8}, size_t{1000}}) {
    std::vector<std::vector<std::vector<uint8_t>>> received(P);
    const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
      comm.set_max_message_bytes(max_piece);
      const patterns::Ring ring{comm.rank(), P};
      std::vector<std::vector<uint8_t>> out;
      out.reserve(sizes.size());  // isend buffers must not move
      auto& in = received[comm.rank()];
      in.resize(sizes.size());
      RequestSet requests;
      for (size_t m = 0; m < sizes.size(); ++m) {
        in[m].assign(sizes[m], 0);
        requests.post(comm.irecv(in[m].data(), sizes[m], ring.left(), 100 + static_cast<int>(m % 2)));
      }
      for (size_t m = 0; m < sizes.size(); ++m) {
        out.emplace_back(sizes[m]);
        for (size_t b = 0; b < sizes[m]; ++b) out[m][b] = static_cast<uint8_t>(comm.rank() * 31 + m * 7 + b);
        requests.post(comm.isend(out[m].data(), sizes[m], ring.right(), 100 + static_cast<int>(m % 2)));
      }
      requests.wait();
      EXPECT_EQ(comm.counters().messages_sent, sizes.size()) << "rank " << comm.rank();
      EXPECT_EQ(comm.counters().bytes_sent, total) << "rank " << comm.rank();
      EXPECT_EQ(comm.counters().bytes_received, total) << "rank " << comm.rank();
    });
    ASSERT_EQ(error, "") << "P=" << P << " max_piece=" << max_piece;
    for (int r = 0; r < P; ++r) {
      const int from = patterns::Ring{r, P}.left();
      for (size_t m = 0; m < sizes.size(); ++m)
        for (size_t b = 0; b < sizes[m]; ++b)
          ASSERT_EQ(received[r][m][b], static_cast<uint8_t>(from * 31 + m * 7 + b))
              << "rank " << r << " message " << m << " (" << sizes[m] << " bytes, " << max_piece
              << "-byte pieces) byte " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, PiecewisePointToPoint, ::testing::Range(1, 17));

// Runs body(algorithm, rank) for `entry` on P ranks whose communicators send kPiece-byte
// pieces (set before create(): communicators the algorithm splits inherit it).
template <typename Entry, typename Body>
void run_in_pieces(const Entry& entry, int P, const Body& body) {
  std::vector<ScratchBuffer> scratch(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    comm.set_max_message_bytes(kPiece);
    AlgorithmContext context{comm, scratch[comm.rank()], size_t{64}, {}};
    auto algorithm = entry.create(context);
    body(*algorithm, comm.rank());
    drive(*algorithm, aborted);
  });
  ASSERT_EQ(error, "") << entry.name << " P=" << P;
}

Problem problem_of(int P, size_t count, DataType dtype) {
  Problem problem;
  problem.ranks = P;
  problem.count = count;
  problem.element_size = dtype_size(dtype);
  problem.dtype = dtype;
  problem.chunk_bytes = 64;
  problem.native_available = false;
  return problem;
}

std::vector<size_t> sizes_for(int P) { return {0, 1, 7, static_cast<size_t>(P + 1), 10 * kPiece, 1023}; }

uint8_t byte_of(int rank, size_t index) { return static_cast<uint8_t>(rank * 53 + index * 7 + 1); }

class PiecewiseAlgorithms : public ::testing::TestWithParam<int> {};

TEST_P(PiecewiseAlgorithms, EveryAllreduceIsExact) {
  const int P = GetParam();
  for (const auto& entry : allreduce_algorithms())
    for (DataType dtype : {DataType::kInt8, DataType::kFloat32})
      for (size_t n : sizes_for(P)) {
        if (!entry.declines(problem_of(P, n, dtype)).empty()) continue;
        const size_t element = dtype_size(dtype);
        std::vector<std::vector<uint8_t>> inputs(P), results(P);
        for (int r = 0; r < P; ++r) {
          inputs[r].assign(n * element, 0);
          testing_util::fill_input(inputs[r].data(), n, dtype, ReduceOp::kSum, r);
          results[r] = inputs[r];
        }
        run_in_pieces(entry, P, [&](AllreduceAlgorithm& algorithm, int rank) {
          algorithm.start(results[rank].data(), n, dtype, ReduceOp::kSum);
        });
        testing_util::expect_allreduce_results(
            inputs, results, n, dtype, ReduceOp::kSum,
            cat(entry.name, " P=", P, " n=", n, " ", dtype_name(dtype), " in ", kPiece, "-byte pieces"));
      }
}

TEST_P(PiecewiseAlgorithms, EveryReduceScatterIsExact) {
  const int P = GetParam();
  for (const auto& entry : reduce_scatter_algorithms())
    for (size_t n : sizes_for(P)) {
      if (!entry.declines(problem_of(P, n, DataType::kInt32)).empty()) continue;
      std::vector<std::vector<int32_t>> data(P, std::vector<int32_t>(n));
      std::vector<int32_t> expected(n, 0);
      for (int r = 0; r < P; ++r)
        for (size_t i = 0; i < n; ++i) {
          data[r][i] = static_cast<int32_t>(r * 1000003 + i * 7919);
          expected[i] += data[r][i];
        }
      run_in_pieces(entry, P, [&](ReduceScatterAlgorithm& algorithm, int rank) {
        algorithm.start(data[rank].data(), n, DataType::kInt32, ReduceOp::kSum);
      });
      for (int r = 0; r < P; ++r) {
        const auto block = patterns::segment(n, P, r);
        for (size_t i = block.offset; i < block.offset + block.count; ++i)
          ASSERT_EQ(data[r][i], expected[i])
              << entry.name << " P=" << P << " n=" << n << " rank " << r << " element " << i;
      }
    }
}

TEST_P(PiecewiseAlgorithms, EveryAllgatherIsExact) {
  const int P = GetParam();
  for (const auto& entry : allgather_algorithms())
    for (size_t n : sizes_for(P)) {
      std::vector<size_t> block_bytes(P), offset(P + 1, 0);
      for (int r = 0; r < P; ++r) {
        block_bytes[r] = (n * (r + 1)) % 1031;  // 0 for n = 0; uneven otherwise
        offset[r + 1] = offset[r] + block_bytes[r];
      }
      if (!entry.declines(problem_of(P, offset[P], DataType::kUInt8)).empty()) continue;
      std::vector<std::vector<uint8_t>> out(P, std::vector<uint8_t>(offset[P], 0));
      for (int r = 0; r < P; ++r)
        for (size_t b = 0; b < block_bytes[r]; ++b) out[r][offset[r] + b] = byte_of(r, b);
      run_in_pieces(entry, P,
                    [&](AllgatherAlgorithm& algorithm, int rank) { algorithm.start(out[rank].data(), block_bytes); });
      for (int r = 0; r < P; ++r)
        for (int from = 0; from < P; ++from)
          for (size_t b = 0; b < block_bytes[from]; ++b)
            ASSERT_EQ(out[r][offset[from] + b], byte_of(from, b))
                << entry.name << " P=" << P << " rank " << r << " block of rank " << from << " byte " << b;
    }
}

TEST_P(PiecewiseAlgorithms, EveryBroadcastIsExact) {
  const int P = GetParam();
  const int root = P - 1;
  for (const auto& entry : broadcast_algorithms())
    for (size_t n : sizes_for(P)) {
      if (!entry.declines(problem_of(P, n, DataType::kUInt8)).empty()) continue;
      std::vector<std::vector<uint8_t>> data(P, std::vector<uint8_t>(n, 0));
      for (size_t b = 0; b < n; ++b) data[root][b] = byte_of(root, b);
      run_in_pieces(entry, P,
                    [&](BroadcastAlgorithm& algorithm, int rank) { algorithm.start(data[rank].data(), n, root); });
      for (int r = 0; r < P; ++r)
        for (size_t b = 0; b < n; ++b)
          ASSERT_EQ(data[r][b], byte_of(root, b))
              << entry.name << " P=" << P << " n=" << n << " rank " << r << " byte " << b;
    }
}

TEST_P(PiecewiseAlgorithms, EveryAlltoallIsExact) {
  const int P = GetParam();
  for (const auto& entry : alltoall_algorithms())
    for (size_t n : sizes_for(P)) {  // n bytes per block
      if (!entry.declines(problem_of(P, n * P, DataType::kUInt8)).empty()) continue;
      std::vector<std::vector<uint8_t>> send(P, std::vector<uint8_t>(n * P)), recv(P, std::vector<uint8_t>(n * P, 0));
      for (int r = 0; r < P; ++r)
        for (size_t b = 0; b < n * P; ++b) send[r][b] = byte_of(r, b);
      run_in_pieces(entry, P, [&](AlltoallAlgorithm& algorithm, int rank) {
        algorithm.start(send[rank].data(), recv[rank].data(), n);
      });
      for (int r = 0; r < P; ++r)
        for (int from = 0; from < P; ++from)
          for (size_t b = 0; b < n; ++b)
            ASSERT_EQ(recv[r][from * n + b], byte_of(from, r * n + b))
                << entry.name << " P=" << P << " block " << n << " rank " << r << " from " << from << " byte " << b;
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, PiecewiseAlgorithms, ::testing::Range(1, 17));

}  // namespace
}  // namespace concord
