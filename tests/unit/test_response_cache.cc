// The response cache (src/control/response_cache.h): HIT / INVALID / MISS classification,
// deterministic bit assignment (lowest free bit), LRU eviction that hands the evicted bit to
// the new entry, and — what bit-vector coordination relies on — identical state on every
// rank that performs the same calls, checked against a small reference model.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "concord/errors.h"
#include "control/response_cache.h"

namespace concord {
namespace {

using State = ResponseCache::State;

Request request(const std::string& name, int64_t elements, int rank = 0) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.shape = {elements};
  return r;
}

// The response the coordinator builds for `r` (single-tensor allreduce).
Response response_for(const Request& r) {
  Response response;
  response.type = ResponseType::kAllreduce;
  response.names = {r.name};
  response.dtype = r.dtype;
  response.op = r.op;
  int64_t elements = 1;
  for (int64_t d : r.shape) elements *= d;
  response.sizes = {elements};
  return response;
}

std::optional<std::string> put(ResponseCache& cache, const Request& r) { return cache.put(response_for(r), r); }

const char* state_name(State state) {
  switch (state) {
    case State::kMiss: return "MISS";
    case State::kHit: return "HIT";
    case State::kInvalid: return "INVALID";
  }
  return "?";
}

// "HIT@3", "INVALID@0", "MISS": one lookup, printable.
std::string lookup_string(const ResponseCache& cache, const Request& r) {
  const auto found = cache.lookup(r);
  std::string out = state_name(found.state);
  if (found.state != State::kMiss) out += "@" + std::to_string(found.bit);
  return out;
}

// The names in LRU order, least recently used first, read destructively: the cache is filled
// with `capacity` fresh names and the evicted names are recorded in order. (Not on a copy:
// the cache holds iterators into its own list, so a copy would point into the original.)
std::vector<std::string> lru_order(ResponseCache& cache) {
  std::vector<std::string> order;
  const size_t held = cache.size();
  for (uint32_t i = 0; i < cache.capacity(); ++i) {
    if (auto evicted = put(cache, request("__drain" + std::to_string(i), 1))) order.push_back(*evicted);
  }
  EXPECT_EQ(order.size(), held) << "draining a full cache must evict every original entry";
  return order;
}

TEST(ResponseCache, MissHitAndInvalidClassification) {
  ResponseCache cache(8);
  const Request a = request("a", 3);
  EXPECT_EQ(lookup_string(cache, a), "MISS") << "empty cache";
  EXPECT_EQ(put(cache, a), std::nullopt);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(lookup_string(cache, a), "HIT@0");
  EXPECT_EQ(lookup_string(cache, request("a", 3, /*rank=*/5)), "HIT@0") << "the rank is not a parameter";
  EXPECT_EQ(lookup_string(cache, request("b", 3)), "MISS") << "another name";
  EXPECT_EQ(cache.response(0), response_for(a));
  EXPECT_EQ(cache.parameters(0), a);

  // Every parameter but the rank turns the hit into INVALID (same bit).
  const std::vector<std::pair<std::string, std::function<void(Request&)>>> changes = {
      {"shape", [](Request& r) { r.shape = {4}; }},
      {"rank of shape",
       [](Request& r) {
         r.shape = {3, 1};
       }},
      {"dtype", [](Request& r) { r.dtype = DataType::kFloat64; }},
      {"collective", [](Request& r) { r.type = CollectiveType::kAllgather; }},
      {"reduce op", [](Request& r) { r.op = ReduceOp::kMax; }},
      {"root", [](Request& r) { r.root = 1; }},
      {"prescale", [](Request& r) { r.prescale_factor = 0.5; }},
      {"postscale", [](Request& r) { r.postscale_factor = 2; }},
      {"group",
       [](Request& r) {
         r.group = "a";
         r.group_size = 2;
       }},
  };
  for (const auto& [what, change] : changes) {
    Request changed = a;
    change(changed);
    EXPECT_EQ(lookup_string(cache, changed), "INVALID@0") << "changed " << what;
  }
}

TEST(ResponseCache, NewEntriesTakeTheLowestFreeBit) {
  ResponseCache cache(6);
  for (int i = 0; i < 4; ++i) {
    const Request r = request("t" + std::to_string(i), 10 + i);
    EXPECT_EQ(put(cache, r), std::nullopt);
    EXPECT_EQ(lookup_string(cache, r), "HIT@" + std::to_string(i)) << "entry " << i;
  }
  cache.erase(2);
  cache.erase(0);
  EXPECT_EQ(cache.size(), 2u);
  put(cache, request("x", 1));
  EXPECT_EQ(lookup_string(cache, request("x", 1)), "HIT@0") << "lowest free bit after erasing 0 and 2";
  put(cache, request("y", 1));
  EXPECT_EQ(lookup_string(cache, request("y", 1)), "HIT@2");
  put(cache, request("z", 1));
  EXPECT_EQ(lookup_string(cache, request("z", 1)), "HIT@4") << "then the never-used bits, in order";
  EXPECT_EQ(lookup_string(cache, request("t1", 11)), "HIT@1") << "untouched entries keep their bits";
  EXPECT_EQ(lookup_string(cache, request("t3", 13)), "HIT@3");
}

TEST(ResponseCache, FullCacheEvictsTheLeastRecentlyUsedAndReusesItsBit) {
  ResponseCache cache(3);
  for (const char* name : {"a", "b", "c"}) EXPECT_EQ(put(cache, request(name, 1)), std::nullopt) << name;
  EXPECT_EQ(put(cache, request("d", 1)), std::optional<std::string>("a")) << "a is the oldest";
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(lookup_string(cache, request("a", 1)), "MISS") << "evicted";
  EXPECT_EQ(lookup_string(cache, request("d", 1)), "HIT@0") << "d takes a's bit";
  EXPECT_EQ(put(cache, request("e", 1)), std::optional<std::string>("b"));
  EXPECT_EQ(lookup_string(cache, request("e", 1)), "HIT@1") << "e takes b's bit";
  EXPECT_EQ(put(cache, request("f", 1)), std::optional<std::string>("c"));
  EXPECT_EQ(lookup_string(cache, request("f", 1)), "HIT@2");
  EXPECT_EQ(put(cache, request("g", 1)), std::optional<std::string>("d")) << "d is now the oldest";
  EXPECT_EQ(lookup_string(cache, request("g", 1)), "HIT@0");
}

TEST(ResponseCache, TouchMakesAnEntryMostRecentlyUsed) {
  ResponseCache cache(3);
  for (const char* name : {"a", "b", "c"}) put(cache, request(name, 1));
  cache.touch(0);  // a
  EXPECT_EQ(put(cache, request("d", 1)), std::optional<std::string>("b")) << "a was touched, b is the victim";
  EXPECT_EQ(lookup_string(cache, request("d", 1)), "HIT@1");
  cache.touch(2);  // c
  cache.touch(0);  // a
  EXPECT_EQ(put(cache, request("e", 1)), std::optional<std::string>("d")) << "order now d, c, a";
  EXPECT_EQ(lookup_string(cache, request("e", 1)), "HIT@1");
  cache.touch(2);  // c: order a, e, c
  EXPECT_THROW(cache.touch(5), InternalError) << "bit out of range";
  EXPECT_EQ(lru_order(cache), (std::vector<std::string>{"a", "e", "c"}));
}

TEST(ResponseCache, EraseFreesTheBit) {
  ResponseCache cache(3);
  for (const char* name : {"a", "b", "c"}) put(cache, request(name, 1));
  cache.erase(1);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(lookup_string(cache, request("b", 1)), "MISS");
  EXPECT_THROW(cache.response(1), InternalError) << "erased bit";
  EXPECT_THROW(cache.parameters(1), InternalError) << "erased bit";
  EXPECT_THROW(cache.touch(1), InternalError) << "erased bit";
  cache.erase(1);  // no-op
  cache.erase(7);  // out of range: no-op
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(put(cache, request("d", 1)), std::nullopt) << "the erased bit is free: no eviction";
  EXPECT_EQ(lookup_string(cache, request("d", 1)), "HIT@1");
  EXPECT_EQ(lookup_string(cache, request("a", 1)), "HIT@0");
  EXPECT_EQ(lookup_string(cache, request("c", 1)), "HIT@2");
  EXPECT_EQ(lru_order(cache), (std::vector<std::string>{"a", "c", "d"}));
}

TEST(ResponseCache, CapacityZeroNeverStores) {
  ResponseCache cache(0);
  EXPECT_EQ(cache.capacity(), 0u);
  for (int i = 0; i < 5; ++i) {
    const Request r = request("t" + std::to_string(i), 4);
    EXPECT_EQ(put(cache, r), std::nullopt) << "put " << i;
    EXPECT_EQ(lookup_string(cache, r), "MISS") << "put " << i;
  }
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_THROW(cache.response(0), InternalError);
  cache.erase(0);  // no-op
}

TEST(ResponseCache, PutOfAnExistingNameReplacesIt) {
  ResponseCache cache(3);
  for (const char* name : {"a", "b", "c"}) put(cache, request(name, 1));
  // Full, but the replaced entry makes room: nothing else is evicted.
  EXPECT_EQ(put(cache, request("b", 7)), std::nullopt);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(lookup_string(cache, request("b", 7)), "HIT@1") << "the freed bit is the lowest free one";
  EXPECT_EQ(lookup_string(cache, request("b", 1)), "INVALID@1") << "the old parameters are gone";
  EXPECT_EQ(cache.response(1).sizes, std::vector<int64_t>{7}) << "the new response is stored";
  EXPECT_EQ(cache.parameters(1).shape, std::vector<int64_t>{7});
  EXPECT_EQ(put(cache, request("d", 1)), std::optional<std::string>("a"));
  EXPECT_EQ(lru_order(cache), (std::vector<std::string>{"c", "b", "d"})) << "the replacement is more recent than c";
}

TEST(ResponseCache, KeepsOnlySingleAllreduceAndAllgatherResponses) {
  Response r = response_for(request("a", 2));
  EXPECT_TRUE(ResponseCache::cacheable(r));
  r.type = ResponseType::kAllgather;
  EXPECT_TRUE(ResponseCache::cacheable(r));
  r.type = ResponseType::kBroadcast;
  EXPECT_FALSE(ResponseCache::cacheable(r));
  r.type = ResponseType::kError;
  EXPECT_FALSE(ResponseCache::cacheable(r));
  Response fused = response_for(request("a", 2));
  fused.names.push_back("b");
  fused.sizes.push_back(3);
  EXPECT_FALSE(ResponseCache::cacheable(fused)) << "fused responses are split before caching";
  ResponseCache cache(4);
  EXPECT_THROW(cache.put(fused, request("a", 2)), InternalError);
  EXPECT_EQ(cache.size(), 0u);
}

// A reference model of the documented behaviour: LRU list (front = most recent) of
// (name, shape, bit); new entries take the lowest free bit; a full cache evicts the back.
struct Model {
  struct Entry {
    std::string name;
    int64_t elements;
    uint32_t bit;
  };
  uint32_t capacity;
  std::list<Entry> lru;

