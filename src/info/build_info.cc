// What this build offers (info/build_info.h): the JSON document, and concord-info's text
// rendered from it, so the two forms cannot disagree.
#include "info/build_info.h"

#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "common/config.h"
#include "common/enforce.h"
#include "concord/version.h"
#include "device/cuda_status.h"
#include "device/device_registry.h"
#include "device/nccl/nccl_api.h"
#include "sparse/sparse_allreduce.h"
#include "transport/device_pointers.h"
#include "transport/transport_world.h"
#include "transport/ucx_world.h"

namespace concord {
namespace {

using json = nlohmann::ordered_json;  // keys in the documented order

// {"collective", "setting", "algorithms": [{"name", "description"}]} of one registry.
template <typename Entries>
json collective(const char* name, const char* setting, const Entries& entries) {
  json algorithms = json::array();
  for (const auto& entry : entries) algorithms.push_back({{"name", entry.name}, {"description", entry.description}});
  return {{"collective", name}, {"setting", setting ? json(setting) : json(nullptr)}, {"algorithms", algorithms}};
}

json document() {
  json settings = json::array();
  for (const auto& var : config_table()) {
    settings.push_back({{"name", var.name},
                        {"default", var.default_value},
                        {"value", config_value(var.name)},
                        {"type", var.type},
                        {"shared", var.shared != nullptr},
                        {"doc", var.doc}});
  }
  const json collectives = {
      collective("allreduce", "CONCORD_ALLREDUCE_ALGORITHM", allreduce_algorithms()),
      collective("allgather", "CONCORD_ALLGATHER_ALGORITHM", allgather_algorithms()),
      collective("broadcast", "CONCORD_BROADCAST_ALGORITHM", broadcast_algorithms()),
      collective("reduce-scatter", nullptr, reduce_scatter_algorithms()),
      collective("alltoall", nullptr, alltoall_algorithms()),
      collective("reduce (a phase of hierarchical)", nullptr, reduce_algorithms()),
      collective("device-buffer allreduce", nullptr, device_allreduce_algorithms()),
      collective("sparse allreduce", nullptr, sparse::sparse_allreduce_algorithms()),
  };
  const CudaStatus cuda = cuda_status();
  // Not initialising MPI here (the Python binding and the unit tests build this document
  // too): before MPI_Init the answer is the build-time one, and says so.
  const DevicePointerSupport mpi_cuda = mpi_cuda_support();
  nccl::Status nccl;
  nccl::library(&nccl);
  std::string transport;
  try {
    transport = describe_transport_choice();
  } catch (const Error& error) {
    transport = std::string("none: ") + error.what();
  }
  return {{"version", CONCORD_VERSION_STRING},
          {"transport", {{"ucx_built", ucx_available()}, {"choice", transport}}},
          {"settings", settings},
          {"collectives", collectives},
          {"cost_model", json::parse(CostParams::from_env().encode())},
          {"mpi_cuda_aware", {{"supported", mpi_cuda.supported}, {"reason", mpi_cuda.reason}}},
          {"nccl",
           {{"built", nccl.built}, {"loaded", nccl.loaded}, {"version", nccl.version}, {"summary", nccl.summary()}}},
          {"cuda",
           {{"built", cuda.built}, {"devices", cuda.devices}, {"reason", cuda.reason}, {"summary", cuda.summary()}}}};
}

// printf into `out`.
void append(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void append(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(length) + 1);
  std::vsnprintf(out.data() + start, static_cast<size_t>(length) + 1, format, args);
  out.resize(start + static_cast<size_t>(length));
  va_end(args);
}

const char* str(const json& value) { return value.get_ref<const std::string&>().c_str(); }

}  // namespace

std::string build_info_json(int indent) { return document().dump(indent); }

std::string build_info_text() {
  const json info = document();
  std::string out;
  for (const auto& var : info["settings"]) {
    append(out, "%-26s = %-12s (default %s, %s%s)\n%28s%s\n", str(var["name"]), str(var["value"]), str(var["default"]),
           str(var["type"]), var["shared"].get<bool>() ? "; every rank uses rank 0's" : "", "", str(var["doc"]));
  }
  for (const auto& group : info["collectives"]) {
    const bool forced = !group["setting"].is_null();
    append(out, "\n%s algorithms%s%s%s:\n", str(group["collective"]), forced ? " (" : "",
           forced ? str(group["setting"]) : "", forced ? ")" : "");
    for (const auto& entry : group["algorithms"]) {
      append(out, "  %-20s %s\n", str(entry["name"]), str(entry["description"]));
    }
  }
  const json& cost = info["cost_model"];
  append(out, "\ncost model: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B, inter_alpha %.3g s, inter_beta %.3g s/B\n",
         cost["alpha"].get<double>(), cost["beta"].get<double>(), cost["gamma"].get<double>(),
         cost["inter_alpha"].get<double>(), cost["inter_beta"].get<double>());
  append(out, "\ntransport: %s\n", str(info["transport"]["choice"]));
  append(out, "\nMPI CUDA-aware: %s (%s)\n", info["mpi_cuda_aware"]["supported"].get<bool>() ? "yes" : "no",
         str(info["mpi_cuda_aware"]["reason"]));
  append(out, "%s\n", str(info["nccl"]["summary"]));
  append(out, "%s\n", str(info["cuda"]["summary"]));
  return out;
}

}  // namespace concord
