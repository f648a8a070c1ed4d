// runtime/output_pool.h: blocks come back to the pool when destroyed, are reused by size
// (most recently released first), and the pool keeps at most its capacity.
#include "runtime/output_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "concord/concord.h"

namespace concord {
namespace {

TEST(OutputPool, ReusesAReleasedBlockOfTheSameSizeOnly) {
  OutputPool pool(8 << 20);
  auto first = pool.take(3 << 20);
  ASSERT_NE(first->data(), nullptr);
  EXPECT_EQ(first->size(), size_t{3} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first->data()) % 64, 0u) << "blocks are cache-line aligned";
  std::memset(first->data(), 7, first->size());  // the whole block is writable
  uint8_t* const address = first->data();
  EXPECT_EQ(pool.free_bytes(), 0);
  first.reset();
  EXPECT_EQ(pool.free_bytes(), int64_t{3} << 20) << "a destroyed block did not return to the pool";
  auto other_size = pool.take((3 << 20) + 1);
  EXPECT_NE(other_size->data(), address) << "a block of another size was handed out";
  EXPECT_EQ(pool.free_bytes(), int64_t{3} << 20);
  auto again = pool.take(3 << 20);
  EXPECT_EQ(again->data(), address) << "the released block was not reused";
  EXPECT_EQ(pool.free_bytes(), 0);
}

TEST(OutputPool, TakesTheMostRecentlyReleasedAndDropsTheOldestBeyondCapacity) {
  OutputPool pool(3 << 20);
  std::vector<std::unique_ptr<OutputBlock>> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.take(1 << 20));
  std::vector<uint8_t*> addresses;
  for (auto& block : blocks) addresses.push_back(block->data());
  blocks.clear();  // released in order 0..4; only 2, 3, 4 fit
  EXPECT_EQ(pool.free_bytes(), int64_t{3} << 20);
  EXPECT_EQ(pool.take(1 << 20)->data(), addresses[4]) << "not the most recently released block";
  // That block went back at the end of the statement: 2, 3, 4 are kept again.
  auto a = pool.take(1 << 20), b = pool.take(1 << 20), c = pool.take(1 << 20);
  EXPECT_EQ(a->data(), addresses[4]);
  EXPECT_EQ(b->data(), addresses[3]);
  EXPECT_EQ(c->data(), addresses[2]);
  EXPECT_EQ(pool.free_bytes(), 0) << "blocks 0 and 1 should have been freed, not kept";
  auto d = pool.take(1 << 20);  // new memory (the allocator may reuse block 0's or 1's)
  EXPECT_NE(d->data(), a->data());
  EXPECT_NE(d->data(), b->data());
  EXPECT_NE(d->data(), c->data());
}

TEST(OutputPool, KeepsNothingAtCapacityZeroOrForBlocksLargerThanIt) {
  OutputPool none(0);
  none.take(1 << 20).reset();
  EXPECT_EQ(none.free_bytes(), 0);
  OutputPool small(1 << 20);
  small.take(2 << 20).reset();
  EXPECT_EQ(small.free_bytes(), 0) << "a block larger than the capacity was kept";
  auto empty = small.take(0);  // an empty block is valid
  EXPECT_EQ(empty->size(), 0u);
  none.take(0).reset();
  EXPECT_EQ(none.free_bytes(), 0);
  EXPECT_THROW(OutputPool(-1), InvalidArgument);
  EXPECT_THROW(small.take(std::numeric_limits<size_t>::max()), std::bad_alloc) << "the size rounding wrapped";
}

TEST(OutputPool, BlocksOutliveThePoolAndClearFreesTheKeptOnes) {
  auto pool = std::make_unique<OutputPool>(4 << 20);
  auto block = pool->take(1 << 20);
  pool->take(1 << 20).reset();
  EXPECT_EQ(pool->free_bytes(), int64_t{1} << 20);
  pool->clear();
  EXPECT_EQ(pool->free_bytes(), 0);
  pool.reset();
  std::memset(block->data(), 1, block->size());
  block.reset();  // returns to the shared state, which goes with it
}

TEST(OutputPool, ThreadsTakeAndReleaseConcurrently) {
  OutputPool pool(64 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        auto block = pool.take(size_t{1 + (i + t) % 3} << 20);
        block->data()[0] = static_cast<uint8_t>(t);
        block->data()[block->size() - 1] = static_cast<uint8_t>(i);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_LE(pool.free_bytes(), int64_t{64} << 20);
  EXPECT_GT(pool.free_bytes(), 0);
}

}  // namespace
}  // namespace concord
