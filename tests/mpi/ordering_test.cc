// Negotiation order and fusion: many tensors of varied collectives, dtypes, ops, scale
// factors and sizes are in flight at once, submitted in a different random order on every
// rank (seeded by rank and iteration, so each run is reproducible), with random pauses that
// spread the submissions over several cycles, and waited for in yet another order. The
// same names are reused every iteration, as a training loop does; one iteration submits
// from two threads at once.
#include <random>

#include "reference.h"

namespace concord::mpitest {
namespace {

struct Spec {
  std::string name;
  CollectiveType type = CollectiveType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  Scale scale;
  int root = 0;
  int64_t count = 0;  // elements (allgather: dim 0 of rank 0; rank r adds r % 3)
};

// The tensor set, identical on every rank: drawn from a fixed seed, not from the rank.
std::vector<Spec> make_specs(int tensors, uint64_t seed, int size) {
  std::mt19937_64 rng(seed);
  const int64_t counts[] = {0, 1, 7, 100, 1023, 4099, 65537};
  std::vector<Spec> specs;
  for (int t = 0; t < tensors; ++t) {
    Spec s;
    s.name = "ordering." + std::to_string(seed) + ".tensor" + std::to_string(t);
    const uint64_t kind = rng() % 10;
    s.type = kind < 6 ? CollectiveType::kAllreduce : kind < 8 ? CollectiveType::kAllgather : CollectiveType::kBroadcast;
    s.dtype = all_dtypes()[rng() % all_dtypes().size()];
    s.op = all_ops()[rng() % all_ops().size()];
    if (rng() % 10 < 3) s.scale = Scale{0.5, 3.0};
    s.root = static_cast<int>(rng() % static_cast<uint64_t>(size));
    s.count = counts[rng() % std::size(counts)];
    specs.push_back(s);
  }
  return specs;
}

std::string describe_spec(const Spec& s, int iteration) {
  std::ostringstream what;
  what << collective_name(s.type);
  if (s.type == CollectiveType::kAllreduce)
    what << "(" << reduce_op_name(s.op) << ", ring, prescale " << s.scale.pre << ", postscale " << s.scale.post << ")";
  if (s.type == CollectiveType::kAllgather) what << "(ring)";
  if (s.type == CollectiveType::kBroadcast) what << "(binomial tree, root " << s.root << ")";
  what << " in iteration " << iteration << " of a random-order batch";
  return describe(what.str(), s.name, s.dtype, s.count);
}

int64_t allgather_rows(const Spec& s, int rank) { return s.count + rank % 3; }

struct Live {
  Tensor input;
  Tensor output;  // allreduce only (out of place)
  Handle handle;
};

// Runs every spec once with this rank's own random submission order; checks the results.
void run_batch(const std::vector<Spec>& specs, int iteration, bool two_threads) {
  const int rank = concord::rank(), size = concord::size();
  const uint64_t value_seed_base = static_cast<uint64_t>(iteration) * 1000;
  std::vector<Live> live(specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    const Spec& s = specs[k];
    const uint64_t seed = value_seed_base + k;
    switch (s.type) {
      case CollectiveType::kAllreduce:
        live[k].input = Tensor(s.dtype, {s.count});
        live[k].output = Tensor(s.dtype, {s.count});
        fill_allreduce_input(live[k].input, s.op, s.scale.any(), rank, seed);
        break;
      case CollectiveType::kAllgather:
        live[k].input = Tensor(s.dtype, {allgather_rows(s, rank)});
        fill(live[k].input, [&](auto tag, int64_t i) { return additive_value<decltype(tag)>(s.dtype, rank, i, seed); });
        break;
      case CollectiveType::kBroadcast:
        live[k].input = Tensor(s.dtype, {s.count});
        fill(live[k].input, [&](auto tag, int64_t i) {
          return additive_value<decltype(tag)>(s.dtype, s.root, i, seed) + (rank == s.root ? 0 : 1);
        });
        break;
    }
  }

  // This rank's own order: seeded by (rank, iteration), so it differs between ranks but
  // every run of the suite repeats it.
  std::mt19937_64 rng(0xC0FFEEull + static_cast<uint64_t>(rank) * 7919 + static_cast<uint64_t>(iteration) * 104729);
  std::vector<size_t> order(specs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> pause_us(order.size());
  for (auto& p : pause_us) p = rng() % 5 == 0 ? static_cast<int>(rng() % 2000) : 0;

  auto submit = [&](size_t position) {
    const size_t k = order[position];
    const Spec& s = specs[k];
    if (pause_us[position] > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us[position]));
    switch (s.type) {
      case CollectiveType::kAllreduce:
        live[k].handle = allreduce_async(s.name, live[k].input.view(), live[k].output.view(),
                                         AllreduceOptions{s.op, s.scale.pre, s.scale.post});
        break;
      case CollectiveType::kAllgather: live[k].handle = allgather_async(s.name, live[k].input.view()); break;
      case CollectiveType::kBroadcast:
        live[k].handle = broadcast_async(s.name, live[k].input.view(), BroadcastOptions{s.root});
        break;
      default:  // the specs hold only the three types above (make_specs)
        ADD_FAILURE() << describe_spec(s, iteration) << ": unexpected collective type";
    }
  };
  auto submit_every = [&](size_t first, size_t stride) {
    for (size_t position = first; position < order.size(); position += stride) {
      try {
        submit(position);
      } catch (const std::exception& e) {
        ADD_FAILURE() << describe_spec(specs[order[position]], iteration) << ": submit threw " << e.what();
      }
    }
  };
  if (two_threads) {
    std::thread other([&] { submit_every(1, 2); });
    submit_every(0, 2);
    other.join();
  } else {
    submit_every(0, 1);
  }

  std::vector<size_t> wait_order = order;
  std::shuffle(wait_order.begin(), wait_order.end(), rng);
  std::vector<bool> ok(specs.size(), false);
  for (size_t k : wait_order)
    if (live[k].handle.state()) ok[k] = wait_ok(live[k].handle, describe_spec(specs[k], iteration));

  for (size_t k = 0; k < specs.size(); ++k) {
    if (!ok[k]) continue;
    const Spec& s = specs[k];
    const uint64_t seed = value_seed_base + k;
    const std::string context = describe_spec(s, iteration);
    switch (s.type) {
      case CollectiveType::kAllreduce: {
        const Reference ref = allreduce_reference(s.dtype, s.op, s.scale, s.count, seed, size);
        expect_elements(context, s.dtype, live[k].output.data(), ref.value, ref.tolerance);
        break;
      }
      case CollectiveType::kAllgather: {
        std::vector<Real> expected;
        for (int r = 0; r < size; ++r)
          for (int64_t i = 0; i < allgather_rows(s, r); ++i) expected.push_back(additive_value(s.dtype, r, i, seed));
        EXPECT_EQ(live[k].handle.output_shape(), std::vector<int64_t>{static_cast<int64_t>(expected.size())})
            << context << ": output_shape";
        if (live[k].handle.output_bytes().size() == expected.size() * dtype_size(s.dtype))
          expect_elements(context, s.dtype, live[k].handle.output_bytes().data(), expected);
        else ADD_FAILURE() << context << ": output_bytes() has " << live[k].handle.output_bytes().size() << " bytes";
        break;
      }
      case CollectiveType::kBroadcast: {
        std::vector<Real> expected(static_cast<size_t>(s.count));
        for (int64_t i = 0; i < s.count; ++i)
          expected[static_cast<size_t>(i)] = additive_value(s.dtype, s.root, i, seed);
        expect_elements(context, s.dtype, live[k].input.data(), expected);
        break;
      }
      default: ADD_FAILURE() << context << ": unexpected collective type";
    }
  }
}

TEST(Ordering, FiftyMixedTensorsInRandomOrderPerRank) {
  const std::vector<Spec> specs = make_specs(50, 1, concord::size());
  for (int iteration = 0; iteration < 4; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration) + " on rank " + std::to_string(concord::rank()));
    run_batch(specs, iteration, /*two_threads=*/iteration == 2);
  }
}

// Sixty-four float32 sums of different sizes in flight at once: all fusable, so they are
// packed into the fusion buffer (split into several batches when CONCORD_FUSION_THRESHOLD
// is small, as in the np3 run).
TEST(Ordering, SixtyFourFusableTensorsInRandomOrderPerRank) {
  const int size = concord::size();
  std::vector<Spec> specs = make_specs(64, 2, size);
  std::mt19937_64 rng(77);
  for (auto& s : specs) {
    s.type = CollectiveType::kAllreduce;
    s.dtype = DataType::kFloat32;
    s.op = ReduceOp::kSum;
    s.scale = Scale{};
    s.count = static_cast<int64_t>(rng() % 20000);
  }
  for (int iteration = 0; iteration < 3; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration) + " on rank " + std::to_string(concord::rank()));
    run_batch(specs, iteration, /*two_threads=*/false);
  }
}

}  // namespace
}  // namespace concord::mpitest
