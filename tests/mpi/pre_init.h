// What main() saw when it called the API before concord::init(): each field is "" when the
// call threw StateError as documented, else what went wrong.
#pragma once

#include <string>

namespace concord::mpitest {

struct PreInitObservation {
  bool initialized = true;  // is_initialized() before init(); must be false
  std::string rank = "not observed";
  std::string size = "not observed";
  std::string allreduce = "not observed";
  std::string allgather = "not observed";
  std::string broadcast = "not observed";
};

/// Filled by main() before init().
PreInitObservation& pre_init_observation();

}  // namespace concord::mpitest
