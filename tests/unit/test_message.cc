// Wire format of the control-plane messages (src/control/message.h): encode/decode round
// trips of RequestList and ResponseList, the exact little-endian layout, and rejection of
// truncated, trailing or malformed bytes with InternalError.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "concord/errors.h"
#include "control/message.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::all_dtypes;
using testing_util::all_ops;

const std::vector<CollectiveType> kCollectives = {
    CollectiveType::kAllreduce, CollectiveType::kAllgather, CollectiveType::kBroadcast, CollectiveType::kReducescatter,
    CollectiveType::kAlltoall,  CollectiveType::kBarrier,   CollectiveType::kJoin,      CollectiveType::kProcessSet};
const std::vector<ResponseType> kResponseTypes = {
    ResponseType::kAllreduce, ResponseType::kAllgather,     ResponseType::kBroadcast,
    ResponseType::kError,     ResponseType::kReducescatter, ResponseType::kAlltoall,
    ResponseType::kBarrier,   ResponseType::kJoin,          ResponseType::kProcessSet};

Request sample_request() {
  Request r;
  r.rank = 3;
  r.name = "layer1.weight.grad";
  r.type = CollectiveType::kAllgather;
  r.dtype = DataType::kBFloat16;
  r.op = ReduceOp::kProduct;
  r.root = 2;
  r.prescale_factor = 0.125;
  r.postscale_factor = -3.5;
  r.shape = {7, 0, 5};
  r.device = "cuda:1";
  return r;
}

Response sample_response() {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {"a", "b.c", ""};
  r.error = "";
  r.dtype = DataType::kFloat16;
  r.op = ReduceOp::kMax;
  r.root = 1;
  r.prescale_factor = 2.0;
  r.postscale_factor = 1.0 / 3.0;
  r.sizes = {10, 0, 1};
  r.device = true;
  return r;
}

RequestList round_trip(const RequestList& list) { return decode_request_list(encode(list)); }
ResponseList round_trip(const ResponseList& list) { return decode_response_list(encode(list)); }

TEST(MessageRoundTrip, EmptyLists) {
  for (bool shutdown : {false, true}) {
    RequestList requests;
    requests.shutdown = shutdown;
    EXPECT_EQ(round_trip(requests), requests) << "shutdown=" << shutdown;
    ResponseList responses;
    responses.shutdown = shutdown;
    EXPECT_EQ(round_trip(responses), responses) << "shutdown=" << shutdown;
  }
}

TEST(MessageRoundTrip, RequestWithEveryEnumCombination) {
  RequestList list;
  int rank = 0;
  for (CollectiveType type : kCollectives)
    for (DataType dtype : all_dtypes())
      for (ReduceOp op : all_ops()) {
        Request r = sample_request();
        r.rank = rank++;
        r.name = std::string("t") + collective_name(type) + dtype_name(dtype) + reduce_op_name(op);
        r.type = type;
        r.dtype = dtype;
        r.op = op;
        list.requests.push_back(r);
      }
  ASSERT_EQ(list.requests.size(), kCollectives.size() * all_dtypes().size() * all_ops().size());
  const RequestList decoded = round_trip(list);
  ASSERT_EQ(decoded.requests.size(), list.requests.size());
  for (size_t i = 0; i < list.requests.size(); ++i)
    EXPECT_EQ(decoded.requests[i], list.requests[i]) << "request " << i << " " << list.requests[i].name;
}

TEST(MessageRoundTrip, ResponseWithEveryEnumCombination) {
  ResponseList list;
  list.shutdown = true;
  for (ResponseType type : kResponseTypes)
    for (DataType dtype : all_dtypes())
      for (ReduceOp op : all_ops()) {
        Response r = sample_response();
        r.type = type;
        r.dtype = dtype;
        r.op = op;
        if (type == ResponseType::kError) r.error = "Mismatched shape for tensor 'a': [3] on ranks [0]";
        list.responses.push_back(r);
      }
  ASSERT_EQ(list.responses.size(), kResponseTypes.size() * all_dtypes().size() * all_ops().size());
  EXPECT_EQ(round_trip(list), list);
}

TEST(MessageRoundTrip, UnicodeLongAndBinaryNames) {
  std::string with_nul("a\0b", 3);
  std::string long_name(100000, 'x');
  for (size_t i = 0; i < long_name.size(); i += 7) long_name[i] = static_cast<char>('a' + i % 26);
  const std::vector<std::string> names = {"",
                                          "\xce\xb8.grad",                              // θ.grad
                                          "\xe6\xa2\xaf\xe5\xba\xa6/\xf0\x9f\x94\xa5",  // 梯度/🔥
                                          with_nul,
                                          "\xff\xfe invalid utf-8",
                                          long_name};
  RequestList requests;
  ResponseList responses;
  for (const auto& name : names) {
    Request r = sample_request();
    r.name = name;
    requests.requests.push_back(r);
    Response s = sample_response();
    s.names = {name, name + "2"};
    s.error = "error about '" + name + "'";
    responses.responses.push_back(s);
  }
  const RequestList decoded_requests = round_trip(requests);
  ASSERT_EQ(decoded_requests.requests.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(decoded_requests.requests[i].name.size(), names[i].size()) << "name " << i;
    EXPECT_TRUE(decoded_requests.requests[i].name == names[i]) << "name " << i;
  }
  EXPECT_TRUE(round_trip(responses) == responses);
}

