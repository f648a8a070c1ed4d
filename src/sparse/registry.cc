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
  std::function<std::unique_ptr<SparseAllreduce>(Communicator&, const SparseOptions&)> create;
};

// Creates algorithm T, whose constructor takes (comm, options).
template <typename T>
std::unique_ptr<SparseAllreduce> create(Communicator& comm, const SparseOptions& options) {
  return std::make_unique<T>(comm, options);
}

const std::vector<SparseEntry>& entries() {
  static const std::vector<SparseEntry> table = {
      {"oktopk", create<OkTopk>},
      {"dense", create<SparseAllreduceDense>},
      {"topka", create<SparseAllreduceTopkA>},
      {"topkdsa", create<SparseAllreduceTopkDSA>},
      {"gtopk", create<SparseAllreduceGTopk>},
      {"gaussiank", create<SparseAllreduceGaussianK>},
  };
  return table;
}

}  // namespace

std::vector<std::string> sparse_allreduce_names() {
  std::vector<std::string> names;
  for (const auto& entry : entries()) names.push_back(entry.name);
  return names;
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
