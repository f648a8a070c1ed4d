#include "control/coordinator.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/enforce.h"

namespace concord {
namespace {

// If `key(request)` is not the same on every rank, returns "Mismatched <what> for tensor
// 'name': <v1> on ranks [..], <v2> on ranks [..]<scope>" (ranks named by `names`);
// otherwise "".
template <typename Key>
std::string find_mismatch(const std::vector<Request>& requests, const RankNames& names, const char* what, Key key) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  std::vector<std::string> order;
  for (const auto& request : requests) {
    const std::string value = key(request);
    if (!ranks_by_value.contains(value)) order.push_back(value);
    ranks_by_value[value].push_back(names(request.rank));
  }
  if (order.size() <= 1) return "";
  std::ostringstream out;
  out << "Mismatched " << what << " for tensor '" << requests[0].name << "': ";
  for (size_t i = 0; i < order.size(); ++i)
    out << (i ? ", " : "") << order[i] << " on ranks " << detail::rank_list(ranks_by_value[order[i]]);
  out << names.scope;
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

Response build_response(const std::vector<Request>& requests, int size, const std::vector<int32_t>& joined,
                        const RankNames& names) {
  CONCORD_ENFORCE(!requests.empty(), InternalError, "build_response without requests");
  if (size == 0) size = static_cast<int>(requests.size());
  const Request& first = requests[0];
  const bool by_rows = first.type == CollectiveType::kAllgather || first.type == CollectiveType::kAlltoall;
  const bool reduces = first.type == CollectiveType::kAllreduce || first.type == CollectiveType::kReducescatter;
  std::string error = find_mismatch(requests, names, "collective",
                                    [](const Request& r) { return std::string(collective_name(r.type)); });
  if (error.empty())
    error = find_mismatch(requests, names, "dtype", [](const Request& r) { return std::string(dtype_name(r.dtype)); });
  // Host memory on some ranks and device memory on others (device names alone may differ:
  // cuda:0 on one rank and cuda:1 on another is one GPU per rank).
  const auto on_device = [](const Request& r) { return !r.device.empty(); };
  const bool some_on_device = std::any_of(requests.begin(), requests.end(), on_device);
  if (error.empty() && some_on_device && !std::all_of(requests.begin(), requests.end(), on_device))
    error = find_mismatch(requests, names, "device",
                          [](const Request& r) { return r.device.empty() ? std::string("cpu") : r.device; });
  if (error.empty() && by_rows) {
    error = find_mismatch(requests, names, "shape (all but dim 0)", [](const Request& r) {
      if (r.shape.empty()) return std::string("a scalar");
      return shape_string(std::vector<int64_t>(r.shape.begin() + 1, r.shape.end()));
    });
  } else if (error.empty()) {
    error = find_mismatch(requests, names, "shape", [](const Request& r) { return shape_string(r.shape); });
  }
  if (error.empty() && reduces) {
    error =
        find_mismatch(requests, names, "reduce op", [](const Request& r) { return std::string(reduce_op_name(r.op)); });
    if (error.empty())
      error =
          find_mismatch(requests, names, "prescale factor", [](const Request& r) { return number(r.prescale_factor); });
    if (error.empty())
      error = find_mismatch(requests, names, "postscale factor",
                            [](const Request& r) { return number(r.postscale_factor); });
  }
  if (error.empty() && first.type == CollectiveType::kBroadcast)
    error =
        find_mismatch(requests, names, "root rank", [&](const Request& r) { return std::to_string(names(r.root)); });
  if (error.empty() && first.type == CollectiveType::kProcessSet)
    error = find_mismatch(requests, names, "process set ranks", [](const Request& r) {
      return r.splits.empty() ? "remove " + std::to_string(r.root) : "add " + shape_string(r.splits);
    });
  if (error.empty())
    error = find_mismatch(requests, names, "group", [](const Request& r) {
      return r.group_size > 1 ? "group '" + r.group + "' of " + std::to_string(r.group_size) : std::string("no group");
    });
  if (!error.empty()) {
    Response failed = error_response(first.name, error);
    if (first.type == CollectiveType::kProcessSet) failed.root = first.root;  // a formed set's reaches non-members
    return failed;
  }

  Response response;
  response.type = response_type(first.type);
  response.names = {first.name};
  response.dtype = first.dtype;
  response.op = first.op;
  response.root = first.root;
  response.prescale_factor = first.prescale_factor;
  response.postscale_factor = first.postscale_factor;
  response.joined = joined;
  response.device = some_on_device;
  if (first.group_size > 1) response.group = first.group;
  int64_t row_elements = 1;
  for (size_t d = 1; d < first.shape.size(); ++d) row_elements *= first.shape[d];
  switch (first.type) {
    case CollectiveType::kAllgather:
      response.sizes.assign(size, 0);  // joined ranks contribute no rows
      for (const auto& request : requests) response.sizes.at(request.rank) = request.shape.at(0);
      response.row_elements = {row_elements};
      break;
    case CollectiveType::kAlltoall:
      response.sizes.assign(static_cast<size_t>(size) * size, 0);
      for (const auto& request : requests)
        for (int to = 0; to < size; ++to)
          response.sizes.at(static_cast<size_t>(request.rank) * size + to) = request.splits.at(to);
      response.row_elements = {row_elements};
      break;
    case CollectiveType::kProcessSet: response.sizes = first.splits; break;
    case CollectiveType::kBarrier:
    case CollectiveType::kJoin: break;
    default: {
      int64_t elements = 1;
      for (int64_t d : first.shape) elements *= d;
      response.sizes = {elements};
      if (first.type == CollectiveType::kReducescatter) {
        response.rows = {first.shape.at(0)};
        response.row_elements = {row_elements};
      }
    }
  }
  return response;
}

Coordinator::Coordinator(int size, RankNames names) : size_(size), names_(std::move(names)), joined_(size, false) {}

void Coordinator::add(const Request& request) {
  CONCORD_ENFORCE(request.rank >= 0 && request.rank < size_, InternalError, "request from rank ", request.rank,
                  " outside [0, ", size_, ")");
  if (request.type == CollectiveType::kJoin) return add_join(request);
  auto [it, inserted] = table_.try_emplace(request.name);
  Entry& entry = it->second;
  if (inserted) {
    entry.by_rank.resize(size_);
    entry.first_seen = std::chrono::steady_clock::now();
  }
  if (entry.by_rank[request.rank]) {
    entry.duplicate = detail::concat("Tensor '", request.name, "' was submitted twice by rank ", names_(request.rank),
                                     " before every rank had submitted it", names_.scope);
    return;
  }
  entry.by_rank[request.rank] = request;
  ++entry.count;
  check_ready(request.name);
}

void Coordinator::add_join(const Request& request) {
  CONCORD_ENFORCE(!joined_[request.rank], InternalError, "rank ", request.rank, " joined twice");
  joined_[request.rank] = true;
  ++joined_count_;
  last_joined_ = request.rank;
  join_name_ = request.name;
  // Tensors the other ranks were waiting for this rank to submit may be ready now, in the
  // order they were first seen.
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> waiting;
  for (const auto& [name, entry] : table_)
    if (std::find(ready_.begin(), ready_.end(), name) == ready_.end()) waiting.emplace_back(entry.first_seen, name);
  std::sort(waiting.begin(), waiting.end());
  for (const auto& [seen, name] : waiting) check_ready(name);
  if (joined_count_ == size_) join_complete_ = true;
}

void Coordinator::check_ready(const std::string& name) {
  Entry& entry = table_.at(name);
  int present = 0;
  const Request* any = nullptr;
  for (int r = 0; r < size_; ++r) {
    if (entry.by_rank[r]) any = &*entry.by_rank[r];
    present += entry.by_rank[r] || joined_[r];
  }
  if (any != nullptr && any->type == CollectiveType::kProcessSet && any->root == kFormedByMembers) {
    // a set formed by its members: ready once every rank that some member names has
    // submitted it (members naming different ranks then get the mismatch error)
    const auto complete = [&](const std::optional<Request>& request) {
      return request && std::all_of(request->splits.begin(), request->splits.end(), [&](int64_t member) {
               return member >= 0 && member < size_ && entry.by_rank[member].has_value();
             });
    };
    if (std::any_of(entry.by_rank.begin(), entry.by_rank.end(), complete)) ready_.push_back(name);
    return;
  }
  if (present < size_ || any == nullptr) return;
  for (const auto& group : groups_)  // already waiting for its group
    if (std::find(group.second.begin(), group.second.end(), name) != group.second.end()) return;
  // Ready on every rank. A group member waits for the rest of its group, unless the ranks
  // disagree on the grouping (then it is released at once and answered with an error).
  bool same_group = true;
  for (const auto& other : entry.by_rank)
    if (other) same_group &= other->group == any->group && other->group_size == any->group_size;
  if (any->group_size <= 1 || !same_group || !entry.duplicate.empty()) {
    ready_.push_back(name);
    return;
  }
  auto& members = groups_[any->group];
  members.push_back(name);
  if (static_cast<int32_t>(members.size()) < any->group_size) return;
  ready_.insert(ready_.end(), members.begin(), members.end());
  groups_.erase(any->group);
}

std::vector<int32_t> Coordinator::joined() const {
  std::vector<int32_t> ranks;
  for (int r = 0; r < size_; ++r)
    if (joined_[r]) ranks.push_back(r);
  return ranks;
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
    std::vector<int32_t> absent;  // joined ranks that did not submit this tensor contribute nothing
    for (int r = 0; r < size_; ++r) {
      if (entry.by_rank[r]) requests.push_back(std::move(*entry.by_rank[r]));
      else if (joined_[r]) absent.push_back(r);
    }
    responses.push_back(build_response(requests, size_, absent, names_));
  }
  ready_.clear();
  if (join_complete_) {  // every rank has joined: release them all
    Response join;
    join.type = ResponseType::kJoin;
    join.names = {join_name_};
    join.sizes = {last_joined_};
    join.joined = joined();
    responses.push_back(std::move(join));
    joined_.assign(size_, false);
    joined_count_ = 0;
    join_complete_ = false;
  }
  return responses;
}

}  // namespace concord
