// Executes one (possibly fused) response on this rank: takes the named entries from the
// tensor queue, packs allreduce inputs into the persistent fusion buffer (applying the
// prescale factor), runs the collective's algorithm over the data communicator, unpacks
// (applying the postscale factor, and 1/size for kAverage) and completes the handles.
// A response of one allreduce tensor skips the fusion buffer: the algorithm reads the
// input and writes the handle's output directly (AllreduceAlgorithm::start_out_of_place;
// in place when they are the same buffer; a prescale pass writes the output first and
// reduces it in place), so out of place costs what in place costs. Adasum is the registry's
// "adasum" row like any algorithm (the element-wise rows decline it); a fused response
// tells the algorithm its tensors (AllreduceAlgorithm::set_tensors: Adasum's dot products
// are per tensor).
// Per-range completion: a fused allreduce copies out and completes each tensor as soon as
// the algorithm reports its whole range final (AllreduceAlgorithm::take_final_ranges),
// before the rest of the fused operation has finished.
// An ERROR response fails the named handle with MismatchError on every rank.
// Fused allgathers pack each rank's rows of every tensor into one allgatherv; fused
// reduce-scatters lay out rank r's rows of every tensor as block r of one reduce-scatter
// (executor_reducescatter.cc); alltoall pads every block to the largest one
// (executor_alltoall.cc). A rank that has joined (Response::joined) and has no entry takes
// part with a placeholder: zeros to reduce, no rows to gather, a scratch output.
// Algorithms come from the registry (algorithms/registry.h). Selection
// (executor_selection.cc), the same on every rank: a CONCORD_*_ALGORITHM size-range rule
// covering the size (algorithms/size_rules.h) wins; otherwise the choice is memoised per
// (collective, dtype, size bucket): for allreduce with CONCORD_AUTOTUNE=1 the measured
// winner (algorithms/autotune.h; measured on first use of the bucket, rank 0 deciding, and
// persisted), else the cost model's; each new choice is logged at debug level. Instances
// (and their scratch) persist across responses.
// The tree allreduces get their chunk size per response from CONCORD_TREE_CHUNKS
// (algorithms/tree_chunking.h), the same on every rank.
// Responses on device memory (Response::device) reach their tensors through the DevicePath of
// the tensors' device (runtime/device_path.h), which moves device memory only through the
// Device interface. Allreduce is written once for both memory kinds: packing, prescale,
// the algorithm, per-range completion and postscale run on the CollectiveMemory's kernels
// (runtime/collective_memory.h: the CPU kernels, or the device's on a stream) and fusion
// buffer, and the algorithm comes from the one registry by the one selection rule below
// (the rows on device buffers decline host problems and the other way round). Broadcast of device memory is the DevicePath's; allgather, reduce-scatter
// and alltoall run the layout and host algorithm below with the DevicePath as their
// CollectiveMemory (staged through pinned host memory). A device response
// with joined ranks fails on every rank with InvalidArgument (a joined rank has no device
// tensor to stand in with).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/autotune.h"
#include "algorithms/registry.h"
#include "algorithms/selection_policy.h"
#include "algorithms/size_rules.h"
#include "common/config.h"
#include "common/timeline.h"
#include "control/message.h"
#include "device/device_set.h"
#include "runtime/collective_memory.h"
#include "runtime/device_path.h"
#include "runtime/tensor_queue.h"
#include "transport/communicator.h"

namespace concord {

class Executor {
 public:
  /// `timeline` receives QUEUE, MEMCPY_IN_FUSION_BUFFER, the algorithm's activity (e.g.
  /// ALLREDUCE_RING) and MEMCPY_OUT spans while it is active (only rank 0's is ever
  /// started). `cost` and `config` must be equal on every rank (the runtime adopts rank
  /// 0's); `node_of_rank` gives each rank's node (empty = one node).
  /// `tuned` holds the measured choices adopted from rank 0 (its scope must describe this
  /// communicator and config); `cache_path` is where new measurements are saved ("" =
  /// nowhere; only rank 0 should pass one).
  /// `devices` (may be null: no device) are the devices TensorView::device indexes; it
  /// must outlive the executor.
  Executor(Communicator& data, const Config& config, const CostParams& cost, std::vector<int> node_of_rank,
           Timeline& timeline, AutotuneTable tuned = AutotuneTable(), std::string cache_path = "",
           const DeviceSet* devices = nullptr);
  ~Executor();

  /// The measured allreduce choices so far (adopted and new).
  const AutotuneTable& tuned() const { return tuned_; }

  /// Runs `response`. Failures (e.g. CommError) are stored in the affected handles, never
  /// thrown. Collective: every rank executes the same responses in the same order.
  void execute(const Response& response, TensorQueue& queue);

