// Error cases. Each is followed by a successful, checked collective (usually under the same
// name) to prove the runtime still works afterwards.
//  - Mismatches between ranks (shape, dtype, op, scale factors, root, collective, allgather
//    trailing shape): MismatchError on EVERY rank, whose message names the tensor, what
//    differed, both values and the ranks that submitted each value. Even ranks submit one
//    value, odd ranks the other.
//  - Misuse on one rank: a name submitted twice while in flight, empty names, a broadcast
//    root out of range, an allgather of a scalar, bad buffers or scale factors:
//    InvalidArgument from the submitting call itself.
#include <functional>

#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

std::string rank_list(int size, int parity) {
  std::string list;
  for (int r = parity; r < size; r += 2) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

/// Checks a MismatchError message: tensor name, the differing field, both values, and the
/// ranks holding each value (even ranks: `even_value`, odd ranks: `odd_value`).
void expect_mismatch_message(const std::string& message, const std::string& context, const std::string& name,
                             const std::string& field, const std::string& even_value, const std::string& odd_value) {
  const int size = concord::size();
  EXPECT_NE(message.find("'" + name + "'"), std::string::npos)
      << context << ": message does not name the tensor: " << message;
  EXPECT_NE(message.find(field), std::string::npos)
      << context << ": message does not say the " << field << " differs: " << message;
  EXPECT_NE(message.find(even_value), std::string::npos)
      << context << ": message lacks the even ranks' value " << even_value << ": " << message;
  EXPECT_NE(message.find(odd_value), std::string::npos)
      << context << ": message lacks the odd ranks' value " << odd_value << ": " << message;
  EXPECT_NE(message.find("rank"), std::string::npos) << context << ": message names no rank: " << message;
  EXPECT_NE(message.find(rank_list(size, 0)), std::string::npos)
      << context << ": message lacks ranks " << rank_list(size, 0) << ": " << message;
  EXPECT_NE(message.find(rank_list(size, 1)), std::string::npos)
      << context << ": message lacks ranks " << rank_list(size, 1) << ": " << message;
}

/// Submits (via `submit`, which sees whether this rank is even) a collective that differs
/// between even and odd ranks; expects MismatchError on this rank with a complete message,
/// then a successful allreduce under the same name.
void expect_mismatch(const std::string& name, const std::string& collective, const std::string& field,
                     const std::string& even_value, const std::string& odd_value,
                     const std::function<Handle(bool even)>& submit) {
  const bool even = concord::rank() % 2 == 0;
  const std::string context = "[rank " + std::to_string(concord::rank()) + "/" + std::to_string(concord::size()) +
                              "] " + collective + " of tensor '" + name + "' with a mismatched " + field + " (" +
                              (even ? even_value : odd_value) + " on this rank)";
  Handle handle;
  try {
    handle = submit(even);
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": the submit itself threw " << e.what();
  }
  if (handle.state()) {
    const std::string message = wait_error<MismatchError>(handle, context);
    if (!message.empty()) expect_mismatch_message(message, context, name, field, even_value, odd_value);
  }
  expect_allreduce_works(name);
}

class Mismatch : public testing::Test {
 protected:
  void SetUp() override {
    if (concord::size() < 2) GTEST_SKIP() << "a mismatch needs at least 2 ranks";
  }
  std::vector<float> a = std::vector<float>(8, 1.0f), b = std::vector<float>(8, 2.0f);
  std::vector<double> d = std::vector<double>(8, 1.0);
};

TEST_F(Mismatch, AllreduceShape) {
  expect_mismatch("mismatch.allreduce.shape", "allreduce", "shape", "[4]", "[5]", [&](bool even) {
    const std::vector<int64_t> shape = {even ? 4 : 5};
    return allreduce_async("mismatch.allreduce.shape", TensorView{a.data(), DataType::kFloat32, shape},
                           TensorView{b.data(), DataType::kFloat32, shape});
  });
  EXPECT_EQ(b, std::vector<float>(8, 2.0f)) << "[rank " << concord::rank() << "] a failed allreduce wrote its output";
}

TEST_F(Mismatch, AllreduceDtype) {
  expect_mismatch("mismatch.allreduce.dtype", "allreduce", "dtype", "float32", "float64", [&](bool even) {
    const TensorView view =
        even ? TensorView{a.data(), DataType::kFloat32, {3}} : TensorView{d.data(), DataType::kFloat64, {3}};
    return allreduce_async("mismatch.allreduce.dtype", view, view);
  });
}

TEST_F(Mismatch, AllreduceOp) {
  expect_mismatch("mismatch.allreduce.op", "allreduce", "op", "sum", "max", [&](bool even) {
    const TensorView view{a.data(), DataType::kFloat32, {3}};
    return allreduce_async("mismatch.allreduce.op", view, view,
                           AllreduceOptions{even ? ReduceOp::kSum : ReduceOp::kMax});
  });
}

TEST_F(Mismatch, AllreducePrescale) {
  expect_mismatch("mismatch.allreduce.prescale", "allreduce", "prescale", "0.5", "0.25", [&](bool even) {
    const TensorView view{a.data(), DataType::kFloat32, {3}};
    return allreduce_async("mismatch.allreduce.prescale", view, view,
                           AllreduceOptions{ReduceOp::kSum, even ? 0.5 : 0.25, 1.0});
  });
}

TEST_F(Mismatch, AllreducePostscale) {
  expect_mismatch("mismatch.allreduce.postscale", "allreduce", "postscale", "1.5", "2.75", [&](bool even) {
    const TensorView view{a.data(), DataType::kFloat32, {3}};
    return allreduce_async("mismatch.allreduce.postscale", view, view,
                           AllreduceOptions{ReduceOp::kSum, 1.0, even ? 1.5 : 2.75});
  });
}

TEST_F(Mismatch, BroadcastRoot) {
  expect_mismatch("mismatch.broadcast.root", "broadcast", "root", "0", "1", [&](bool even) {
    return broadcast_async("mismatch.broadcast.root", TensorView{a.data(), DataType::kFloat32, {8}},
                           BroadcastOptions{even ? 0 : 1});
  });
  EXPECT_EQ(a, std::vector<float>(8, 1.0f)) << "[rank " << concord::rank() << "] a failed broadcast wrote its tensor";
}

TEST_F(Mismatch, BroadcastShape) {
  expect_mismatch("mismatch.broadcast.shape", "broadcast", "shape", "[6]", "[2, 3]", [&](bool even) {
    return broadcast_async(
        "mismatch.broadcast.shape",
        TensorView{a.data(), DataType::kFloat32, even ? std::vector<int64_t>{6} : std::vector<int64_t>{2, 3}});
  });
}

TEST_F(Mismatch, AllgatherTrailingShape) {
  expect_mismatch("mismatch.allgather.shape", "allgather", "shape", "[3]", "[4]", [&](bool even) {
    return allgather_async("mismatch.allgather.shape", TensorView{a.data(), DataType::kFloat32, {2, even ? 3 : 4}});
  });
}

TEST_F(Mismatch, AllgatherDtype) {
  std::vector<int64_t> wide(4, 7);
  std::vector<int32_t> narrow(4, 7);
  expect_mismatch("mismatch.allgather.dtype", "allgather", "dtype", "int64", "int32", [&](bool even) {
    return allgather_async("mismatch.allgather.dtype", even ? TensorView{wide.data(), DataType::kInt64, {4}}
                                                            : TensorView{narrow.data(), DataType::kInt32, {4}});
  });
}

TEST_F(Mismatch, Collective) {
  expect_mismatch("mismatch.collective", "allreduce/allgather", "collective", "allreduce", "allgather", [&](bool even) {
    const TensorView view{a.data(), DataType::kFloat32, {4}};
    return even ? allreduce_async("mismatch.collective", view, view) : allgather_async("mismatch.collective", view);
  });
}

// A mismatched tensor in flight together with good ones: only it fails; the others (which
// would be fused with it) complete with the right values.
TEST_F(Mismatch, OnlyTheMismatchedTensorOfABatchFails) {
  const int rank = concord::rank(), size = concord::size();
  const bool even = rank % 2 == 0;
  std::vector<std::vector<float>> inputs(5), outputs(5);
  std::vector<Handle> handles(5);
  for (int t = 0; t < 5; ++t) {
    inputs[t].assign(10 + t, static_cast<float>(rank + t));
    outputs[t].assign(10 + t, -1.0f);
    std::vector<int64_t> shape = {static_cast<int64_t>(inputs[t].size())};
    if (t == 2) shape = {even ? 10 : 11};  // the bad one
    handles[t] =
        allreduce_async("mismatch.batch." + std::to_string(t), TensorView{inputs[t].data(), DataType::kFloat32, shape},
                        TensorView{outputs[t].data(), DataType::kFloat32, shape});
  }
  for (int t = 0; t < 5; ++t) {
    const std::string context = describe("allreduce(sum, ring) in a batch with a mismatched tensor",
                                         "mismatch.batch." + std::to_string(t), DataType::kFloat32, 10 + t);
    if (t == 2) {
      const std::string message = wait_error<MismatchError>(handles[t], context);
      if (!message.empty()) expect_mismatch_message(message, context, "mismatch.batch.2", "shape", "[10]", "[11]");
      continue;
    }
    if (!wait_ok(handles[t], context)) continue;
    const float expected = static_cast<float>(size * (size - 1) / 2 + size * t);
    for (size_t i = 0; i < outputs[t].size(); ++i) EXPECT_EQ(outputs[t][i], expected) << context << ": element " << i;
  }
  expect_allreduce_works("mismatch.batch.2");
}

// ---- misuse on one rank: InvalidArgument from the call itself -----------------------------

#define EXPECT_INVALID_ARGUMENT(call, context, needle)                                          \
  do {                                                                                          \
    try {                                                                                       \
      (void)(call);                                                                             \
      ADD_FAILURE() << (context) << ": " #call " did not throw InvalidArgument";                \
    } catch (const InvalidArgument& e) {                                                        \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)                          \
          << (context) << ": InvalidArgument message lacks '" << (needle) << "': " << e.what(); \
    } catch (const std::exception& e) {                                                         \
      ADD_FAILURE() << (context) << ": " #call " threw the wrong error: " << e.what();          \
    }                                                                                           \
  } while (0)

