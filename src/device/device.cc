#include "device/device.h"

namespace concord {

const char* copy_kind_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return "h2d";
    case CopyKind::kDeviceToHost: return "d2h";
    case CopyKind::kDeviceToDevice: return "d2d";
  }
  return "unknown";
}

}  // namespace concord
