#include "control/message.h"

#include <cstring>
#include <type_traits>

#include "common/enforce.h"

namespace concord {
namespace {

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put(const std::string& text) {
    put<uint64_t>(text.size());
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  template <typename T>
  void put(const std::vector<T>& values) {
    put<uint64_t>(values.size());
    for (const auto& value : values) put(value);
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    need(n);
    std::string text(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return text;
  }
  template <typename T, typename Fn>
  std::vector<T> get_vector(Fn get_one) {
    const auto n = get<uint64_t>();
    need(n);  // every element takes at least one byte: rejects absurd counts early
    std::vector<T> values;
    values.reserve(n);
    for (uint64_t i = 0; i < n; ++i) values.push_back(get_one());
    return values;
  }
  void finish() const {
    CONCORD_ENFORCE(offset_ == bytes_.size(), InternalError, "control message has ", bytes_.size() - offset_,
                    " trailing bytes");
  }

 private:
  void need(uint64_t n) const {
    CONCORD_ENFORCE(n <= bytes_.size() - offset_, InternalError, "truncated control message: need ", n,
                    " bytes at offset ", offset_, " of ", bytes_.size());
  }
  const std::vector<uint8_t>& bytes_;
  size_t offset_ = 0;
};

template <typename Enum>
Enum get_enum(Reader& in, uint8_t limit) {
  const auto raw = in.get<uint8_t>();
  CONCORD_ENFORCE(raw <= limit, InternalError, "bad enum value ", int(raw), " in control message");
  return static_cast<Enum>(raw);
}

void put_request(Writer& out, const Request& r) {
  out.put<int32_t>(r.rank);
  out.put(r.name);
  out.put<uint8_t>(static_cast<uint8_t>(r.type));
  out.put<uint8_t>(static_cast<uint8_t>(r.dtype));
  out.put<uint8_t>(static_cast<uint8_t>(r.op));
  out.put<int32_t>(r.root);
  out.put<double>(r.prescale_factor);
  out.put<double>(r.postscale_factor);
  out.put(r.shape);
  out.put(r.splits);
  out.put(r.group);
  out.put<int32_t>(r.group_size);
  out.put(r.device);
}

Request get_request(Reader& in) {
  Request r;
  r.rank = in.get<int32_t>();
  r.name = in.get_string();
  r.type = get_enum<CollectiveType>(in, static_cast<uint8_t>(CollectiveType::kProcessSet));
  r.dtype = get_enum<DataType>(in, static_cast<uint8_t>(DataType::kBool));
  r.op = get_enum<ReduceOp>(in, static_cast<uint8_t>(ReduceOp::kAdasum));
  r.root = in.get<int32_t>();
  r.prescale_factor = in.get<double>();
  r.postscale_factor = in.get<double>();
  r.shape = in.get_vector<int64_t>([&] { return in.get<int64_t>(); });
  r.splits = in.get_vector<int64_t>([&] { return in.get<int64_t>(); });
  r.group = in.get_string();
  r.group_size = in.get<int32_t>();
  r.device = in.get_string();
  return r;
}

void put_response(Writer& out, const Response& r) {
  out.put<uint8_t>(static_cast<uint8_t>(r.type));
  out.put<uint64_t>(r.names.size());
  for (const auto& name : r.names) out.put(name);
  out.put(r.error);
  out.put<uint8_t>(static_cast<uint8_t>(r.dtype));
  out.put<uint8_t>(static_cast<uint8_t>(r.op));
  out.put<int32_t>(r.root);
  out.put<double>(r.prescale_factor);
  out.put<double>(r.postscale_factor);
  out.put(r.sizes);
  out.put(r.row_elements);
  out.put(r.rows);
  out.put(r.joined);
  out.put(r.group);
  out.put<uint8_t>(r.device);
}

Response get_response(Reader& in) {
  Response r;
  r.type = get_enum<ResponseType>(in, static_cast<uint8_t>(ResponseType::kProcessSet));
  r.names = in.get_vector<std::string>([&] { return in.get_string(); });
  r.error = in.get_string();
  r.dtype = get_enum<DataType>(in, static_cast<uint8_t>(DataType::kBool));
  r.op = get_enum<ReduceOp>(in, static_cast<uint8_t>(ReduceOp::kAdasum));
  r.root = in.get<int32_t>();
  r.prescale_factor = in.get<double>();
  r.postscale_factor = in.get<double>();
  r.sizes = in.get_vector<int64_t>([&] { return in.get<int64_t>(); });
  r.row_elements = in.get_vector<int64_t>([&] { return in.get<int64_t>(); });
  r.rows = in.get_vector<int64_t>([&] { return in.get<int64_t>(); });
  r.joined = in.get_vector<int32_t>([&] { return in.get<int32_t>(); });
  r.group = in.get_string();
  r.device = in.get<uint8_t>() != 0;
  return r;
}

}  // namespace

bool Request::same_parameters(const Request& other) const {
  return name == other.name && type == other.type && dtype == other.dtype && op == other.op && root == other.root &&
         prescale_factor == other.prescale_factor && postscale_factor == other.postscale_factor &&
         shape == other.shape && splits == other.splits && group == other.group && group_size == other.group_size &&
         device == other.device;
}

bool formed_by_members(const Response& response) {
  return (response.type == ResponseType::kProcessSet || response.type == ResponseType::kError) &&
         response.root == kFormedByMembers;
}

ResponseType response_type(CollectiveType type) {
  switch (type) {
    case CollectiveType::kAllreduce: return ResponseType::kAllreduce;
    case CollectiveType::kAllgather: return ResponseType::kAllgather;
    case CollectiveType::kBroadcast: return ResponseType::kBroadcast;
    case CollectiveType::kReducescatter: return ResponseType::kReducescatter;
    case CollectiveType::kAlltoall: return ResponseType::kAlltoall;
    case CollectiveType::kBarrier: return ResponseType::kBarrier;
    case CollectiveType::kJoin: return ResponseType::kJoin;
    case CollectiveType::kProcessSet: return ResponseType::kProcessSet;
  }
  CONCORD_THROW(InternalError, "unknown collective code ", static_cast<int>(type));
}

std::vector<uint8_t> encode(const RequestList& list) {
  Writer out;
  out.put<uint8_t>(list.shutdown);
  out.put<uint64_t>(list.requests.size());
  for (const auto& request : list.requests) put_request(out, request);
  return out.take();
}

std::vector<uint8_t> encode(const ResponseList& list) {
  Writer out;
  out.put<uint8_t>(list.shutdown);
  out.put<uint64_t>(list.responses.size());
  for (const auto& response : list.responses) put_response(out, response);
  out.put(list.joined);
  return out.take();
}

RequestList decode_request_list(const std::vector<uint8_t>& bytes) {
  Reader in(bytes);
  RequestList list;
  list.shutdown = in.get<uint8_t>() != 0;
  list.requests = in.get_vector<Request>([&] { return get_request(in); });
  in.finish();
  return list;
}

ResponseList decode_response_list(const std::vector<uint8_t>& bytes) {
  Reader in(bytes);
  ResponseList list;
  list.shutdown = in.get<uint8_t>() != 0;
  list.responses = in.get_vector<Response>([&] { return get_response(in); });
  list.joined = in.get_vector<int32_t>([&] { return in.get<int32_t>(); });
  in.finish();
  return list;
}

}  // namespace concord
