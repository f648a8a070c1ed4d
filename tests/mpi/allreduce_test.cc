// Allreduce: every dtype x every op x sizes {scalar, 0, 1, 7, 1023, > 1 MiB odd}, in place
// and out of place, without and with scale factors (prescale 0.5, postscale 3), submitted
// all at once (fused into one buffer) and one at a time (reduced in the output tensor);
// the > 1 MiB size in two of those four rounds (see kRounds). Each rank computes the
// expected result from the deterministic inputs of every rank and checks every element.
#include <map>
#include <memory>

#include "reference.h"

namespace concord::mpitest {
namespace {

enum class Submission { kAllAtOnce, kOneAtATime };

struct Case {
  std::string name;
  std::string context;
  bool in_place = false;
  Tensor input;     // out of place: the input; in place: input and output
  Tensor original;  // this rank's input as built, to prove an out-of-place input is untouched
  Tensor output;    // out of place only
  std::shared_ptr<const Reference> expected;
  Handle handle;
};

class AllreduceTest : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

// The four rounds of every (dtype, op). Small sizes go through every round in place and
// out of place; the > 1 MiB tensor (the costly one on 2 shared cores) goes through two:
// fused out of place without scale factors, and alone in place with them.
struct Round {
  Scale scale;
  Submission submission;
  bool large_in_place;
  bool large_out_of_place;
};
constexpr Round kRounds[] = {
    {Scale{}, Submission::kAllAtOnce, false, true},
    {Scale{}, Submission::kOneAtATime, false, false},
    {Scale{0.5, 3.0}, Submission::kAllAtOnce, false, false},
    {Scale{0.5, 3.0}, Submission::kOneAtATime, true, false},
};

TEST_P(AllreduceTest, MatchesReferenceForEverySizeInPlaceAndOutOfPlace) {
  const auto [dtype, op] = GetParam();
  const int rank = concord::rank(), size = concord::size();
  std::vector<std::vector<int64_t>> shapes = {{}};  // the scalar, then 1-D of every size
  for (int64_t n : test_counts(dtype)) shapes.push_back({n});
  const size_t large = shapes.size() - 1;

  // One reference per (scale, shape), shared by the rounds and in-place/out-of-place cases.
  std::map<std::pair<double, size_t>, std::shared_ptr<const Reference>> references;
  auto seed_of = [&](size_t s) {
    return static_cast<uint64_t>(s) * 131 + static_cast<uint64_t>(op) * 17 + static_cast<uint64_t>(dtype) * 3;
  };
  auto reference = [&](const Scale& scale, size_t s) {
    auto& slot = references[{scale.pre, s}];
    if (!slot)
      slot = std::make_shared<const Reference>(
          allreduce_reference(dtype, op, scale, element_count(shapes[s]), seed_of(s), size));
    return slot;
  };

  for (const Round& round : kRounds) {
    const Scale scale = round.scale;
    const bool all_at_once = round.submission == Submission::kAllAtOnce;
    std::vector<Case> cases;
    for (size_t s = 0; s < shapes.size(); ++s) {
      for (const bool in_place : {false, true}) {
        if (s == large && !(in_place ? round.large_in_place : round.large_out_of_place)) continue;
        Case c;
        c.in_place = in_place;
        c.input = Tensor(dtype, shapes[s]);
        const int64_t count = c.input.count();
        fill_allreduce_input(c.input, op, scale.any(), rank, seed_of(s));
        if (!in_place) {
          c.original = c.input;
          c.output = Tensor(dtype, shapes[s]);
          std::fill(c.output.bytes.begin(), c.output.bytes.end(), uint8_t{0xA5});  // sentinel
        }
        c.expected = reference(scale, s);
        std::ostringstream name, what;
        name << "allreduce." << dtype_name(dtype) << "." << reduce_op_name(op) << ".pre" << scale.pre << ".post"
             << scale.post << (all_at_once ? ".fused" : ".single") << ".shape" << shape_string(shapes[s])
             << (in_place ? ".in_place" : ".out_of_place");
        what << "allreduce(" << reduce_op_name(op) << ", ring, " << (in_place ? "in place" : "out of place")
             << ", prescale " << scale.pre << ", postscale " << scale.post << ", "
             << (all_at_once ? "all submitted at once" : "one at a time") << ", shape " << shape_string(shapes[s])
             << ")";
        c.name = name.str();
        c.context = describe(what.str(), c.name, dtype, count);
        cases.push_back(std::move(c));
      }
    }
    auto submit = [&](Case& c) {
      const TensorView in = c.input.view();
      const TensorView out = c.in_place ? in : c.output.view();
      c.handle = allreduce_async(c.name, in, out, AllreduceOptions{op, scale.pre, scale.post});
    };
    std::vector<bool> ok(cases.size());
    if (all_at_once) {
      for (auto& c : cases) submit(c);
      for (size_t k = 0; k < cases.size(); ++k) ok[k] = wait_ok(cases[k].handle, cases[k].context);
    } else {
      for (size_t k = 0; k < cases.size(); ++k) {
        submit(cases[k]);
        ok[k] = wait_ok(cases[k].handle, cases[k].context);
      }
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      if (!ok[k]) continue;
      const Case& c = cases[k];
      const void* result = c.in_place ? c.input.data() : c.output.data();
      expect_elements(c.context, dtype, result, c.expected->value, c.expected->tolerance);
      if (!c.in_place) {
        EXPECT_TRUE(c.input.bytes == c.original.bytes) << c.context << ": the input tensor was modified";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtypeEveryOp, AllreduceTest,
                         testing::Combine(testing::ValuesIn(all_dtypes()), testing::ValuesIn(all_ops())),
                         [](const testing::TestParamInfo<std::tuple<DataType, ReduceOp>>& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  reduce_op_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace concord::mpitest