 private:
  // Completes (and sets completed[i] for) every fused tensor as soon as its bytes are
  // final (per-range completion); a single tensor is left to execute() to complete.
  void allreduce(const Response& response, std::vector<TensorEntry>& entries, std::vector<bool>& completed);
  // The allreduce algorithm for `problem` (a host-buffer problem) in the memory of
  // `response`'s tensors (`first` is one of its entries): one selection for every memory
  // kind, the device rows judged on the device capabilities agreed over the ranks (the
  // first time, collectively) and memoised apart from host choices; `activity` receives
  // its timeline name. Collective when it measures.
  AllreduceAlgorithm& allreduce_algorithm(const Response& response, const TensorEntry& first, const Problem& problem,
                                          std::string& activity);
  void allgather(const Response& response, std::vector<TensorEntry>& entries);
  void broadcast(const Response& response, TensorEntry& entry);
  // executor_reducescatter.cc
  void reducescatter(const Response& response, std::vector<TensorEntry>& entries);
  // executor_alltoall.cc
  void alltoall(const Response& response, TensorEntry& entry);

  // The entry of tensor `index` of `response` for a rank that has joined: zeroed input,
  // scratch output, a handle nobody waits for. Its buffers live until the next response.
  TensorEntry placeholder(const Response& response, size_t index);
  // Throws InvalidArgument, with Horovod's text, for an allgather, broadcast, alltoall or
  // reduce-scatter while some rank has joined (Horovod refuses them: a joined rank has no
  // tensor to contribute); allreduce and barrier go on, the joined ranks contributing zeros.
  void refuse_joined(const Response& response) const;

  // The registry's choice for `problem` (each entry judged on problem_for(name, problem)
  // when set), created on first use and kept; re-created when the chosen entry's
  // chunk_bytes differs from the instance's (CONCORD_TREE_CHUNKS varies it per call) or
  // the device does. `device`: the device of device-buffer problems (AlgorithmContext).
  template <typename AlgorithmType>
  AlgorithmType& algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries, const Problem& problem,
                           const std::string& forced, std::string& activity, const ProblemForEntry& problem_for = {},
                           Device* device = nullptr);
  Problem problem(size_t count, DataType dtype, ReduceOp op) const;
  // The data path of device `index` (created on first use).
  DevicePath& device_path(int index);
  // Where `response`'s tensors are (`first` is one of its entries): host_memory_ or the
  // DevicePath of their device.
  CollectiveMemory& memory(const Response& response, const TensorEntry& first);

  // The algorithm name for `problem` of `collective` (see the header comment); "" = let
  // select_algorithm's cost model decide. Collective when it measures. `memo` names the
  // memo's entry when it differs from the collective (device buffers and adasum have rows
  // of their own, so their choices are kept apart).
  template <typename AlgorithmType>
  std::string choose(const char* collective, const std::vector<RegistryEntry<AlgorithmType>>& entries,
                     const Problem& problem, const char* memo = nullptr);
  // Times every allreduce algorithm that accepts `problem` on scratch buffers, each
  // repetition one call in place and one out of place (both kinds share the choice, so that
  // hvd.allreduce and hvd.allreduce_ give bitwise-equal results; every algorithm but the
  // ring, the exchange schedules and mpi copies once before an out-of-place call, which an
  // in-place timing alone would miss; the two buffers take 2x the call's bytes while
  // measuring); returns the one rank 0 found fastest (algorithms/autotune.h). Collective
  // over comm_.
  std::string measure_allreduce(const Problem& problem, const ProblemForEntry& problem_for);

  // Opens `activity` on the timeline for every tensor of `response`.
  void mark(const Response& response, const std::string& activity);
  void unmark(const Response& response);

  Communicator& comm_;
  Timeline& timeline_;
  const Config& config_;
  ScratchBuffer fusion_buffer_;
  ScratchBuffer scratch_;
  ScratchBuffer receive_buffer_;  // alltoall
  HostKernels host_kernels_{scratch_};
  HostMemory host_memory_{fusion_buffer_, receive_buffer_, host_kernels_};
  std::vector<std::vector<uint8_t>> placeholders_;  // joined ranks' buffers, per response
  AlgorithmContext context_;
  struct Instance {
    std::unique_ptr<Algorithm> algorithm;
    size_t chunk_bytes = 0;    // the AlgorithmContext::chunk_bytes it was created with
    Device* device = nullptr;  // the AlgorithmContext::device it was created with
  };
  std::map<std::string, Instance> instances_;  // by "COLLECTIVE_NAME"
  SelectionPolicy policy_;                     // rules, measured table, cost model (algorithms/selection_policy.h)
  std::map<std::string, std::string> chosen_;  // memo: selection_key -> algorithm
  AutotuneTable tuned_;
  std::string cache_path_;
  const DeviceSet* devices_;
  std::map<int, std::unique_ptr<DevicePath>> device_paths_;  // by device index
};

}  // namespace concord
