// KVStore: data-parallel parameter synchronisation over the dependency engine
// (src/engine/engine.h), after Mamidala, "Efficient Embedding of MPI Collectives in MXNET
// DAGs for scaling Deep Learning" (Mamidala et al., 2018) and docs/architecture.md,
// "KVStore".
//
// Each key holds one value (a dense tensor) guarded by an engine Var. push(key, grad)
// replaces the value by the reduction (sum by default) of every rank's grad; pull(key, out)
// copies the value out. Three designs (KVStoreType) decide who issues the collectives:
//   funneled   : the pushing thread waits for the gradient (its var), copies it into a
//                communication buffer and runs the allreduce itself, on one communicator;
//                order is correct by construction, one collective at a time.
//   concurrent : C communicators split from the world; key k uses communicator k mod C.
//                Each push is an asynchronous engine op (FnKind::kComm) writing the key's
//                var and the communicator's var, so per communicator collectives run in
//                push order; a progress thread (CollectiveDriver) drives all of them. After
//                every `outstanding` pushes the pushing thread waits for them (the paper's
//                barrier), bounding the collectives in flight.
//   depchain   : as concurrent on one communicator, but every collective also writes one
//                shared chain var, so every rank runs the collectives in push order while
//                the rest of the DAG overlaps them.
// Every collective is preceded by a key check: keys pushed in different orders, unknown
// keys, mismatched dtypes/shapes and failed gradient ops become an error on every rank (no
// hang), and later operations still work. init runs the full KeyCheck through rank 0
// (kvstore/key_check.h); a push runs the decentralised digest (kvstore/key_digest.h), since
// init already verified its key's dtype and shape across ranks, and falls back to the
// KeyCheck (same messages) on every rank when the digests differ.
//
// Bytes on the wire per push of n bytes: the digest's log2 P messages of 40 B per rank
// (plus the KeyCheck's P-1 headers of 224 B and P-1 verdicts of 520 B through rank 0 when
// it fails), then the allreduce the registry selects (ring: 2(P-1)/P * n sent per rank).
// init: the KeyCheck, then a broadcast of n bytes from rank 0 (binomial or chain).
//
// Threading: the API (init/push/pull/pushpull/barrier) is called from one thread at a
// time (the training loop's thread). Engine ops and the driver thread do the rest.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "concord/types.h"
#include "engine/engine.h"
#include "kvstore/key_collective.h"
#include "transport/communicator.h"

namespace concord::kvstore {

/// The three designs of the paper.
enum class KVStoreType { kFunneled, kConcurrent, kDepChain };

/// "funneled", "concurrent" or "depchain".
const char* kvstore_type_name(KVStoreType type);
/// Parses a name as printed by kvstore_type_name. Throws InvalidArgument listing the names.
KVStoreType kvstore_type_from_name(const std::string& name);

/// Options of a KVStore; every rank must pass the same.
struct KVStoreOptions {
  KVStoreType type = KVStoreType::kFunneled;
  /// Reduction of push: kSum (MXNet's default) or kAverage (sum / P); kMin/kMax/kProduct too.
  ReduceOp op = ReduceOp::kSum;
  int communicators = 2;                       ///< concurrent: C, the number of communicators (>= 1)
  int outstanding = 8;                         ///< concurrent: pushes after which the pusher waits for them (>= 1)
  std::string algorithm;                       ///< allreduce algorithm name; "" = cost model (registry)
  size_t chunk_bytes = default_chunk_bytes();  ///< pipelining unit of the algorithms, bytes
  CostParams cost_params = {};                 ///< must be equal on every rank
};

class KVStore {
 public:
  /// Collective over `world`: splits it into the store's own communicators (one control
  /// communicator, plus one data communicator, or C for concurrent), so the store's
  /// traffic never matches the caller's. `engine` and `world` must outlive the store.
  /// Throws InvalidArgument for communicators or outstanding below 1, CommError.
  KVStore(engine::Engine& engine, Communicator& world, const KVStoreOptions& options = {});
  /// Waits for every collective of the store, then deletes its vars. Pending pulls keep the
  /// values they read alive.
  ~KVStore();
  KVStore(const KVStore&) = delete;
  KVStore& operator=(const KVStore&) = delete;

