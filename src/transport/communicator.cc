#include "transport/communicator.h"

#include <thread>

#include "common/enforce.h"

namespace concord {

void wait_all(std::vector<RequestPtr>& requests) {
  size_t done = 0;
  while (done < requests.size()) {
    done = 0;
    for (auto& request : requests) {
      if (!request) {
        ++done;
      } else if (request->test()) {
        request.reset();
        ++done;
      }
    }
    if (done < requests.size()) std::this_thread::yield();
  }
  requests.clear();
}

}  // namespace concord

namespace concord {

void Communicator::native_allreduce(void*, size_t, DataType dtype, ReduceOp op) {
  CONCORD_THROW(InvalidArgument, "this transport has no native allreduce for ", dtype_name(dtype), " ",
                reduce_op_name(op));
}

std::unique_ptr<Communicator> Communicator::split(int, int) {
  CONCORD_THROW(InvalidArgument, "this transport cannot split its communicator");
}

}  // namespace concord
