// KVStore scenarios shared by the unit suite (in-process ranks, tests/unit/test_kvstore.cc)
// and the MPI suite (tests/mpi/kvstore_test.cc). Each runs on every rank of `world` with
// one KVStore design and checks with EXPECT_* only (never returning early, so no rank
// skips a collective its peers run). Failure messages name rank, design, P, key, size and
// element.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concord/errors.h"
#include "engine/engine.h"
#include "kvstore/kvstore.h"
#include "test_support/dtype_util.h"

namespace concord::kvstore::scenarios {

using testing_util::cat;
using testing_util::load;
using testing_util::store;

/// The options of the tests: C = 3 communicators, a window of 4, 256-byte chunks (so even
/// small keys are pipelined in many chunks).
inline KVStoreOptions options_for(KVStoreType type) {
  KVStoreOptions options;
  options.type = type;
  options.communicators = 3;
  options.outstanding = 4;
  options.chunk_bytes = 256;
  return options;
}

/// One key of the tests: its dtype and shape.
struct KeySpec {
  int key;
  DataType dtype;
  std::vector<int64_t> shape;
};

/// Ten keys: every dtype, empty, one-element and multi-chunk tensors.
inline const std::vector<KeySpec>& key_specs() {
  static const std::vector<KeySpec> specs = {
      {10, DataType::kFloat32, {0}},    {11, DataType::kFloat32, {1}},  {12, DataType::kFloat16, {3, 5}},
      {13, DataType::kBFloat16, {17}},  {14, DataType::kInt32, {100}},  {15, DataType::kFloat64, {33, 31}},
      {16, DataType::kInt8, {7}},       {17, DataType::kUInt8, {1000}}, {18, DataType::kInt64, {2, 2}},
      {19, DataType::kFloat32, {4000}},
  };
  return specs;
}

/// A small integer per (rank, key, element, iteration): sums over <= 16 ranks are exact in
/// every dtype (bfloat16 and int8 included).
inline double gradient_value(int rank, int key, size_t i, int iteration) {
  return static_cast<double>((rank + static_cast<int>(i % 13) + key + iteration) % 8);
}

/// A zeroed tensor of `spec` backed by `bytes`.
inline TensorView view_of(const KeySpec& spec, std::vector<uint8_t>& bytes) {
  TensorView view{nullptr, spec.dtype, spec.shape};
  bytes.assign(view.num_bytes(), 0);
  view.data = bytes.data();
  return view;
}

/// "MismatchError: <message>" / "InvalidArgument: <message>" / "Error: <message>".
inline std::string describe(const Error& e) {
  if (dynamic_cast<const MismatchError*>(&e)) return cat("MismatchError: ", e.what());
  if (dynamic_cast<const InvalidArgument*>(&e)) return cat("InvalidArgument: ", e.what());
  return cat("Error: ", e.what());
}

/// "" when every element of `out` equals expected(i), else the first difference.
template <typename Expected>
std::string first_difference(const TensorView& out, Expected expected) {
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const double got = load(out.data, i, out.dtype);
    if (got != expected(i))
      return cat(dtype_name(out.dtype), " n=", out.num_elements(), " element ", i, ": got ", got, ", expected ",
                 expected(i));
  }
  return "";
}

/// Pushes `keys` in order, then pulls each; returns key -> describe(error) of the keys that
/// failed (funneled: thrown by push; otherwise rethrown by pull).
inline std::map<int, std::string> push_then_pull(KVStore& kv, const std::vector<int>& keys, const TensorView& grad,
                                                 const TensorView& out) {
  std::map<int, std::string> errors;
  for (int key : keys) {
    try {
      kv.push(key, grad);
    } catch (const Error& e) {
      errors[key] = describe(e);
    }
  }
  for (int key : keys) {
    if (errors.count(key)) continue;
    try {
      kv.pull(key, out);
    } catch (const Error& e) {
      errors[key] = describe(e);
    }
  }
  return errors;
}

