#include "kvstore/kvstore.h"

#include <cstring>

#include "common/enforce.h"
#include "kvstore/collective_driver.h"
#include "kvstore/key_collective.h"

namespace concord::kvstore {
namespace {

// The text of a stored error: what() of a std::exception, else a placeholder.
std::string error_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

const char* kvstore_type_name(KVStoreType type) {
  switch (type) {
    case KVStoreType::kFunneled: return "funneled";
    case KVStoreType::kConcurrent: return "concurrent";
    case KVStoreType::kDepChain: return "depchain";
  }
  return "unknown";
}

KVStoreType kvstore_type_from_name(const std::string& name) {
  for (auto type : {KVStoreType::kFunneled, KVStoreType::kConcurrent, KVStoreType::kDepChain})
    if (name == kvstore_type_name(type)) return type;
  CONCORD_THROW(InvalidArgument, "unknown KVStore type '", name, "'; known: funneled, concurrent, depchain");
}

/// One key: immutable description, the value (guarded by `var`) and the error of the last
/// push (guarded by `mutex`). Shared with the engine ops that use it.
struct KVStore::Entry {
  int key = 0;
  engine::Var* var = nullptr;
  bool initialized = false;  // false: a key pushed on this rank without init (holds its error)
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> value;
  std::mutex mutex;
  std::exception_ptr error;

