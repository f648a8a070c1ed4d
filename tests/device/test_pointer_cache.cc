// The pointer cache (src/device/pointer_cache.h) against an injected attribute provider
// that plays the driver: hits, misses, interior pointers, frees, reallocation at the same
// address, epochs, tracks-all mode and many threads looking up while others insert/free.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "device/pointer_cache.h"

namespace concord {
namespace {

// A fake driver: a table of live allocations, and a count of queries.
class FakeDriver : public AttributeProvider {
 public:
  std::optional<DeviceAllocation> query(const void* data) override {
    queries.fetch_add(1);
    const auto address = reinterpret_cast<uintptr_t>(data);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.upper_bound(address);
    if (it == live.begin()) return std::nullopt;
    --it;
    if (address - it->first >= it->second.bytes) return std::nullopt;
    return it->second;
  }
  DeviceAllocation allocate(uintptr_t base, size_t bytes, int device) {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceAllocation allocation{base, bytes, device, ++next_id};
    live[base] = allocation;
    return allocation;
  }
  void free(uintptr_t base) {
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(base);
  }
  std::atomic<int> queries{0};

 private:
  std::mutex mutex;
  std::map<uintptr_t, DeviceAllocation> live;
  uint64_t next_id = 0;
};

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(PointerCache, OneQueryCoversTheWholeAllocation) {
  FakeDriver driver;
  PointerCache cache(driver);
  driver.allocate(0x10000, 0x1000, 1);
  EXPECT_EQ(cache.lookup(at(0x10000)).device, 1);  // miss: one query
  EXPECT_EQ(driver.queries.load(), 1);
  EXPECT_EQ(cache.lookup(at(0x10800)).device, 1);  // interior pointer: hit
  EXPECT_EQ(cache.lookup(at(0x10fff)).device, 1);  // last byte: hit
  EXPECT_EQ(driver.queries.load(), 1);
  EXPECT_EQ(cache.hits(), 2u);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_FALSE(cache.lookup(at(0x11000)).is_device());  // one past the end: host, asked
  EXPECT_EQ(driver.queries.load(), 2);
}

TEST(PointerCache, HostMissesAreAskedEveryTimeUnlessAllIsTracked) {
  FakeDriver driver;
  PointerCache cache(driver);
  int host = 0;
  EXPECT_FALSE(cache.lookup(&host).is_device());
  EXPECT_FALSE(cache.lookup(&host).is_device());
  EXPECT_EQ(driver.queries.load(), 2);  // a miss is never assumed host
  // The same address becomes device memory: the next lookup must see it.
  driver.allocate(reinterpret_cast<uintptr_t>(&host), sizeof host, 0);
  EXPECT_TRUE(cache.lookup(&host).is_device());

  PointerCache tracked(driver);
  tracked.set_tracks_all(true);
  tracked.notify_alloc(DeviceAllocation{0x5000, 0x100, 2, 7});
  EXPECT_EQ(tracked.lookup(at(0x5010)).device, 2);
  const int before = driver.queries.load();
  EXPECT_FALSE(tracked.lookup(at(0x9000)).is_device());  // host without a query
  EXPECT_EQ(driver.queries.load(), before);
  EXPECT_EQ(tracked.queries(), 0u);
}

TEST(PointerCache, FreeAndReallocationAtTheSameAddress) {
  FakeDriver driver;
  PointerCache cache(driver);
  driver.allocate(0x20000, 0x1000, 0);
  EXPECT_EQ(cache.lookup(at(0x20010)).device, 0);
  // Freed and reallocated larger on another device at the same base (a caching allocator).
  driver.free(0x20000);
  cache.notify_free(at(0x20000));
  EXPECT_EQ(cache.size(), 0u);
  driver.allocate(0x20000, 0x4000, 3);
  EXPECT_EQ(cache.lookup(at(0x23000)).device, 3);
  EXPECT_EQ(cache.lookup(at(0x20000)).device, 3);
  // Without a free notification, validate() notices the new buffer ID.
  driver.free(0x20000);
  driver.allocate(0x20000, 0x4000, 1);
  EXPECT_EQ(cache.lookup(at(0x20000)).device, 3);  // stale until validated
  EXPECT_FALSE(cache.validate(at(0x20000)));
  EXPECT_EQ(cache.lookup(at(0x20000)).device, 1);
  EXPECT_TRUE(cache.validate(at(0x20000)));
  // Freed for good: validate drops the entry.
  driver.free(0x20000);
  EXPECT_FALSE(cache.validate(at(0x20000)));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.lookup(at(0x20000)).is_device());
}

TEST(PointerCache, EpochForgetsEverythingAndOverlapsReplaceStaleEntries) {
  FakeDriver driver;
  PointerCache cache(driver);
  driver.allocate(0x1000, 0x100, 0);
  driver.allocate(0x2000, 0x100, 0);
  cache.lookup(at(0x1000));
  cache.lookup(at(0x2000));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.invalidate_all(), 1u);
  EXPECT_EQ(cache.size(), 0u);
  cache.notify_alloc(DeviceAllocation{0x1000, 0x100, 0, 1});
  cache.notify_alloc(DeviceAllocation{0x1080, 0x1000, 1, 2});  // overlaps: the old one was freed
  EXPECT_EQ(cache.size(), 1u);
  const uint64_t queries = cache.queries();
  EXPECT_EQ(cache.lookup(at(0x1100)).device, 1);  // hits in the new entry
  EXPECT_EQ(cache.lookup(at(0x1080)).device, 1);
  EXPECT_EQ(cache.queries(), queries);
  EXPECT_EQ(cache.lookup(at(0x1000)).device, 0);  // no longer cached: asked (the driver says 0)
  EXPECT_EQ(cache.queries(), queries + 1);
}

// Readers hit while writers insert and free other allocations; every answer is right and
// nothing is reclaimed under a reader (run under ASan/TSan in the sanitizer builds).
TEST(PointerCache, ManyThreads) {
  FakeDriver driver;
  PointerCache cache(driver);
  constexpr int kStable = 64;
  for (int i = 0; i < kStable; ++i) driver.allocate(0x100000 + i * 0x1000, 0x1000, i % 4);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20000; ++round) {
        const int i = (round * 7 + t) % kStable;
        if (cache.lookup(at(0x100000 + i * 0x1000 + (round % 0x1000))).device != i % 4) wrong.fetch_add(1);
      }
    });
  threads.emplace_back([&] {
    for (int round = 0; !stop.load(); ++round) {
      const uintptr_t base = 0x900000 + (round % 16) * 0x1000;
      cache.notify_alloc(DeviceAllocation{base, 0x1000, 9, static_cast<uint64_t>(round)});
      cache.notify_free(at(base));
    }
  });
  for (int t = 0; t < 4; ++t) threads[t].join();
  stop = true;
  threads.back().join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(driver.queries.load(), static_cast<int>(cache.queries()));  // every query is a miss's
  EXPECT_GE(cache.hits(), 4u * 20000u - kStable * 4u);
  EXPECT_LE(cache.misses(), static_cast<uint64_t>(kStable) * 4u);
}

}  // namespace
}  // namespace concord