/// init: every rank ends with rank 0's value, whatever it passed.
inline void init_takes_rank0_value(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const std::string label = cat("rank ", kv.rank(), " ", kvstore_type_name(type), " P=", kv.num_workers());
  EXPECT_EQ(kv.num_workers(), world.size()) << label;
  EXPECT_EQ(kv.rank(), world.rank()) << label;
  for (const auto& spec : key_specs()) {
    std::vector<uint8_t> value_bytes, out_bytes;
    TensorView value = view_of(spec, value_bytes), out = view_of(spec, out_bytes);
    for (int64_t i = 0; i < value.num_elements(); ++i)
      store(value.data, i, spec.dtype, gradient_value(kv.rank(), spec.key, i, 0));
    kv.init(spec.key, value);
    kv.pull(spec.key, out);
    EXPECT_EQ(first_difference(out, [&](int64_t i) { return gradient_value(0, spec.key, i, 0); }), "")
        << label << " key " << spec.key;
  }
}

/// Three iterations of: gradient ops that finish in a random order (different per rank),
/// a push of every key in the same order, a pull into an engine var; the result is the
/// exact sum over ranks in every dtype, on every rank.
inline void push_sums_gradients_ready_in_random_order(Communicator& world, KVStoreType type) {
  const auto& specs = key_specs();
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank(), P = kv.num_workers();
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", P);
  std::vector<std::vector<uint8_t>> grad_bytes(specs.size()), out_bytes(specs.size());
  std::vector<TensorView> grads, outs;
  std::vector<engine::Var*> grad_vars, out_vars;
  for (size_t k = 0; k < specs.size(); ++k) {
    grads.push_back(view_of(specs[k], grad_bytes[k]));
    outs.push_back(view_of(specs[k], out_bytes[k]));
    grad_vars.push_back(engine.new_var());
    out_vars.push_back(engine.new_var());
    kv.init(specs[k].key, grads[k]);
  }
  std::mt19937 rng(1234 + 77 * rank);
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (size_t k = 0; k < specs.size(); ++k) {
      const int delay_us = static_cast<int>(rng() % 400);
      const TensorView grad = grads[k];
      const int key = specs[k].key;
      engine.push_sync(
          [grad, key, rank, iteration, delay_us] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            for (int64_t i = 0; i < grad.num_elements(); ++i)
              store(grad.data, i, grad.dtype, gradient_value(rank, key, i, iteration));
          },
          {}, {grad_vars[k]}, {engine::FnKind::kCpu, 0, cat("gradient ", key)});
    }
    for (size_t k = 0; k < specs.size(); ++k) kv.push(specs[k].key, grads[k], grad_vars[k]);
    for (size_t k = 0; k < specs.size(); ++k) kv.pull(specs[k].key, outs[k], out_vars[k]);
    for (size_t k = 0; k < specs.size(); ++k) {
      engine.wait_for_var(out_vars[k]);
      const auto expected = [&](int64_t i) {
        double sum = 0;
        for (int r = 0; r < P; ++r) sum += gradient_value(r, specs[k].key, i, iteration);
        return sum;
      };
      EXPECT_EQ(first_difference(outs[k], expected), "")
          << label << " key " << specs[k].key << " iteration " << iteration;
    }
  }
}

/// pushpull with kAverage on float64, in place: the mean over ranks.
inline void pushpull_averages_in_place(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStoreOptions options = options_for(type);
  options.op = ReduceOp::kAverage;
  KVStore kv(engine, world, options);
  const int P = kv.num_workers();
  std::vector<double> data(301, 0.0);
  TensorView view{data.data(), DataType::kFloat64, {301}};
  kv.init(5, view);
  for (size_t i = 0; i < data.size(); ++i) data[i] = kv.rank() * 4.0 + static_cast<double>(i);
  kv.pushpull(5, view, view);
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_NEAR(data[i], 2.0 * (P - 1) + static_cast<double>(i), 1e-9)
        << "rank " << kv.rank() << " " << kvstore_type_name(type) << " P=" << P << " key 5 n=301 element " << i;
}

/// Every rank pushes keys 0 and 3 (one communicator even for concurrent with C = 3) and
/// expects the sums: the store still works.
inline void expect_store_works(KVStore& kv, const std::string& label) {
  std::vector<float> grad(6, static_cast<float>(kv.rank() + 1)), out(6, -1.0f);
  const TensorView g{grad.data(), DataType::kFloat32, {6}}, o{out.data(), DataType::kFloat32, {6}};
  const auto errors = push_then_pull(kv, {0, 3}, g, o);
  EXPECT_TRUE(errors.empty()) << label << ": after the error, pushes still fail: "
                              << (errors.empty() ? "" : errors.begin()->second);
  const int P = kv.num_workers();
  EXPECT_EQ(first_difference(o, [&](int64_t) { return P * (P + 1) / 2.0; }), "") << label << ": after the error";
}