  /// Collective, blocking: every rank calls init with the same keys in the same order;
  /// the key's value becomes a copy of rank 0's `value` (shape and dtype must agree). Keys
  /// are any ints. Throws (on every rank alike) InvalidArgument when some rank already
  /// holds `key` or passed a bad tensor, MismatchError when ranks pass different keys,
  /// dtypes or shapes; the key stays uninitialised then and later calls still work.
  void init(int key, const TensorView& value);

  /// Reduces every rank's `grad` into the key's value (options.op). `grad_var`, if not
  /// null, is the var guarding `grad` (the push waits for the operation that writes the
  /// gradient, and later writes of grad_var wait for the push); `grad` must stay valid
  /// until the push has read it (funneled: on return; otherwise: until the next write of
  /// grad_var completes, or until pull(key) returns when grad_var is null).
  /// Errors (unknown key, dtype/shape differing from init's, ranks pushing different keys
  /// in one slot) are reported on every rank: funneled throws them from push; the others
  /// store them on the key, and pull(key) rethrows them until the next successful push.
  /// A gradient op that failed (or an operation writing the key's var that failed) is
  /// reported on every rank as an InvalidArgument for this key naming the failing rank(s)
  /// and the error, the allreduce being skipped: concurrent and depchain join the
  /// collective through PushOptions::on_skip instead of being skipped by the engine (no
  /// hang); the failing rank's grad_var keeps its own error (engine semantics: until
  /// wait_for_var(grad_var), later ops on it are skipped too; funneled has already
  /// consumed it by waiting).
  /// Every rank must push the same keys in the same order (per communicator for
  /// concurrent). `priority` orders ready engine ops (higher first).
  void push(int key, const TensorView& grad, engine::Var* grad_var = nullptr, int priority = 0);

  /// Copies the key's value, after every push of it issued so far, into `out` (same dtype
  /// and shape). With `out_var` the copy is an engine op reading the key's var and writing
  /// out_var (an error then lands on out_var: Engine::wait_for_var(out_var) rethrows it);
  /// without, pull blocks and throws directly. Local, no communication. Throws
  /// InvalidArgument for an unknown key or a mismatching `out`; rethrows the error of the
  /// key's last push.
  void pull(int key, const TensorView& out, engine::Var* out_var = nullptr, int priority = 0);

  /// push(key, in, in_var) then pull(key, out, out_var); `in` and `out` may be the same
  /// memory when in_var == out_var or both are null.
  void pushpull(int key, const TensorView& in, const TensorView& out, engine::Var* in_var = nullptr,
                engine::Var* out_var = nullptr, int priority = 0);

  /// Collective: waits for this rank's pushes, then a barrier over the store's ranks.
  void barrier();

  /// This rank in [0, num_workers()).
  int rank() const { return rank_; }
  /// Number of ranks (workers).
  int num_workers() const { return size_; }
  const KVStoreOptions& options() const { return options_; }
  /// Key checks run by this store so far (identical on every rank once the same operations
  /// completed): pushes on the digest's fast path, and full KeyChecks through rank 0.
  KeyCheckStats check_stats() const;

  /// The var guarding `key`'s value (e.g. to order an update after the push). Throws
  /// InvalidArgument for an unknown key.
  engine::Var* var(int key);

 private:
  struct Entry;
  class Slots;
  std::shared_ptr<Entry> find(int key);
  // The local problem of pushing `grad` to `entry` (null: unknown key), as a header.
  struct Request;
  Request make_request(int key, const TensorView& grad);
  void push_funneled(int key, const TensorView& grad, engine::Var* grad_var);
  void push_engine(int key, const TensorView& grad, engine::Var* grad_var, int priority);
  void wait_window();

  engine::Engine& engine_;
  KVStoreOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<Slots> slots_;
  std::mutex mutex_;  // guards entries_
  std::map<int, std::shared_ptr<Entry>> entries_;
  std::vector<std::shared_ptr<Entry>> window_;  // concurrent: pushes since the last wait
};

}  // namespace concord::kvstore
