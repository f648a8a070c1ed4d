// Every reducible dtype (all but kBool) and reduce op of the runtime, shared by the unit and MPI suites so that both
// sweep the same combinations.
#pragma once

#include <vector>

#include "concord/types.h"

namespace concord::testlists {

inline const std::vector<DataType>& all_dtypes() {
  static const std::vector<DataType> dtypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                               DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                                               DataType::kInt16,    DataType::kInt8,    DataType::kUInt8};
  return dtypes;
}

inline const std::vector<ReduceOp>& all_ops() {
  static const std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                                            ReduceOp::kProduct};
  return ops;
}

}  // namespace concord::testlists
