// The reusable pieces of the sparse allreduces (src/sparse/): COO wire format, balancing
// arithmetic, regions and local boundaries, option validation and the registry (pure), and
// the count exchange, the rotated exchange and the gather on the in-process transport at
// P = 1..8. Failure messages name rank, P and element.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "concord/errors.h"
#include "rank_runner.h"
#include "sparse/balance.h"
#include "sparse/coo.h"
#include "sparse/coo_exchange.h"
#include "sparse/coo_gather.h"
#include "sparse/options.h"
#include "sparse/partition.h"
#include "test_support/dtype_util.h"

namespace concord::sparse {
namespace {

using testing_util::cat;

TEST(CooWire, RoundTripsInt32AndInt64Indices) {
  EXPECT_EQ(coo_index_bytes(0), 4u);
  EXPECT_EQ(coo_index_bytes((int64_t{1} << 31) - 1), 4u);
  EXPECT_EQ(coo_index_bytes(int64_t{1} << 31), 8u);
  CooBlock block{{3, 7, (int64_t{1} << 40) + 5}, {1.5f, -2.0f, 3.25f}};
  for (size_t width : {size_t{4}, size_t{8}}) {
    const int64_t count = width == 4 ? 2 : 3;  // int32 cannot hold the last index
    std::vector<uint8_t> wire(coo_wire_bytes(count, width));
    EXPECT_EQ(wire.size(), static_cast<size_t>(count) * (width + 4));
    coo_pack(block, 0, count, width, wire.data());
    CooBlock back{{42}, {0.5f}};
    coo_unpack(wire.data(), count, width, back);
    ASSERT_EQ(back.size(), count + 1) << "width " << width;
    for (int64_t e = 0; e < count; ++e) {
      EXPECT_EQ(back.indices[e + 1], block.indices[e]) << "width " << width << " entry " << e;
      EXPECT_EQ(back.values[e + 1], block.values[e]) << "width " << width << " entry " << e;
    }
    std::vector<uint8_t> two(coo_wire_bytes(2, width));
    coo_pack(block, 0, 2, width, two.data());
    std::vector<float> dense(10, 1.0f);
    coo_scatter_add(two.data(), 2, width, 2, 10, dense.data());
    EXPECT_EQ(dense[1], 2.5f) << "width " << width;
    EXPECT_EQ(dense[5], -1.0f) << "width " << width;
    // A region too small for index 7 (from a rank that cut the vector differently): an error.
    EXPECT_THROW(coo_scatter_add(two.data(), 2, width, 2, 4, dense.data()), MismatchError) << "width " << width;
  }
}

TEST(Balance, VectorACountsMoveOneEntryFromRank1AndRank2) {
  const std::vector<int64_t> counts = {1, 2, 1, 0};
  EXPECT_EQ(balanced_counts(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(balanced_counts(7, 3), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_TRUE(should_balance(counts, 1.5));
  EXPECT_FALSE(should_balance(counts, 4.0));
  EXPECT_FALSE(should_balance(counts, 0.0));
  const BalancePlan p1 = balance_plan(counts, 1), p2 = balance_plan(counts, 2), p3 = balance_plan(counts, 3);
  ASSERT_EQ(p1.sends.size(), 2u);
  EXPECT_EQ(p1.sends[1].peer, 2);
  EXPECT_EQ(p1.sends[1].offset, 1);
  EXPECT_EQ(p1.sends[1].count, 1);
  ASSERT_EQ(p2.sends.size(), 1u);
  EXPECT_EQ(p2.sends[0].peer, 3);
  ASSERT_EQ(p3.receives.size(), 1u);
  EXPECT_EQ(p3.receives[0].peer, 2);
  EXPECT_EQ(p3.balanced_count, 1);
}

// Every entry is sent exactly once and received exactly once, at matching positions.
TEST(Balance, PlansOfAllRanksAgree) {
  for (int P = 1; P <= 9; ++P)
    for (int seed = 0; seed < 20; ++seed) {
      std::vector<int64_t> counts(P);
      for (int q = 0; q < P; ++q) counts[q] = (seed * 7 + q * q * 3) % (seed + 2);
      std::vector<int64_t> offsets(P + 1, 0), boffsets(P + 1, 0);
      int64_t total = 0;
      for (int q = 0; q < P; ++q) total += counts[q];
      const auto balanced = balanced_counts(total, P);
      for (int q = 0; q < P; ++q) {
        offsets[q + 1] = offsets[q] + counts[q];
        boffsets[q + 1] = boffsets[q] + balanced[q];
      }
      std::vector<int> sent(total, 0), received(total, 0);
      for (int r = 0; r < P; ++r) {
        const BalancePlan plan = balance_plan(counts, r);
        EXPECT_EQ(plan.balanced_count, balanced[r]) << "P=" << P << " rank=" << r;
        for (const auto& t : plan.sends)
          for (int64_t e = 0; e < t.count; ++e) ++sent[offsets[r] + t.offset + e];
        for (const auto& t : plan.receives)
          for (int64_t e = 0; e < t.count; ++e) {
            const int64_t position = boffsets[r] + t.offset + e;
            ++received[position];
            EXPECT_TRUE(position >= offsets[t.peer] && position < offsets[t.peer + 1])
                << "P=" << P << " rank=" << r << " position " << position << " not held by rank " << t.peer;
          }
      }
      for (int64_t e = 0; e < total; ++e) {
        EXPECT_EQ(sent[e], 1) << "P=" << P << " seed=" << seed << " element " << e;
        EXPECT_EQ(received[e], 1) << "P=" << P << " seed=" << seed << " element " << e;
      }
    }
}

TEST(Regions, EqualBoundariesAndSplit) {
  const Regions equal = Regions::equal(10, 3);
  EXPECT_EQ(equal.boundaries(), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(equal.end(2), 10);
  EXPECT_EQ(Regions::equal(2, 4).boundaries(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(local_boundaries({4, 8, 12, 13}, 4), (std::vector<int64_t>{8, 12, 13}));
  EXPECT_EQ(local_boundaries({0, 4, 9, 13}, 4), (std::vector<int64_t>{4, 9, 13}));
  const Regions regions(16, {4, 9, 12});
  EXPECT_EQ(regions.split({0, 2, 4, 8, 9, 12, 15}), (std::vector<int64_t>{0, 2, 4, 5, 7}));
  EXPECT_EQ(regions.split({}), (std::vector<int64_t>{0, 0, 0, 0, 0}));
}

TEST(SparseOptions, InvalidOptionsAreNamed) {
  const std::vector<std::pair<std::string, std::function<void(SparseOptions&)>>> cases = {
      {"density", [](SparseOptions& o) { o.density = 0; }},
      {"density", [](SparseOptions& o) { o.density = 1.5; }},
      {"density", [](SparseOptions& o) { o.density = std::nan(""); }},
      {"tau", [](SparseOptions& o) { o.tau = 0; }},
      {"tau_local", [](SparseOptions& o) { o.tau_local = -1; }},
      {"tau_global", [](SparseOptions& o) { o.tau_global = 0; }},
      {"bucket_steps", [](SparseOptions& o) { o.bucket_steps = 0; }},
      {"balance_factor", [](SparseOptions& o) { o.balance_factor = std::nan(""); }},
      {"local_feedback", [](SparseOptions& o) { o.local_feedback.lo = 2; }},
      {"global_feedback", [](SparseOptions& o) { o.global_feedback.factor = 0.5; }},
      {"gaussian_corrections", [](SparseOptions& o) { o.gaussian_corrections = -1; }},
  };
  for (const auto& [name, mutate] : cases) {
    SparseOptions options;
    mutate(options);
    try {
      validate_options(options);
      ADD_FAILURE() << name << ": no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("SparseOptions." + name), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(validate_options(SparseOptions{}));
}

TEST(SparseRegistry, ListsOkTopkAndRejectsUnknownNames) {
  const auto names = sparse_allreduce_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "oktopk"), names.end());
  const std::string failure = testing_util::run_ranks(1, [&](Communicator& comm, const testing_util::AbortFlag&) {
    EXPECT_STREQ(make_sparse_allreduce("oktopk", comm)->name(), "oktopk");
    try {
      make_sparse_allreduce("nope", comm);
      ADD_FAILURE() << "unknown name accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("oktopk"), std::string::npos) << e.what();
    }
    SparseOptions bad;
    bad.tau = 0;
    EXPECT_THROW(make_sparse_allreduce("oktopk", comm, bad), InvalidArgument);
  });
  EXPECT_EQ(failure, "");
}

// Rank r sends (r+1)*(q+1) % 4 entries with known contents to rank q; the rotated exchange
// delivers each block once, in step order, with its contents; the gather concatenates.
TEST(CooExchange, RotationBucketsAndGatherAtEveryP) {
  for (int P = 1; P <= 8; ++P)
    for (int steps : {1, 3, 4}) {
      const std::string failure = testing_util::run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
        const int r = comm.rank();
        std::vector<int64_t> send_counts(P);
        CooBlock mine;
        for (int q = 0; q < P; ++q) {
          send_counts[q] = (r + 1) * (q + 1) % 4;
          for (int64_t e = 0; e < send_counts[q]; ++e)
            mine.push_back(q * 100 + e, static_cast<float>(r * 1000 + q * 10 + e));
        }
        const auto recv_counts = exchange_counts(comm, send_counts, 77, "test");
        // Wire format block by block, as the exchange expects.
        std::vector<uint8_t> wire(coo_wire_bytes(mine.size(), 4));
        for (int q = 0, first = 0; q < P; first += static_cast<int>(send_counts[q]), ++q)
          coo_pack(mine, first, send_counts[q], 4, wire.data() + coo_wire_bytes(first, 4));
        RotatedExchange exchange(comm);
        std::vector<int> order;
        exchange.run(
            wire.data(), send_counts, recv_counts, 4, steps, [&](int source, const uint8_t* data, int64_t count) {
              order.push_back(source);
              CooBlock got;
              coo_unpack(data, count, 4, got);
              EXPECT_EQ(count, (source + 1) * (r + 1) % 4) << "P=" << P << " rank=" << r << " source " << source;
              for (int64_t e = 0; e < got.size(); ++e) {
                EXPECT_EQ(got.indices[e], r * 100 + e) << "P=" << P << " rank=" << r << " source " << source;
                EXPECT_EQ(got.values[e], static_cast<float>(source * 1000 + r * 10 + e))
                    << "P=" << P << " rank=" << r << " source " << source << " element " << e;
              }
            });
        std::vector<int> expected;
        for (int s = 0; s < P; ++s)
          if ((r - s + P) % P + 1 > 0 && ((r - s + P) % P + 1) * (r + 1) % 4 != 0) expected.push_back((r - s + P) % P);
        EXPECT_EQ(order, expected) << "P=" << P << " rank=" << r << ": consume order";

        CooGather gather(comm);
        CooBlock all;
        gather.gather(mine, 4, r == 0 ? 1e-9 : 1e-9, all);
        int64_t position = 0;
        for (int q = 0; q < P; ++q)
          for (int d = 0; d < P; ++d)
            for (int64_t e = 0; e < (q + 1) * (d + 1) % 4; ++e, ++position) {
              ASSERT_LT(position, all.size()) << "P=" << P << " rank=" << r;
              EXPECT_EQ(all.values[position], static_cast<float>(q * 1000 + d * 10 + e))
                  << "P=" << P << " rank=" << r << " element " << position;
            }
        EXPECT_EQ(all.size(), position) << "P=" << P << " rank=" << r;
      });
      EXPECT_EQ(failure, "") << "P=" << P << " bucket_steps=" << steps;
    }
}

}  // namespace
}  // namespace concord::sparse