std::string here(const std::string& what) { return "[rank " + std::to_string(concord::rank()) + "] " + what; }

// A name submitted twice while in flight. Deterministic for size >= 2: in round g every rank
// but g submits the tensor and its duplicate before a "signal" allreduce that rank g waits
// for before it submits the tensor, so the tensor cannot have completed yet.
TEST(InvalidArgument, NameSubmittedTwiceWhileInFlight) {
  const int rank = concord::rank(), size = concord::size();
  for (int gate = 0; gate < size; ++gate) {
    const std::string name = "invalid.duplicate.gate" + std::to_string(gate);
    const std::string context =
        describe("allreduce(sum, ring) submitted twice while in flight (gate rank " + std::to_string(gate) + ")", name,
                 DataType::kInt32, 6);
    std::vector<int32_t> input(6), output(6, -1), input2(6, 5), output2(6, -7);
    for (int i = 0; i < 6; ++i) input[i] = rank * 10 + i;
    const TensorView in{input.data(), DataType::kInt32, {6}}, out{output.data(), DataType::kInt32, {6}};
    int32_t signal = 1, signal_out = 0;
    const TensorView sig_in{&signal, DataType::kInt32, {1}}, sig_out{&signal_out, DataType::kInt32, {1}};
    const std::string signal_name = "invalid.duplicate.signal" + std::to_string(gate);
    Handle first;
    if (rank != gate || size == 1) {
      first = allreduce_async(name, in, out);
      Handle second;
      bool threw = false;
      try {
        second = allreduce_async(name, TensorView{input2.data(), DataType::kInt32, {6}},
                                 TensorView{output2.data(), DataType::kInt32, {6}});
      } catch (const InvalidArgument& e) {
        threw = true;
        EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << context << ": " << e.what();
      } catch (const std::exception& e) {
        threw = true;
        ADD_FAILURE() << context << ": the duplicate threw the wrong error: " << e.what();
      }
      if (size > 1) {
        EXPECT_TRUE(threw) << context << ": the second submit of an in-flight name did not throw InvalidArgument";
      } else if (!threw) {
        // One rank: the first may legitimately have completed already; then the second is
        // a new, valid submission.
        EXPECT_TRUE(first.poll()) << context << ": a duplicate was accepted while the first was in flight";
        if (wait_ok(second, context + " (second)")) {
          EXPECT_EQ(output2, std::vector<int32_t>(6, 5)) << context << ": second result";
        }
      }
      EXPECT_EQ(output2, threw ? std::vector<int32_t>(6, -7) : std::vector<int32_t>(6, 5))
          << context << ": the rejected duplicate's output was written";
    }
    const Handle signal_handle = allreduce_async(signal_name, sig_in, sig_out);
    wait_ok(signal_handle, here("signal allreduce '" + signal_name + "'"));
    if (rank == gate && size > 1) first = allreduce_async(name, in, out);
    if (!wait_ok(first, context + " (first submission)")) continue;
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(output[i], 10 * (size * (size - 1) / 2) + size * i) << context << ": element " << i;
  }
  expect_allreduce_works("invalid.duplicate.gate0");
}

