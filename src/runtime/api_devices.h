// The running process-wide runtime's devices (src/runtime/api.cc), for code inside the
// library's build tree that must fill or read device tensors submitted through the public
// API -- the MPI test suite on the strict emulated device (CONCORD_DEVICE=emulated), and
// the Python binding's device checks. Not part of the installed API.
#pragma once

#include "device/device.h"

namespace concord {

/// Device `index` of the runtime started by init() (TensorView::device's meaning). Valid
/// until shutdown(). Throws StateError before init(), InvalidArgument for an index the
/// runtime does not have, DeviceError when the device cannot be made.
Device& runtime_device(int index);

/// Number of devices of the runtime started by init(). Throws StateError before init().
int runtime_device_count();

}  // namespace concord
