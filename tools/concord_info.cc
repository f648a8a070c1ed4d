// concord-info: prints every CONCORD_* configuration variable with its current value,
// default, type and meaning (the table of src/common/config.cc), then every registered
// algorithm of every collective with its description (src/algorithms/registry.cc) and the
// cost-model constants in effect (CostParams::from_env), the device-buffer allreduce
// algorithms and the CUDA status ("CUDA: built, no usable device (<reason>)" where the
// build has CUDA but the machine has no usable GPU). `concord-info --version` prints the
// version only.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "algorithms/registry.h"
#include "common/config.h"
#include "concord/version.h"
#include "device/cuda_status.h"
#include "device/device_registry.h"

namespace {

template <typename Entry>
void print_algorithms(const char* collective, const char* variable, const std::vector<Entry>& entries) {
  std::printf("\n%s algorithms%s%s%s:\n", collective, *variable ? " (" : "", variable, *variable ? ")" : "");
  for (const auto& entry : entries) std::printf("  %-20s %s\n", entry.name.c_str(), entry.description.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Prints every CONCORD_* setting, every registered algorithm and the cost model.", "concord-info"};
  app.set_version_flag("--version", "concord-info " CONCORD_VERSION_STRING);
  CLI11_PARSE(app, argc, argv);
  for (const auto& var : concord::config_table()) {
    std::printf("%-26s = %-12s (default %s, %s)\n%28s%s\n", var.name,
                concord::config_value(var.name).c_str(), var.default_value, var.type, "", var.doc);
  }
  print_algorithms("allreduce", "CONCORD_ALLREDUCE_ALGORITHM", concord::allreduce_algorithms());
  print_algorithms("allgather", "CONCORD_ALLGATHER_ALGORITHM", concord::allgather_algorithms());
  print_algorithms("broadcast", "CONCORD_BROADCAST_ALGORITHM", concord::broadcast_algorithms());
  print_algorithms("reduce-scatter", "", concord::reduce_scatter_algorithms());
  print_algorithms("alltoall", "", concord::alltoall_algorithms());
  print_algorithms("device-buffer allreduce", "", concord::device_allreduce_algorithms());
  const auto cost = concord::CostParams::from_env();
  std::printf("\ncost model: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B, inter_alpha %.3g s, inter_beta %.3g s/B\n",
              cost.alpha, cost.beta, cost.gamma, cost.inter_alpha, cost.inter_beta);
  std::printf("\n%s\n", concord::cuda_status().summary().c_str());
  return 0;
}