TEST(InvalidArgument, EmptyName) {
  float x[4] = {1, 2, 3, 4};
  const TensorView view{x, DataType::kFloat32, {4}};
  EXPECT_INVALID_ARGUMENT(allreduce_async("", view, view), here("allreduce with an empty name"), "name");
  EXPECT_INVALID_ARGUMENT(allgather_async("", view), here("allgather with an empty name"), "name");
  EXPECT_INVALID_ARGUMENT(broadcast_async("", view), here("broadcast with an empty name"), "name");
  expect_allreduce_works("invalid.after_empty_name");
}

TEST(InvalidArgument, BroadcastRootOutOfRange) {
  const int size = concord::size();
  float x[4] = {1, 2, 3, 4};
  const TensorView view{x, DataType::kFloat32, {4}};
  EXPECT_INVALID_ARGUMENT(broadcast_async("invalid.root", view, BroadcastOptions{size}),
                          here("broadcast with root == size"), std::to_string(size));
  EXPECT_INVALID_ARGUMENT(broadcast_async("invalid.root", view, BroadcastOptions{-1}), here("broadcast with root -1"),
                          "-1");
  // The rejected name is not left in flight: a valid broadcast under it works.
  const int root = size - 1;
  for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(concord::rank() == root ? 10 + i : -1);
  const Handle handle = broadcast_async("invalid.root", view, BroadcastOptions{root});
  if (wait_ok(handle, here("broadcast 'invalid.root' after the rejected ones"))) {
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(x[i], 10.0f + i) << here("broadcast 'invalid.root', element " + std::to_string(i));
  }
}