/// Checks that `errors` holds an error of `type_name` for `key` containing every `parts`.
inline void expect_error(const std::map<int, std::string>& errors, int key, const std::string& type_name,
                         const std::vector<std::string>& parts, const std::string& label) {
  auto it = errors.find(key);
  if (it == errors.end()) {
    ADD_FAILURE() << label << ": key " << key << " did not fail";
    return;
  }
  EXPECT_EQ(it->second.rfind(type_name, 0), 0u) << label << ": " << it->second;
  for (const auto& part : parts)
    EXPECT_NE(it->second.find(part), std::string::npos) << label << ": '" << part << "' missing from " << it->second;
}

/// Needs P >= 2. Ranks push keys 0 and 3 in different orders: every rank gets a
/// MismatchError naming both keys and ranks, for both pushes; then the store works again.
inline void keys_in_different_order_fail_on_every_rank(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank();
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", kv.num_workers());
  std::vector<float> grad(6, 1.0f), out(6, 0.0f);
  const TensorView g{grad.data(), DataType::kFloat32, {6}}, o{out.data(), DataType::kFloat32, {6}};
  kv.init(0, g);
  kv.init(3, g);
  const auto errors = push_then_pull(kv, rank == 0 ? std::vector<int>{0, 3} : std::vector<int>{3, 0}, g, o);
  for (int key : {0, 3})
    expect_error(errors, key, "MismatchError", {"key 0", "key 3", "rank 0", "rank 1", "key differs"}, label);
  expect_store_works(kv, label);
}

/// Needs P >= 2. The last rank pushes a key it never initialised, then a gradient of the
/// wrong shape: each time every rank gets an InvalidArgument naming that rank and the key;
/// then all is well.
inline void unknown_key_and_wrong_shape_fail_on_every_rank(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank(), P = kv.num_workers();
  const bool culprit = rank == P - 1;
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", P);
  std::vector<float> grad(6, 1.0f), out(6, 0.0f), wrong(5, 1.0f);
  const TensorView g{grad.data(), DataType::kFloat32, {6}}, o{out.data(), DataType::kFloat32, {6}};
  kv.init(0, g);
  kv.init(3, g);
  // Key 6 uses key 0's communicator (6 mod 3) for concurrent, so both meet in one check.
  const int key = culprit ? 6 : 0;
  expect_error(push_then_pull(kv, {key}, g, o), key, "InvalidArgument",
               {cat("rank ", P - 1), "key 6", "never initialised"}, label);
  const TensorView pushed = culprit ? TensorView{wrong.data(), DataType::kFloat32, {5}} : g;
  expect_error(push_then_pull(kv, {3}, pushed, o), 3, "InvalidArgument", {cat("rank ", P - 1), "key 3", "[5]", "[6]"},
               label);
  expect_store_works(kv, label);
}

/// Needs P >= 2. init with different shapes -> MismatchError on every rank and the key
/// stays unknown; a correct init then works; a second init -> InvalidArgument everywhere.
inline void init_mismatch_and_double_init_fail_on_every_rank(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank();
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", kv.num_workers());
  std::vector<float> value(6, 2.0f);
  const TensorView good{value.data(), DataType::kFloat32, {6}};
  const TensorView bad{value.data(), DataType::kFloat32, {2, 3}};
  auto init_error = [&](const TensorView& v) -> std::map<int, std::string> {
    try {
      kv.init(7, v);
    } catch (const Error& e) {
      return {{7, describe(e)}};
    }
    return {};
  };
  expect_error(init_error(rank == 1 ? bad : good), 7, "MismatchError", {"shape differs", "[2, 3]", "rank 1"}, label);
  EXPECT_THROW(kv.pull(7, good), InvalidArgument) << label << ": key 7 known after a failed init";
  EXPECT_TRUE(init_error(good).empty()) << label << ": init after a failed one";
  expect_error(init_error(good), 7, "InvalidArgument", {"already holds key 7"}, label);
  kv.init(0, good);
  kv.init(3, good);
  expect_store_works(kv, label);
  kv.barrier();
}

