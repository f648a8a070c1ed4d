// The sparse allreduce registry (sparse/sparse_allreduce.h): one row per algorithm, in the
// order sparse_allreduce_names() lists them. Add an algorithm by appending a row.
#include <functional>
#include <sstream>

#include "common/enforce.h"
#include "sparse/dense.h"
#include "sparse/gaussiank.h"
#include "sparse/gtopk.h"
#include "sparse/oktopk.h"
#include "sparse/options.h"
#include "sparse/sparse_allreduce.h"
#include "sparse/topka.h"
#include "sparse/topkdsa.h"

namespace concord::sparse {
namespace {

struct SparseEntry {
  const char* name;
  const char* description;  ///< one line, shown by concord-info
  std::function<std::unique_ptr<SparseAllreduce>(Communicator&, const SparseOptions&)> create;
};

// Creates algorithm T, whose constructor takes (comm, options).
template <typename T>
std::unique_ptr<SparseAllreduce> create(Communicator& comm, const SparseOptions& options) {
  return std::make_unique<T>(comm, options);
}

const std::vector<SparseEntry>& entries() {
  static const std::vector<SparseEntry> table = {
      {"oktopk",
       "Ok-Topk (Li & Hoefler, PPoPP 2022): threshold top-k, split-and-reduce over balanced regions, "
       "balanced allgatherv",
       create<OkTopk>},
      {"dense", "baseline: the dense allreduce of the whole accumulator", create<SparseAllreduceDense>},
      {"topka", "baseline: exact local top-k, allgather of every rank's k entries, local sum",
       create<SparseAllreduceTopkA>},
      {"topkdsa", "baseline (SparCML): sparse reduce-scatter over fixed regions, allgatherv that turns dense",
       create<SparseAllreduceTopkDSA>},
      {"gtopk", "baseline (Shi et al., ICDCS 2019): global top-k by tree reduction, then broadcast",
       create<SparseAllreduceGTopk>},
      {"gaussiank", "baseline (Shi et al., 2019): threshold from a normal fit instead of an exact top-k, allgather",
       create<SparseAllreduceGaussianK>},
  };
  return table;
}

}  // namespace

std::vector<std::string> sparse_allreduce_names() {
  std::vector<std::string> names;
  for (const auto& entry : entries()) names.push_back(entry.name);
  return names;
}

std::vector<SparseAlgorithmInfo> sparse_allreduce_algorithms() {
  std::vector<SparseAlgorithmInfo> algorithms;
  for (const auto& entry : entries()) algorithms.push_back({entry.name, entry.description});
  return algorithms;
}

std::unique_ptr<SparseAllreduce> make_sparse_allreduce(const std::string& name, Communicator& comm,
                                                       const SparseOptions& options) {
  validate_options(options);
  for (const auto& entry : entries())
    if (name == entry.name) return entry.create(comm, options);
  std::ostringstream known;
  for (const auto& entry : entries()) known << (known.tellp() > 0 ? ", " : "") << entry.name;
  CONCORD_THROW(InvalidArgument, "unknown sparse allreduce \"", name, "\" (known: ", known.str(), ")");
}

}  // namespace concord::sparse