TEST(InvalidArgument, AllgatherOfAScalar) {
  float x = 3;
  EXPECT_INVALID_ARGUMENT(allgather_async("invalid.scalar", TensorView{&x, DataType::kFloat32, {}}),
                          here("allgather of a scalar"), "scalar");
  // The same scalar as a 1-element tensor is fine.
  const Handle handle = allgather_async("invalid.scalar", TensorView{&x, DataType::kFloat32, {1}});
  if (wait_ok(handle, here("allgather 'invalid.scalar' of shape [1]"))) {
    EXPECT_EQ(handle.output_shape(), std::vector<int64_t>{concord::size()}) << here("allgather 'invalid.scalar'");
  }
}

TEST(InvalidArgument, AllreduceBuffers) {
  std::vector<float> f(6, 1.0f), g(6, 0.0f);
  std::vector<double> d(6, 0.0);
  const TensorView in{f.data(), DataType::kFloat32, {6}};
  EXPECT_INVALID_ARGUMENT(allreduce_async("invalid.buffers", in, TensorView{d.data(), DataType::kFloat64, {6}}),
                          here("allreduce with an output of another dtype"), "invalid.buffers");
  EXPECT_INVALID_ARGUMENT(allreduce_async("invalid.buffers", in, TensorView{g.data(), DataType::kFloat32, {2, 3}}),
                          here("allreduce with an output of another shape"), "invalid.buffers");
  EXPECT_INVALID_ARGUMENT(allreduce_async("invalid.buffers", TensorView{nullptr, DataType::kFloat32, {6}}, in),
                          here("allreduce of a null input"), "invalid.buffers");
  EXPECT_INVALID_ARGUMENT(allreduce_async("invalid.buffers", TensorView{f.data(), DataType::kFloat32, {-6}},
                                          TensorView{g.data(), DataType::kFloat32, {-6}}),
                          here("allreduce with a negative dimension"), "invalid.buffers");
  EXPECT_INVALID_ARGUMENT(
      allreduce_async("invalid.buffers", in, in, AllreduceOptions{ReduceOp::kSum, std::nan(""), 1.0}),
      here("allreduce with a NaN prescale"), "invalid.buffers");
  EXPECT_INVALID_ARGUMENT(allreduce_async("invalid.buffers", in, in, AllreduceOptions{ReduceOp::kSum, 1.0, INFINITY}),
                          here("allreduce with an infinite postscale"), "invalid.buffers");
  expect_allreduce_works("invalid.buffers");
}

TEST(InvalidArgument, DefaultConstructedHandle) {
  const Handle handle;
  EXPECT_THROW(handle.poll(), InvalidArgument) << here("poll() of a default Handle");
  EXPECT_THROW(handle.wait(), InvalidArgument) << here("wait() of a default Handle");
  expect_allreduce_works("invalid.after_default_handle");
}

}  // namespace
}  // namespace concord::mpitest
