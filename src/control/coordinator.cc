#include "control/coordinator.h"

#include <map>
#include <sstream>

#include "common/enforce.h"

namespace concord {
namespace {

// If `key(request)` is not the same on every rank, returns "Mismatched <what> for tensor
// 'name': <v1> on ranks [..], <v2> on ranks [..]"; otherwise "".
template <typename Key>
std::string find_mismatch(const std::vector<Request>& requests, const char* what, Key key) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  std::vector<std::string> order;
  for (const auto& request : requests) {
    const std::string value = key(request);
    if (!ranks_by_value.contains(value)) order.push_back(value);
    ranks_by_value[value].push_back(request.rank);
  }
  if (order.size() <= 1) return "";
  std::ostringstream out;
  out << "Mismatched " << what << " for tensor '" << requests[0].name << "': ";
  for (size_t i = 0; i < order.size(); ++i) {
    out << (i ? ", " : "") << order[i] << " on ranks [";
    const auto& ranks = ranks_by_value[order[i]];
    for (size_t j = 0; j < ranks.size(); ++j) out << (j ? ", " : "") << ranks[j];
    out << ']';
  }
  return out.str();
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

Response error_response(const std::string& name, const std::string& message) {
  Response response;
  response.type = ResponseType::kError;
  response.names = {name};
  response.error = message;
  return response;
}

}  // namespace

Response build_response(const std::vector<Request>& requests) {
  CONCORD_ENFORCE(!requests.empty(), InternalError, "build_response without requests");
  const Request& first = requests[0];
  const bool allgather = first.type == CollectiveType::kAllgather;
  std::string error = find_mismatch(requests, "collective", [](const Request& r) {
    return std::string(collective_name(r.type));
  });
  if (error.empty())
    error = find_mismatch(requests, "dtype", [](const Request& r) {
      return std::string(dtype_name(r.dtype));
    });
  if (error.empty() && allgather) {
    error = find_mismatch(requests, "shape (all but dim 0)", [](const Request& r) {
      if (r.shape.empty()) return std::string("a scalar");
      return shape_string(std::vector<int64_t>(r.shape.begin() + 1, r.shape.end()));
    });
  } else if (error.empty()) {
    error = find_mismatch(requests, "shape", [](const Request& r) { return shape_string(r.shape); });
  }
  if (error.empty() && first.type == CollectiveType::kAllreduce) {
    error = find_mismatch(requests, "reduce op", [](const Request& r) {
      return std::string(reduce_op_name(r.op));
    });
    if (error.empty())
      error = find_mismatch(requests, "prescale factor",
                            [](const Request& r) { return number(r.prescale_factor); });
    if (error.empty())
      error = find_mismatch(requests, "postscale factor",
                            [](const Request& r) { return number(r.postscale_factor); });
  }
  if (error.empty() && first.type == CollectiveType::kBroadcast)
    error = find_mismatch(requests, "root rank", [](const Request& r) { return std::to_string(r.root); });
  if (error.empty())
    error = find_mismatch(requests, "group", [](const Request& r) {
      return r.group_size > 1 ? "group '" + r.group + "' of " + std::to_string(r.group_size) : std::string("no group");
    });
  if (!error.empty()) return error_response(first.name, error);

  Response response;
  response.type = static_cast<ResponseType>(first.type);
  response.names = {first.name};
  response.dtype = first.dtype;
  response.op = first.op;
  response.root = first.root;
  response.prescale_factor = first.prescale_factor;
  response.postscale_factor = first.postscale_factor;
  if (first.group_size > 1) response.group = first.group;
  if (allgather) {
    for (const auto& request : requests) response.sizes.push_back(request.shape.at(0));
  } else {
    int64_t elements = 1;
    for (int64_t d : first.shape) elements *= d;
    response.sizes = {elements};
  }
  return response;
}

Coordinator::Coordinator(int size) : size_(size) {}

void Coordinator::add(const Request& request) {
  CONCORD_ENFORCE(request.rank >= 0 && request.rank < size_, InternalError, "request from rank ",
                  request.rank, " outside [0, ", size_, ")");
  auto [it, inserted] = table_.try_emplace(request.name);
  Entry& entry = it->second;
  if (inserted) {
    entry.by_rank.resize(size_);
    entry.first_seen = std::chrono::steady_clock::now();
  }
  if (entry.by_rank[request.rank]) {
    entry.duplicate = detail::concat("Tensor '", request.name, "' was submitted twice by rank ",
                                     request.rank, " before every rank had submitted it");
    return;
  }
  entry.by_rank[request.rank] = request;
  if (++entry.count < size_) return;
  // Ready on every rank. A group member waits for the rest of its group, unless the ranks
  // disagree on the grouping (then it is released at once and answered with an error).
  bool same_group = true;
  for (const auto& other : entry.by_rank)
    same_group &= other->group == request.group && other->group_size == request.group_size;
  if (request.group_size <= 1 || !same_group || !entry.duplicate.empty()) {
    ready_.push_back(request.name);
    return;
  }
  auto& members = groups_[request.group];
  members.push_back(request.name);
  if (static_cast<int32_t>(members.size()) < request.group_size) return;
  ready_.insert(ready_.end(), members.begin(), members.end());
  groups_.erase(request.group);
}

size_t Coordinator::held_for_group() const {
  size_t held = 0;
  for (const auto& [group, members] : groups_) held += members.size();
  return held;
}

std::vector<Response> Coordinator::take_ready() {
  std::vector<Response> responses;
  for (const auto& name : ready_) {
    auto node = table_.extract(name);
    Entry& entry = node.mapped();
    if (!entry.duplicate.empty()) {
      responses.push_back(error_response(name, entry.duplicate));
      continue;
    }
    std::vector<Request> requests;
    for (auto& request : entry.by_rank) requests.push_back(std::move(*request));
    responses.push_back(build_response(requests));
  }
  ready_.clear();
  return responses;
}

}  // namespace concord
