// concord-info: prints every CONCORD_* configuration variable with its current value,
// default, type and meaning (the table of src/common/config.cc).
#include <cstdio>

#include "common/config.h"

int main() {
  for (const auto& var : concord::config_table()) {
    std::printf("%-26s = %-12s (default %s, %s)\n%28s%s\n", var.name,
                concord::config_value(var.name).c_str(), var.default_value, var.type, "", var.doc);
  }
  return 0;
}