TEST(MessageRoundTrip, ShapesAndSizes) {
  const std::vector<std::vector<int64_t>> shapes = {
      {},
      {0},
      {1},
      {0, 0},
      {1, 2, 3, 4, 5, 6, 7, 8},
      {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -1}};
  RequestList requests;
  ResponseList responses;
  for (const auto& shape : shapes) {
    Request r = sample_request();
    r.shape = shape;
    requests.requests.push_back(r);
    Response s = sample_response();
    s.sizes = shape;
    s.names.clear();
    responses.responses.push_back(s);
  }
  EXPECT_EQ(round_trip(requests), requests);
  EXPECT_EQ(round_trip(responses), responses);
}

TEST(MessageRoundTrip, ScaleFactorsKeepEveryBit) {
  const double values[] = {0.0,
                           -0.0,
                           1.0 / 3.0,
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           -INFINITY,
                           std::numeric_limits<double>::quiet_NaN()};
  for (double value : values) {
    RequestList requests;
    Request r = sample_request();
    r.prescale_factor = value;
    r.postscale_factor = -value;
    requests.requests.push_back(r);
    const Request decoded = round_trip(requests).requests.at(0);
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded.prescale_factor), std::bit_cast<uint64_t>(value));
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded.postscale_factor), std::bit_cast<uint64_t>(-value));

    ResponseList responses;
    Response s = sample_response();
    s.prescale_factor = value;
    s.postscale_factor = -value;
    responses.responses.push_back(s);
    const Response decoded_response = round_trip(responses).responses.at(0);
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded_response.prescale_factor), std::bit_cast<uint64_t>(value));
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded_response.postscale_factor), std::bit_cast<uint64_t>(-value));
  }
}

// The layout is part of the protocol between ranks (possibly different builds), so it is
// pinned byte by byte: little-endian fixed-width fields, u64 length prefixes.
TEST(MessageWireFormat, RequestListLayout) {
  RequestList list;
  list.shutdown = true;
  Request r;
  r.rank = 1;
  r.name = "ab";
  r.type = CollectiveType::kAllgather;
  r.dtype = DataType::kInt8;
  r.op = ReduceOp::kMax;
  r.root = 2;
  r.prescale_factor = 0.5;   // 0x3FE0000000000000
  r.postscale_factor = 2.0;  // 0x4000000000000000
  r.shape = {3};
  r.group = "g";
  r.group_size = 2;
  r.device = "d:0";
  list.requests.push_back(r);
  const std::vector<uint8_t> expected = {1,                                       // shutdown
                                         1, 0, 0, 0, 0, 0, 0,    0,               // request count
                                         1, 0, 0, 0,                              // rank
                                         2, 0, 0, 0, 0, 0, 0,    0,    'a', 'b',  // name
                                         1, 6, 3,                                 // type, dtype, op
                                         2, 0, 0, 0,                              // root
                                         0, 0, 0, 0, 0, 0, 0xe0, 0x3f,            // prescale
                                         0, 0, 0, 0, 0, 0, 0,    0x40,            // postscale
                                         1, 0, 0, 0, 0, 0, 0,    0,               // shape length
                                         3, 0, 0, 0, 0, 0, 0,    0,               // shape[0]
                                         0, 0, 0, 0, 0, 0, 0,    0,          // splits length (alltoall, process sets)
                                         1, 0, 0, 0, 0, 0, 0,    0,    'g',  // group
                                         2, 0, 0, 0,                         // group size
                                         3, 0, 0, 0, 0, 0, 0,    0,    'd', ':', '0'};  // device ("" = host memory)
  EXPECT_EQ(encode(list), expected);
}