  std::list<Entry>::iterator find_name(const std::string& name) {
    return std::find_if(lru.begin(), lru.end(), [&](const Entry& e) { return e.name == name; });
  }
  std::list<Entry>::iterator find_bit(uint32_t bit) {
    return std::find_if(lru.begin(), lru.end(), [&](const Entry& e) { return e.bit == bit; });
  }
  std::optional<std::string> put(const std::string& name, int64_t elements) {
    if (capacity == 0) return std::nullopt;
    if (auto it = find_name(name); it != lru.end()) lru.erase(it);
    std::optional<std::string> evicted;
    if (lru.size() == capacity) {
      evicted = lru.back().name;
      lru.pop_back();
    }
    uint32_t bit = 0;
    while (find_bit(bit) != lru.end()) ++bit;
    lru.push_front({name, elements, bit});
    return evicted;
  }
  void touch(uint32_t bit) {
    auto it = find_bit(bit);
    if (it != lru.end()) lru.splice(lru.begin(), lru, it);
  }
  void erase(uint32_t bit) {
    if (auto it = find_bit(bit); it != lru.end()) lru.erase(it);
  }
  std::string lookup(const std::string& name, int64_t elements) {
    auto it = find_name(name);
    if (it == lru.end()) return "MISS";
    return std::string(it->elements == elements ? "HIT@" : "INVALID@") + std::to_string(it->bit);
  }
};

// Several "ranks" perform the same random sequence of put / touch / erase calls (with their
// own rank in the parameters, as the negotiator does); after every call each rank's cache
// agrees with the model, and at the end all caches have the same bits and LRU order.
TEST(ResponseCache, SameCallsOnEveryRankGiveIdenticalCaches) {
  constexpr int kRanks = 4;
  for (uint32_t capacity : {1u, 5u, 16u}) {
    std::vector<std::unique_ptr<ResponseCache>> owned;
    for (int r = 0; r < kRanks; ++r) owned.push_back(std::make_unique<ResponseCache>(capacity));
    auto caches = [&](int r) -> ResponseCache& { return *owned[r]; };
    Model model{capacity, {}};
    std::mt19937 rng(1234 + capacity);
    constexpr int kNames = 24;
    uint64_t evictions = 0;
    for (int step = 0; step < 600; ++step) {
      const std::string name = "n" + std::to_string(rng() % kNames);
      const int64_t elements = 1 + static_cast<int64_t>(rng() % 3);
      const uint32_t bit = static_cast<uint32_t>(rng() % (capacity + 1));
      const int op = static_cast<int>(rng() % 10);
      std::ostringstream what;
      what << "capacity " << capacity << ", step " << step;
      if (op < 5) {
        what << ": put(" << name << ", " << elements << ")";
        const auto expected = model.put(name, elements);
        evictions += expected.has_value();
        for (int r = 0; r < kRanks; ++r)
          EXPECT_EQ(put(caches(r), request(name, elements, r)), expected) << what.str() << " on rank " << r;
      } else if (op < 8) {
        what << ": touch(" << bit << ")";
        if (model.find_bit(bit) == model.lru.end()) continue;  // touch of an unused bit throws
        model.touch(bit);
        for (int r = 0; r < kRanks; ++r) caches(r).touch(bit);
      } else {
        what << ": erase(" << bit << ")";
        model.erase(bit);
        for (int r = 0; r < kRanks; ++r) caches(r).erase(bit);
      }
      for (int r = 0; r < kRanks; ++r) {
        ASSERT_EQ(caches(r).size(), model.lru.size()) << what.str() << " on rank " << r;
        for (int n = 0; n < kNames; ++n) {
          const std::string probe = "n" + std::to_string(n);
          ASSERT_EQ(lookup_string(caches(r), request(probe, 2, r)), model.lookup(probe, 2))
              << what.str() << " on rank " << r << ", lookup of " << probe;
        }
      }
    }
    EXPECT_GT(evictions, 0u) << "capacity " << capacity << ": the sequence must exercise eviction";
    std::vector<std::string> expected_order;
    for (auto it = model.lru.rbegin(); it != model.lru.rend(); ++it) expected_order.push_back(it->name);
    for (int r = 0; r < kRanks; ++r) {
      for (const auto& entry : model.lru) {
        EXPECT_EQ(caches(r).response(entry.bit).names, std::vector<std::string>{entry.name})
            << "capacity " << capacity << ", rank " << r << ", bit " << entry.bit;
        EXPECT_EQ(caches(r).response(entry.bit).sizes, std::vector<int64_t>{entry.elements})
            << "capacity " << capacity << ", rank " << r << ", bit " << entry.bit;
        EXPECT_EQ(caches(r).parameters(entry.bit).rank, r) << "each rank keeps its own request";
      }
      EXPECT_EQ(lru_order(caches(r)), expected_order) << "capacity " << capacity << ", rank " << r << ": LRU order";
    }
  }
}

}  // namespace
}  // namespace concord
