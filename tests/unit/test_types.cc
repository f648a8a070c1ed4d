// Public value types (include/concord/types.h): dtype sizes and names, op and collective
// names, TensorView sizes and shape formatting.
#include <gtest/gtest.h>

#include "concord/errors.h"
#include "concord/types.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::all_dtypes;

TEST(DataTypes, SizesMatchTheElementTypes) {
  EXPECT_EQ(dtype_size(DataType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DataType::kFloat64), 8u);
  EXPECT_EQ(dtype_size(DataType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DataType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DataType::kInt32), 4u);
  EXPECT_EQ(dtype_size(DataType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DataType::kInt8), 1u);
  EXPECT_EQ(dtype_size(DataType::kUInt8), 1u);
}

TEST(DataTypes, NamesRoundTripThroughDtypeFromName) {
  for (DataType dtype : all_dtypes()) {
    const std::string name = dtype_name(dtype);
    EXPECT_EQ(dtype_from_name(name), dtype) << name;
  }
  EXPECT_STREQ(dtype_name(DataType::kBFloat16), "bfloat16");
  EXPECT_STREQ(dtype_name(DataType::kUInt8), "uint8");
}

TEST(DataTypes, UnknownNameOrCodeIsInvalidArgumentNamingIt) {
  try {
    dtype_from_name("complex64");
    FAIL() << "dtype_from_name accepted complex64";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'complex64'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dtype_size(static_cast<DataType>(10)), InvalidArgument);
  EXPECT_THROW(dtype_name(static_cast<DataType>(200)), InvalidArgument);
  EXPECT_THROW(reduce_op_name(static_cast<ReduceOp>(6)), InvalidArgument);
  EXPECT_THROW(collective_name(static_cast<CollectiveType>(8)), InvalidArgument);
}

TEST(DataTypes, OpAndCollectiveNames) {
  EXPECT_STREQ(reduce_op_name(ReduceOp::kSum), "sum");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kAverage), "average");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kMin), "min");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kMax), "max");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kProduct), "product");
  EXPECT_STREQ(collective_name(CollectiveType::kAllreduce), "allreduce");
  EXPECT_STREQ(collective_name(CollectiveType::kAllgather), "allgather");
  EXPECT_STREQ(collective_name(CollectiveType::kBroadcast), "broadcast");
}

TEST(TensorView, ElementAndByteCounts) {
  TensorView scalar{nullptr, DataType::kFloat64, {}};
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(scalar.num_bytes(), 8u);
  TensorView matrix{nullptr, DataType::kFloat16, {3, 5, 7}};
  EXPECT_EQ(matrix.num_elements(), 105);
  EXPECT_EQ(matrix.num_bytes(), 210u);
  TensorView empty{nullptr, DataType::kInt64, {4, 0, 2}};
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_EQ(empty.num_bytes(), 0u);
}

TEST(TensorView, ShapeString) {
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_EQ(shape_string({3}), "[3]");
  EXPECT_EQ(shape_string({2, 0, 17}), "[2, 0, 17]");
}

}  // namespace
}  // namespace concord
