// Submission-time checks of one collective request against its buffers (the rules of
// include/concord/concord.h): everything a rank can tell on its own is an InvalidArgument
// raised by the enqueue call itself, naming the tensor and what is wrong; what needs the
// other ranks (shapes, dtypes, ops agreeing) is left to the coordinator.
#pragma once

#include "concord/types.h"
#include "control/message.h"
#include "device/device_set.h"

namespace concord {

/// Throws InvalidArgument if `request` (name, type, op, scale factors, root, splits; dtype
/// and shape already taken from `input`) cannot run on `input`/`output` in a world of
/// `size` ranks where this rank is `rank`.
void validate(const Request& request, const TensorView& input, const TensorView& output, int size, int rank);

/// Checks where `input` and `output` live and returns the device name for the request
/// ("" for host memory, else DeviceSet::name). Device tensors are accepted by every
/// collective with data (allreduce except with the Adasum op, allgather, broadcast,
/// reduce-scatter, alltoall); the output must be on the input's device. Throws
/// InvalidArgument naming the tensor, the collective and the device for an unknown device
/// index, an Adasum allreduce of a device tensor or memory that differs between input and
/// output.
std::string validate_device(const Request& request, const TensorView& input, const TensorView& output,
                            const DeviceSet& devices);

}  // namespace concord
