#include "transport/request_set.h"

#include "common/backoff.h"

namespace concord {

void RequestSet::wait() {
  Backoff backoff;
  while (!reap()) backoff.wait();
}

}  // namespace concord