/// Needs P >= 2 (one failing rank, one waiting peer). Keys 0..5 (float32 [6]) are pushed as one batch, each gradient
/// computed by an engine op; on the last rank (and on rank 1 too when P >= 4) the op
/// computing key 4's gradient throws. Every rank gets an InvalidArgument for key 4 naming
/// the key, the failing rank(s) and the first one's error (funneled: thrown by push; concurrent/depchain: rethrown by pull, also through an
/// engine var) instead of a hang; the other keys of the batch reduce correctly. On the
/// failing rank the gradient's var keeps its own error (concurrent/depchain: engine
/// semantics; funneled consumed it waiting for the gradient). A second batch, with every
/// gradient fine, reduces every key correctly.
inline void failed_gradient_op_fails_on_every_rank(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank(), P = kv.num_workers();
  const bool culprit = rank == P - 1 || (P >= 4 && rank == 1);
  const int failing_key = 4;
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", P, " n=6");
  constexpr int kKeys = 6;
  std::vector<std::vector<float>> grads(kKeys, std::vector<float>(6, 0.0f)), outs(kKeys, std::vector<float>(6, -1.0f));
  std::vector<engine::Var*> grad_vars;
  for (int key = 0; key < kKeys; ++key) {
    kv.init(key, TensorView{grads[key].data(), DataType::kFloat32, {6}});
    grad_vars.push_back(engine.new_var());
  }
  engine::Var* out_var = engine.new_var();
  for (int round = 0; round < 2; ++round) {
    const std::string where = cat(label, " round ", round);
    for (int key = 0; key < kKeys; ++key) {
      float* grad = grads[key].data();
      const bool fail = round == 0 && culprit && key == failing_key;
      engine.push_sync(
          [grad, fail, rank, key, round] {
            if (fail) throw std::runtime_error("out of memory in layer 4");
            for (int i = 0; i < 6; ++i) grad[i] = static_cast<float>(rank + key + round + i);
          },
          {}, {grad_vars[key]}, {engine::FnKind::kCpu, 0, cat("gradient ", key)});
    }
    std::map<int, std::string> errors;
    for (int key = 0; key < kKeys; ++key) {
      try {
        kv.push(key, TensorView{grads[key].data(), DataType::kFloat32, {6}}, grad_vars[key]);
      } catch (const Error& e) {
        errors[key] = describe(e);
      }
    }
    for (int key = 0; key < kKeys; ++key) {
      if (errors.count(key)) continue;
      const TensorView out{outs[key].data(), DataType::kFloat32, {6}};
      try {
        if (key == failing_key) {  // through the engine: the error lands on out_var
          kv.pull(key, out, out_var);
          engine.wait_for_var(out_var);
        } else {
          kv.pull(key, out);
        }
      } catch (const Error& e) {
        errors[key] = describe(e);
      }
    }
    if (round == 0) {
      std::vector<std::string> parts = {cat("key ", failing_key), "out of memory in layer 4", "skipped on every rank"};
      parts.push_back(P >= 4 ? cat("rank 1 cannot take part") : cat("rank ", P - 1, " cannot take part"));
      if (P >= 4) parts.push_back(cat("2 ranks in all cannot take part or differ from rank 0: ranks 1, ", P - 1));
      expect_error(errors, failing_key, "InvalidArgument", parts, where);
      bool own_error = false;
      try {
        engine.wait_for_var(grad_vars[failing_key]);
      } catch (const std::runtime_error& e) {
        own_error = std::string(e.what()) == "out of memory in layer 4";
      }
      EXPECT_EQ(own_error, culprit && type != KVStoreType::kFunneled)
          << where << ": the failing rank's gradient var must keep its own error (engine designs)";
    }
    for (int key = 0; key < kKeys; ++key) {
      if (round == 0 && key == failing_key) continue;
      EXPECT_EQ(errors.count(key), 0u) << where << " key " << key << ": " << (errors.count(key) ? errors[key] : "");
      const TensorView out{outs[key].data(), DataType::kFloat32, {6}};
      EXPECT_EQ(first_difference(out,
                                 [&](int64_t i) {
                                   double sum = 0;
                                   for (int r = 0; r < P; ++r) sum += r + key + round + static_cast<double>(i);
                                   return sum;
                                 }),
                "")
          << where << " key " << key;
    }
  }
  kv.barrier();
}

