#include "runtime/process_set.h"

#include <algorithm>

#include "common/enforce.h"
#include "runtime/handle_state.h"

namespace concord {

int ProcessSet::rank_in_set(int global_rank) const {
  auto it = std::find(ranks.begin(), ranks.end(), global_rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

std::string ProcessSet::describe() const {
  std::vector<int64_t> r(ranks.begin(), ranks.end());
  return detail::concat("process set ", id, " (ranks ", shape_string(r), ")");
}

void check_process_set_ranks(const std::vector<int>& ranks, int world_size, const std::string& what) {
  std::vector<int64_t> r(ranks.begin(), ranks.end());
  CONCORD_ENFORCE(!ranks.empty(), InvalidArgument, what, ": a process set needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    CONCORD_ENFORCE(ranks[i] >= 0 && ranks[i] < world_size, InvalidArgument, what, ": rank ", ranks[i], " of ",
                    shape_string(r), " is outside [0, ", world_size, ")");
    CONCORD_ENFORCE(i == 0 || ranks[i] > ranks[i - 1], InvalidArgument, what, ": ranks ", shape_string(r),
                    " must be distinct and ascending");
  }
}

ProcessSetTable::ProcessSetTable(Communicator& world_control, Communicator& world_data, ProcessSetContext context)
    : world_control_(world_control), world_data_(world_data), context_(context) {
  std::vector<int> all(world_control.size());
  for (int r = 0; r < world_control.size(); ++r) all[r] = r;
  sets_[0] = make(0, all);
}

std::shared_ptr<ProcessSet> ProcessSetTable::make(int32_t id, const std::vector<int>& ranks, bool formed_by_members) {
  auto set = std::make_shared<ProcessSet>();
  set->id = id;
  set->ranks = ranks;
  const int me = world_control_.rank();
  const bool member = set->rank_in_set(me) >= 0;
  if (id == 0) {
    set->control = &world_control_;
    set->data = &world_data_;
  } else if (formed_by_members && context_.create_group) {  // collective over the members only
    if (member) {
      const std::string name = set->describe();
      set->owned_control = context_.create_group(ranks, name + " control");
      set->owned_data = context_.create_group(ranks, name + " data");
      set->p2p = context_.create_group(ranks, name + " point-to-point");
      set->control = set->owned_control.get();
      set->data = set->owned_data.get();
    }
  } else {  // collective over the world: every rank splits, non-members get nothing
    set->owned_control = world_control_.split(member ? 0 : -1, me);
    set->owned_data = world_data_.split(member ? 0 : -1, me);
    set->control = set->owned_control.get();
    set->data = set->owned_data.get();
  }
  if (!member) return set;
  const Config& config = context_.config;
  // Only the world stops the runtime on a stall (a set's verdict would stop its members only).
  NegotiatorOptions options{static_cast<uint32_t>(config.cache_capacity), config.stall_warning_seconds,
                            id == 0 ? config.stall_shutdown_seconds : 0.0};
  options.stall_check = !config.stall_check_disabled;
  if (id != 0) options.names = RankNames{ranks, " in " + set->describe()};  // messages name global ranks
  set->negotiator = std::make_unique<Negotiator>(*set->control, options);
  if (id == 0) set->negotiator->set_timeline(&context_.timeline);
  std::vector<int> nodes;
  if (!context_.node_of_rank.empty())
    for (int r : ranks) nodes.push_back(context_.node_of_rank.at(r));
  // Measured selections describe the world's communicator; a smaller set measures its own
  // (CONCORD_AUTOTUNE) and keeps them in memory only.
  if (id == 0)
    set->executor =
        std::make_unique<Executor>(*set->data, config, context_.cost, std::move(nodes), context_.timeline,
                                   std::move(context_.world_tuned), context_.cost_model_cache_path, context_.devices);
  else
    set->executor = std::make_unique<Executor>(*set->data, config, context_.cost, std::move(nodes), context_.timeline,
                                               AutotuneTable(), "", context_.devices);
  return set;
}

int32_t ProcessSetTable::add(const std::vector<int>& ranks, bool formed_by_members) {
  check_process_set_ranks(ranks, world_control_.size(), "add_process_set");
  const int32_t id = next_id_++;
  auto set = make(id, ranks, formed_by_members);
  std::lock_guard<std::mutex> lock(mutex_);
  sets_[id] = std::move(set);
  return id;
}

void ProcessSetTable::remove(int32_t id) {
  std::shared_ptr<ProcessSet> set;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sets_.find(id);
    CONCORD_ENFORCE(
        id != 0 && it != sets_.end(), InvalidArgument, "remove_process_set: ",
        id == 0 ? "the global process set (id 0) cannot be removed" : "no process set with id " + std::to_string(id));
    set = it->second;
    sets_.erase(it);
  }
  set->removed = true;
  set->queue.close(detail::concat(set->describe(), " was removed"));
  if (set->member()) set->negotiator->finish();  // collective over the members, who all remove it now
}

std::shared_ptr<ProcessSet> ProcessSetTable::get(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it != sets_.end()) return it->second;
  std::vector<int64_t> ids;
  for (const auto& [known, set] : sets_) ids.push_back(known);
  CONCORD_THROW(InvalidArgument, "no process set with id ", id,
                " (removed, or never added); known ids: ", shape_string(ids));
}

int32_t ProcessSetTable::find(const std::vector<int>& ranks) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, set] : sets_)
    if (set->ranks == ranks) return id;
  return -1;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<ProcessSet>> result;
  for (const auto& [id, set] : sets_) result.push_back(set);
  return result;
}

void ProcessSetTable::apply(const Response& response, TensorQueue& world_queue) {
  auto entry = world_queue.try_take(response.names.at(0));
  std::shared_ptr<HandleState> handle = entry ? entry->handle : std::make_shared<HandleState>();
  if (response.type == ResponseType::kError) {  // members of a formed set disagreed: nothing applied anywhere
    handle->fail(std::make_exception_ptr(MismatchError(response.error)));
    return;
  }
  try {
    if (!response.sizes.empty()) {  // add: every rank decides alike (identical tables)
      std::vector<int> ranks(response.sizes.begin(), response.sizes.end());
      const int32_t existing = find(ranks);
      std::vector<int64_t> r(ranks.begin(), ranks.end());
      CONCORD_ENFORCE(existing < 0, InvalidArgument, "add_process_set: a process set with ranks ", shape_string(r),
                      " already exists (id ", existing, ")");
      handle->received_splits = {add(ranks, response.root == kFormedByMembers)};
    } else {
      remove(response.root);
      handle->received_splits = {response.root};
    }
  } catch (...) {
    handle->fail(std::current_exception());
    return;
  }
  handle->complete();
}

}  // namespace concord