  void set_error(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    error = std::move(e);
  }
  std::exception_ptr get_error() {
    std::lock_guard<std::mutex> lock(mutex);
    return error;
  }
};

/// The store's communicators: `control` (init, barrier) and the data communicators with
/// their engine vars (concurrent: one per communicator; depchain: the chain var).
class KVStore::Slots {
 public:
  std::unique_ptr<CommSlot> control;
  std::vector<std::unique_ptr<CommSlot>> data;
  std::vector<engine::Var*> data_vars;
  std::unique_ptr<CollectiveDriver> driver;
  ScratchBuffer funnel_buffer;  // funneled: the communication buffer
};

struct KVStore::Request {
  std::shared_ptr<Entry> entry;  // null: unknown key
  KeyHeader header;
};

KVStore::KVStore(engine::Engine& engine, Communicator& world, const KVStoreOptions& options)
    : engine_(engine), options_(options), rank_(world.rank()), size_(world.size()), slots_(std::make_unique<Slots>()) {
  CONCORD_ENFORCE(options.communicators >= 1, InvalidArgument, "KVStore: communicators must be >= 1, got ",
                  options.communicators);
  CONCORD_ENFORCE(options.outstanding >= 1, InvalidArgument, "KVStore: outstanding must be >= 1, got ",
                  options.outstanding);
  if (!options.algorithm.empty()) find_algorithm(allreduce_algorithms(), options.algorithm);
  const bool concurrent = options.type == KVStoreType::kConcurrent;
  slots_->control =
      std::make_unique<CommSlot>(world.split(0, rank_), "", false, options.chunk_bytes, options.cost_params);
  const int count = concurrent ? options.communicators : 1;
  for (int i = 0; i < count; ++i)
    slots_->data.push_back(std::make_unique<CommSlot>(world.split(0, rank_), options.algorithm, concurrent,
                                                      options.chunk_bytes, options.cost_params));
  if (options.type != KVStoreType::kFunneled) {
    for (int i = 0; i < count; ++i) slots_->data_vars.push_back(engine_.new_var());
    slots_->driver = std::make_unique<CollectiveDriver>();
  }
}

KVStore::~KVStore() {
  auto settle = [&](engine::Var* var) {
    try {
      engine_.wait_for_var(var);
    } catch (...) {
    }
  };
  for (auto& [key, entry] : entries_) settle(entry->var);
  for (auto* var : slots_->data_vars) settle(var);
  if (slots_->driver) slots_->driver->stop();
  for (auto& [key, entry] : entries_) engine_.delete_var(entry->var);
  for (auto* var : slots_->data_vars) engine_.delete_var(var);
}

std::shared_ptr<KVStore::Entry> KVStore::find(int key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

engine::Var* KVStore::var(int key) {
  auto entry = find(key);
  CONCORD_ENFORCE(entry && entry->initialized, InvalidArgument, "KVStore on rank ", rank_, ": key ", key,
                  " was never initialised");
  return entry->var;
}

void KVStore::init(int key, const TensorView& value) {
  auto existing = find(key);
  KeyHeader header = KeyHeader::describe(key, KeyOperation::kInit, value.dtype, value.shape, ReduceOp::kSum);
  if (existing && existing->initialized)
    header.set_problem(KeyProblem::kAlreadyInitialized, "it already holds key " + std::to_string(key) + " (" +
                                                            dtype_name(existing->dtype) + " " +
                                                            shape_string(existing->shape) + ")");
  else if (value.data == nullptr && value.num_elements() > 0)
    header.set_problem(KeyProblem::kValueMismatch, "its value has no data");
  const bool ok = header.problem == static_cast<int32_t>(KeyProblem::kNone);
  std::vector<uint8_t> buffer(ok ? value.num_bytes() : 0);
  if (ok && rank_ == 0 && !buffer.empty()) std::memcpy(buffer.data(), value.data, buffer.size());
  KeyCollective collective(*slots_->control, header, buffer.data(), false);
  run_to_completion(collective);  // throws on every rank alike when the check fails

  auto entry = std::make_shared<Entry>();
  entry->key = key;
  entry->var = engine_.new_var();
  entry->initialized = true;
  entry->dtype = value.dtype;
  entry->shape = value.shape;
  entry->value = std::move(buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  if (existing) engine_.delete_var(existing->var);  // a placeholder of an earlier bad push
  entries_[key] = std::move(entry);
}

KVStore::Request KVStore::make_request(int key, const TensorView& grad) {
  Request request{find(key), KeyHeader::describe(key, KeyOperation::kPush, grad.dtype, grad.shape, options_.op)};
  const std::string name = "key " + std::to_string(key);
  const auto& entry = request.entry;
  if (!entry || !entry->initialized) {
    request.header.set_problem(KeyProblem::kUnknownKey,
                               name + " was never initialised on it (call init(key, value) on every rank first)");
  } else if (entry->dtype != grad.dtype || entry->shape != grad.shape) {
    request.header.set_problem(KeyProblem::kValueMismatch, "its gradient is " + std::string(dtype_name(grad.dtype)) +
                                                               " " + shape_string(grad.shape) + " but init() gave " +
                                                               name + " " + dtype_name(entry->dtype) + " " +
                                                               shape_string(entry->shape));
  } else if (grad.data == nullptr && grad.num_elements() > 0) {
    request.header.set_problem(KeyProblem::kValueMismatch, "its gradient has no data");
  }
  return request;
}

void KVStore::push(int key, const TensorView& grad, engine::Var* grad_var, int priority) {
  if (options_.type == KVStoreType::kFunneled) push_funneled(key, grad, grad_var);
  else push_engine(key, grad, grad_var, priority);
}

void KVStore::push_funneled(int key, const TensorView& grad, engine::Var* grad_var) {
  Request request = make_request(key, grad);
  if (grad_var != nullptr) {
    try {
      engine_.wait_for_var(grad_var);
    } catch (const std::exception& e) {
      request.header.set_problem(KeyProblem::kInputFailed,
                                 std::string("the operation writing its gradient failed: ") + e.what());
    }
  }
  const bool ok = request.header.problem == static_cast<int32_t>(KeyProblem::kNone);
  const size_t bytes = ok ? grad.num_bytes() : 0;
  uint8_t* buffer = slots_->funnel_buffer.get(bytes);
  if (bytes > 0) std::memcpy(buffer, grad.data, bytes);
  KeyCollective collective(*slots_->data[0], request.header, ok ? buffer : nullptr,
                           request.entry && request.entry->initialized);
  auto entry = request.entry;
  std::exception_ptr error;
  try {
    run_to_completion(collective);
  } catch (...) {
    error = std::current_exception();
  }
  if (entry && entry->initialized) {
    // The value changes (or records the error) as a write of the key's var, after earlier pulls.
    engine_.push_sync(
        [entry, buffer, bytes, error] {
          if (!error && bytes > 0) std::memcpy(entry->value.data(), buffer, bytes);
          entry->set_error(error);
        },
        {}, {entry->var}, {engine::FnKind::kCpu, 0, "kvstore.install." + std::to_string(key)});
    engine_.wait_for_var(entry->var);
  }
  if (error) std::rethrow_exception(error);
}

void KVStore::push_engine(int key, const TensorView& grad, engine::Var* grad_var, int priority) {
  Request request = make_request(key, grad);
  auto entry = request.entry;
  if (!entry) {  // a placeholder that takes part in the check and keeps its error for pull
    entry = std::make_shared<Entry>();
    entry->key = key;
    entry->var = engine_.new_var();
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[key] = entry;
  }
  const bool concurrent = options_.type == KVStoreType::kConcurrent;
  const int C = static_cast<int>(slots_->data.size());
  const int index = concurrent ? ((key % C) + C) % C : 0;
  CommSlot* slot = slots_->data[index].get();
  CollectiveDriver* driver = slots_->driver.get();
  const KeyHeader header = request.header;
  const void* source = grad.data;
  const size_t bytes = header.problem == static_cast<int32_t>(KeyProblem::kNone) ? grad.num_bytes() : 0;
  std::vector<engine::Var*> reads;
  if (grad_var != nullptr) reads.push_back(grad_var);
  // Errors go to the key (pull rethrows them), never to the engine: an error stored on the
  // communicator's or chain var would skip every later push on it.
  // `run` copies the gradient in and hands the KeyCollective of `mine` to the driver.
  auto run = [entry, slot, driver](const KeyHeader& mine, const void* from, size_t length,
                                   const engine::OnComplete& on_complete) {
    try {
      const bool ok = mine.problem == static_cast<int32_t>(KeyProblem::kNone);
      void* data = ok ? entry->value.data() : nullptr;
      if (ok && length > 0) std::memcpy(data, from, length);
      auto collective = std::make_unique<KeyCollective>(*slot, mine, data, entry->initialized);
      driver->submit(std::move(collective), [entry, on_complete](std::exception_ptr error) {
        entry->set_error(error);
        on_complete(nullptr);
      });
    } catch (...) {
      entry->set_error(std::current_exception());
      on_complete(nullptr);
    }
  };
  engine::PushOptions push_options{engine::FnKind::kComm, priority, "kvstore.push." + std::to_string(key)};
  // A failed gradient (or an earlier failed op on the key) would make the engine skip this
  // push on this rank only, and its peers would wait in the collective forever. Instead the
  // push still joins the KeyCheck, flagged kInputFailed, so every rank fails with the same
  // error naming the key and this rank, and no allreduce runs.
  push_options.on_skip = [run, header](std::exception_ptr inherited, engine::OnComplete on_complete) {
    KeyHeader failed = header;
    if (failed.problem == static_cast<int32_t>(KeyProblem::kNone))  // else report the first problem
      failed.set_problem(KeyProblem::kInputFailed,
                         "an operation writing its gradient or key failed: " + error_message(inherited));
    run(failed, nullptr, 0, on_complete);
  };
  engine_.push_async(
      [run, header, source, bytes](engine::OnComplete on_complete) { run(header, source, bytes, on_complete); }, reads,
      {entry->var, slots_->data_vars[index]}, push_options);
  if (concurrent) {
    window_.push_back(entry);
    if (static_cast<int>(window_.size()) >= options_.outstanding) wait_window();
  }
}

void KVStore::wait_window() {
  for (auto& entry : window_) {
    try {
      engine_.wait_for_var(entry->var);
    } catch (...) {
      // An error on the key's var itself (an operation writing kv.var(key) failed): pull
      // reports the push's own error first (the KeyCheck's, naming the key and rank).
      if (!entry->get_error()) entry->set_error(std::current_exception());
    }
  }
  window_.clear();
}

void KVStore::pull(int key, const TensorView& out, engine::Var* out_var, int priority) {
  auto entry = find(key);
  CONCORD_ENFORCE(entry, InvalidArgument, "KVStore pull on rank ", rank_, ": key ", key,
                  " was never initialised (call init(key, value) on every rank first)");
  if (entry->initialized) {
    CONCORD_ENFORCE(out.dtype == entry->dtype && out.shape == entry->shape, InvalidArgument, "KVStore pull on rank ",
                    rank_, ": key ", key, " holds ", dtype_name(entry->dtype), " ", shape_string(entry->shape),
                    " but the output is ", dtype_name(out.dtype), " ", shape_string(out.shape));
    CONCORD_ENFORCE(out.data != nullptr || out.num_elements() == 0, InvalidArgument, "KVStore pull on rank ", rank_,
                    ": key ", key, ": the output has no data");
  }
  void* destination = out.data;
  const int rank = rank_;
  auto copy = [entry, destination, rank] {
    if (auto error = entry->get_error()) std::rethrow_exception(error);
    CONCORD_ENFORCE(entry->initialized, InvalidArgument, "KVStore pull on rank ", rank, ": key ", entry->key,
                    " was never initialised (call init(key, value) on every rank first)");
    if (!entry->value.empty()) std::memcpy(destination, entry->value.data(), entry->value.size());
  };
  if (out_var != nullptr) {
    engine_.push_sync(copy, {entry->var}, {out_var},
                      {engine::FnKind::kCpu, priority, "kvstore.pull." + std::to_string(key)});
    return;
  }
  engine_.wait_for_var(entry->var);
  copy();
}

void KVStore::pushpull(int key, const TensorView& in, const TensorView& out, engine::Var* in_var, engine::Var* out_var,
                       int priority) {
  push(key, in, in_var, priority);
  pull(key, out, out_var, priority);
}

KeyCheckStats KVStore::check_stats() const {
  KeyCheckStats total = slots_->control->check_stats();
  for (const auto& slot : slots_->data) {
    const KeyCheckStats one = slot->check_stats();
    total.fast += one.fast;
    total.full += one.full;
  }
  return total;
}

void KVStore::barrier() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, entry] : entries_) entries.push_back(entry);
  }
  window_ = std::move(entries);
  wait_window();
  slots_->control->comm().barrier();
}

}  // namespace concord::kvstore