/// Needs P >= 2, concurrent only: keys 1 and 2 use different communicators (C = 3), so
/// ranks may push them in different orders.
inline void concurrent_order_matters_only_per_communicator(Communicator& world) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(KVStoreType::kConcurrent));
  const int rank = kv.rank(), P = kv.num_workers();
  std::vector<int32_t> grad(50, rank), out(50, -1);
  const TensorView g{grad.data(), DataType::kInt32, {50}}, o{out.data(), DataType::kInt32, {50}};
  kv.init(1, g);
  kv.init(2, g);
  const auto errors = push_then_pull(kv, rank % 2 ? std::vector<int>{2, 1} : std::vector<int>{1, 2}, g, o);
  EXPECT_TRUE(errors.empty()) << "rank " << rank << ": " << (errors.empty() ? "" : errors.begin()->second);
  EXPECT_EQ(first_difference(o, [&](int64_t) { return P * (P - 1) / 2.0; }), "") << "rank " << rank << " key 2";
}

/// Pushes of initialised keys skip the coordinator. Checked by
/// KVStore::check_stats(), identical on every rank: init runs a full KeyCheck per key; every
/// matching push afterwards takes the digest's fast path (no round through rank 0); a push
/// whose shape changes on the last rank (a cached key) and, at P >= 2, keys pushed in
/// different orders still fail on every rank with the full check's message (key, ranks,
/// shapes), one full KeyCheck each; then the fast path resumes.
inline void cached_keys_skip_the_coordinator(Communicator& world, KVStoreType type) {
  engine::Engine engine(2, 1);
  KVStore kv(engine, world, options_for(type));
  const int rank = kv.rank(), P = kv.num_workers();
  const std::string label = cat("rank ", rank, " ", kvstore_type_name(type), " P=", P);
  std::vector<float> grad(6, 1.0f), out(6, 0.0f), wrong(7, 1.0f);
  const TensorView g{grad.data(), DataType::kFloat32, {6}}, o{out.data(), DataType::kFloat32, {6}};
  auto expect_stats = [&](uint64_t fast, uint64_t full, const char* when) {
    const KeyCheckStats stats = kv.check_stats();
    EXPECT_EQ(stats.fast, fast) << label << " " << when << ": pushes on the fast path";
    EXPECT_EQ(stats.full, full) << label << " " << when << ": full KeyChecks through rank 0";
  };
  kv.init(0, g);
  kv.init(3, g);  // concurrent (C = 3): keys 0 and 3 share a communicator
  expect_stats(0, 2, "after init");
  for (int round = 0; round < 3; ++round) {
    const auto errors = push_then_pull(kv, {0, 3}, g, o);
    EXPECT_TRUE(errors.empty()) << label << " round " << round << ": "
                                << (errors.empty() ? "" : errors.begin()->second);
  }
  expect_stats(6, 2, "after 3 rounds of 2 pushes");
  const bool culprit = rank == P - 1;
  const TensorView pushed = culprit ? TensorView{wrong.data(), DataType::kFloat32, {7}} : g;
  expect_error(push_then_pull(kv, {3}, pushed, o), 3, "InvalidArgument",
               {cat("rank ", P - 1), "key 3", "float32 [7]", "[6]"}, label);
  expect_stats(6, 3, "after the shape change");
  uint64_t full = 3;
  if (P >= 2) {
    const auto errors = push_then_pull(kv, rank == 0 ? std::vector<int>{0, 3} : std::vector<int>{3, 0}, g, o);
    for (int key : {0, 3})
      expect_error(errors, key, "MismatchError", {"key 0", "key 3", "rank 0", "rank 1", "key differs"}, label);
    full += 2;
    expect_stats(6, full, "after keys in different orders");
  }
  expect_store_works(kv, label);
  expect_stats(8, full, "after the store recovered");
}

}  // namespace concord::kvstore::scenarios
