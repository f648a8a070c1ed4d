// libFuzzer target: the KVStore key check (src/kvstore/key_check.h). Rank 0 receives every
// rank's KeyHeader and every rank receives rank 0's Verdict as plain bytes; the fields
// (ndim, dtype, op, ranks listed, the detail text) are whatever the sender wrote. Input: a
// Verdict's bytes (shorter inputs are zero-padded). describe_verdict(), throw_if_bad() and
// same_request() must format or throw concord::Error, never read out of bounds.
#include <cstdint>
#include <cstring>
#include <string>

#include "concord/errors.h"
#include "kvstore/key_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using concord::kvstore::Verdict;
  Verdict verdict;
  std::memcpy(static_cast<void*>(&verdict), data, std::min(size, sizeof(Verdict)));
  try {
    const std::string text = concord::kvstore::describe_verdict(verdict);
    (void)text;
    (void)verdict.root.same_request(verdict.bad);
    concord::kvstore::throw_if_bad(verdict);
  } catch (const concord::Error&) {
  }
  return 0;
}
