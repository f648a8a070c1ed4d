// libFuzzer target: the KVStore key check (src/kvstore/key_check.h, key_digest.h). Rank 0
// receives every rank's KeyHeader and every rank receives rank 0's Verdict as plain bytes;
// the fields (ndim, dtype, op, ranks listed, the detail text) are whatever the sender
// wrote; a push's fast path receives KeyDigest words. Input: a Verdict's bytes, then a
// reduced KeyDigest's (shorter inputs are zero-padded). describe_verdict(),
// throw_if_bad() and same_request() must format or throw concord::Error, never read out of
// bounds; KeyDigest::all_agree() and KeyDigest::of() must accept any bits.
#include <cstdint>
#include <cstring>
#include <string>

#include "concord/errors.h"
#include "kvstore/key_check.h"
#include "kvstore/key_digest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using concord::kvstore::Verdict;
  Verdict verdict;
  std::memcpy(static_cast<void*>(&verdict), data, std::min(size, sizeof(Verdict)));
  concord::kvstore::KeyDigest digest;
  if (size > sizeof(Verdict))
    std::memcpy(digest.words.data(), data + sizeof(Verdict), std::min(size - sizeof(Verdict), sizeof digest.words));
  (void)digest.all_agree();
  (void)concord::kvstore::KeyDigest::of(verdict.bad, true).all_agree();
  try {
    const std::string text = concord::kvstore::describe_verdict(verdict);
    (void)text;
    (void)verdict.root.same_request(verdict.bad);
    concord::kvstore::throw_if_bad(verdict);
  } catch (const concord::Error&) {
  }
  return 0;
}