TEST(MessageWireFormat, ResponseListLayout) {
  ResponseList list;
  Response r;
  r.type = ResponseType::kError;
  r.names = {"x"};
  r.error = "e";
  r.dtype = DataType::kFloat64;
  r.op = ReduceOp::kAverage;
  r.root = -1;
  r.prescale_factor = 1.0;  // 0x3FF0000000000000
  r.postscale_factor = 1.0;
  r.sizes = {};
  list.responses.push_back(r);
  const std::vector<uint8_t> expected = {0,                                              // shutdown
                                         1,    0,    0,    0,    0, 0, 0,    0,          // response count
                                         3,                                              // type
                                         1,    0,    0,    0,    0, 0, 0,    0,          // names count
                                         1,    0,    0,    0,    0, 0, 0,    0,    'x',  // names[0]
                                         1,    0,    0,    0,    0, 0, 0,    0,    'e',  // error
                                         1,    1,                                        // dtype, op
                                         0xff, 0xff, 0xff, 0xff,                         // root
                                         0,    0,    0,    0,    0, 0, 0xf0, 0x3f,       // prescale
                                         0,    0,    0,    0,    0, 0, 0xf0, 0x3f,       // postscale
                                         0,    0,    0,    0,    0, 0, 0,    0,          // sizes length
                                         0,    0,    0,    0,    0, 0, 0,    0,          // row_elements length
                                         0,    0,    0,    0,    0, 0, 0,    0,          // rows length
                                         0,    0,    0,    0,    0, 0, 0,    0,          // joined length
                                         0,    0,    0,    0,    0, 0, 0,    0,          // group (empty)
                                         0,                                              // device (host memory)
                                         0,    0,    0,    0,    0, 0, 0,    0};         // list's joined ranks length
  EXPECT_EQ(encode(list), expected);
}

RequestList two_requests() {
  RequestList list;
  list.requests = {sample_request(), sample_request()};
  list.requests[1].name = "second";
  list.requests[1].shape = {};
  return list;
}

ResponseList two_responses() {
  ResponseList list;
  list.responses = {sample_response(), sample_response()};
  list.responses[1].type = ResponseType::kError;
  list.responses[1].error = "boom for tensor 'a'";
  return list;
}

// Every strict prefix of a valid message is rejected: no field may be read past the end.
TEST(MessageDecode, EveryTruncationThrowsInternalError) {
  const auto requests = encode(two_requests());
  for (size_t n = 0; n < requests.size(); ++n) {
    const std::vector<uint8_t> prefix(requests.begin(), requests.begin() + n);
    EXPECT_THROW(decode_request_list(prefix), InternalError)
        << "request list cut to " << n << " of " << requests.size() << " bytes";
  }
  const auto responses = encode(two_responses());
  for (size_t n = 0; n < responses.size(); ++n) {
    const std::vector<uint8_t> prefix(responses.begin(), responses.begin() + n);
    EXPECT_THROW(decode_response_list(prefix), InternalError)
        << "response list cut to " << n << " of " << responses.size() << " bytes";
  }
}

TEST(MessageDecode, TrailingBytesThrowInternalError) {
  for (size_t extra : {1, 7, 100}) {
    auto requests = encode(two_requests());
    requests.insert(requests.end(), extra, 0);
    EXPECT_THROW(decode_request_list(requests), InternalError) << extra << " trailing bytes";
    auto responses = encode(two_responses());
    responses.insert(responses.end(), extra, 0);
    EXPECT_THROW(decode_response_list(responses), InternalError) << extra << " trailing bytes";
  }
  auto empty = encode(RequestList{});
  empty.push_back(0);
  EXPECT_THROW(decode_request_list(empty), InternalError);
}

TEST(MessageDecode, OutOfRangeEnumsThrowInternalError) {
  RequestList list;
  list.requests = {sample_request()};
  const size_t type_offset = 1 + 8 + 4 + 8 + list.requests[0].name.size();
  const auto good = encode(list);
  ASSERT_EQ(good[type_offset], static_cast<uint8_t>(CollectiveType::kAllgather));
  const std::pair<size_t, uint8_t> corruptions[] = {
      {type_offset, 8}, {type_offset + 1, 10}, {type_offset + 2, 6}, {type_offset + 2, 255}};
  for (auto [offset, value] : corruptions) {
    auto bad = good;
    bad[offset] = value;
    EXPECT_THROW(decode_request_list(bad), InternalError) << "byte " << offset << " = " << int(value);
  }

  ResponseList responses;
  responses.responses = {sample_response()};
  auto bad = encode(responses);
  ASSERT_EQ(bad[9], static_cast<uint8_t>(ResponseType::kAllreduce));
  bad[9] = 9;
  EXPECT_THROW(decode_response_list(bad), InternalError) << "response type 9";
}

// A corrupted count must be rejected by the bounds check, not by allocating 2^63 entries.
TEST(MessageDecode, AbsurdLengthsThrowInternalErrorWithoutAllocating) {
  auto requests = encode(two_requests());
  for (size_t i = 1; i < 9; ++i) requests[i] = 0xff;  // request count
  EXPECT_THROW(decode_request_list(requests), InternalError);

  RequestList one;
  one.requests = {sample_request()};
  auto name_length = encode(one);
  for (size_t i = 13; i < 21; ++i) name_length[i] = 0x7f;  // name length
  EXPECT_THROW(decode_request_list(name_length), InternalError);

  auto responses = encode(two_responses());
  for (size_t i = 10; i < 18; ++i) responses[i] = 0xff;  // names count of response 0
  EXPECT_THROW(decode_response_list(responses), InternalError);
}

}  // namespace
}  // namespace concord
