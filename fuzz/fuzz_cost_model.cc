// libFuzzer target: the cost-model file parser (CostParams::parse, src/algorithms/
// cost_model.h), which reads the file named by CONCORD_COST_MODEL or
// ~/.cache/concord/cost_model.json. Input: the file's text. It must parse to finite,
// non-negative constants or throw concord::InvalidArgument.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "algorithms/cost_model.h"
#include "concord/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const concord::CostParams params = concord::CostParams::parse(text, "fuzz");
    for (double value : {params.alpha, params.beta, params.gamma, params.inter_alpha, params.inter_beta,
                         params.mpi_alpha, params.mpi_beta})
      if (!(value >= 0) || !std::isfinite(value)) std::abort();
  } catch (const concord::InvalidArgument&) {
  }
  return 0;
}
