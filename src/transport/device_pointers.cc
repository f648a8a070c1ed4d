#include "transport/device_pointers.h"

#include <typeinfo>

#include "transport/communicator.h"

namespace concord {

DevicePointerSupport device_pointer_support(const Communicator& comm) {
  if (const auto* transport = dynamic_cast<const DevicePointerTransport*>(&comm)) {
    return transport->device_pointer_support();
  }
  return {false, "this transport moves host memory only"};
}

}  // namespace concord
