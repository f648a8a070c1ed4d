// What this build offers (info/build_info.h): the JSON document, and concord-info's text
// rendered from it, so the two forms cannot disagree.
#include "info/build_info.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "common/config.h"
#include "common/enforce.h"
#include "concord/version.h"
#include "device/cuda_status.h"
#include "device/nccl/nccl_api.h"
#include "sparse/sparse_allreduce.h"
#include "transport/device_pointers.h"
#include "transport/launch_environment.h"
#include "transport/rendezvous/open_store.h"
#include "transport/rendezvous/pmix_exchange.h"
#include "transport/transport_world.h"
#include "transport/ucx_world.h"

namespace concord {
namespace {

using json = nlohmann::ordered_json;  // keys in the documented order

// {"collective", "setting", "algorithms": [{"name", "description"[, "memory"]}]} of one
// registry ("memory": "host" or "device", for the registries whose rows say).
template <typename Entries>
json collective(const char* name, const char* setting, const Entries& entries) {
  json algorithms = json::array();
  for (const auto& entry : entries) {
    json row = {{"name", entry.name}, {"description", entry.description}};
    if constexpr (requires { entry.memory; }) row["memory"] = entry.memory == MemoryKind::kHost ? "host" : "device";
    algorithms.push_back(row);
  }
  return {{"collective", name}, {"setting", setting ? json(setting) : json(nullptr)}, {"algorithms", algorithms}};
}

// The HOROVOD_* variables of the environment that no row names (neither a Horovod alias
// nor an ignored Horovod variable): a misspelt or newer Horovod setting, ignored.
json unknown_horovod_variables() {
  json names = json::array();
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name.rfind("HOROVOD_", 0) != 0) continue;
    const auto& table = config_table();
    const bool known = std::any_of(table.begin(), table.end(), [&](const ConfigVar& var) {
      return name == var.name || (var.horovod_name != nullptr && name == var.horovod_name);
    });
    if (!known) names.push_back(name);
  }
  return names;
}

json document() {
  json settings = json::array();
  for (const auto& var : config_table()) {
    const ConfigSetting setting = config_setting(var);
    settings.push_back({{"name", var.name},
                        {"horovod_name", var.horovod_name ? json(var.horovod_name) : json(nullptr)},
                        {"default", var.default_value},
                        {"value", setting.text},
                        {"source", setting.source},
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
          {"transport",
           {{"ucx_built", ucx_available()},
            {"pmix_built", rendezvous::pmix_available()},
            {"choice", transport},
            {"rendezvous", rendezvous::describe_rendezvous(read_launch_environment(), config_value("CONCORD_STORE"))}}},
          {"settings", settings},
          {"unknown_horovod_variables", unknown_horovod_variables()},
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
    const std::string source = var["source"];
    const bool set = source != "default";
    if (var["type"] == "ignored") {  // a Horovod variable without meaning here
      append(out, "%-26s   ignored%s%s%s (Horovod; %s)\n", str(var["name"]), set ? ": set to '" : "",
             set ? str(var["value"]) : "", set ? "'" : "", str(var["doc"]));
      continue;
    }
    const std::string alias =
        var["horovod_name"].is_null() ? "" : "; Horovod: " + var["horovod_name"].get<std::string>();
    const std::string origin = set ? "set by " + source + ", " : "";
    append(out, "%-26s = %-12s (%sdefault %s, %s%s%s)\n%28s%s\n", str(var["name"]), str(var["value"]), origin.c_str(),
           str(var["default"]), str(var["type"]), var["shared"].get<bool>() ? "; every rank uses rank 0's" : "",
           alias.c_str(), "", str(var["doc"]));
  }
  for (const auto& name : info["unknown_horovod_variables"])
    append(out, "%-26s   ignored: not a Horovod setting Concord knows\n", str(name));
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
  append(out, "UCX rendezvous: %s (PMIx %s)\n", str(info["transport"]["rendezvous"]),
         info["transport"]["pmix_built"].get<bool>() ? "built in" : "not built");
  append(out, "\nMPI CUDA-aware: %s (%s)\n", info["mpi_cuda_aware"]["supported"].get<bool>() ? "yes" : "no",
         str(info["mpi_cuda_aware"]["reason"]));
  append(out, "%s\n", str(info["nccl"]["summary"]));
  append(out, "%s\n", str(info["cuda"]["summary"]));
  return out;
}

}  // namespace concord
