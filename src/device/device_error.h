// DeviceError: a device (GPU, or its emulation) reported a failure -- out of memory, a
// failed copy or kernel, no usable device. The message carries the device's own error text.
// Part of Concord's one exception family (concord::Error, include/concord/errors.h).
#pragma once

#include "concord/errors.h"

namespace concord {

class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace concord
