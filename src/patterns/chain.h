// Pure rank arithmetic of a chain (a ring cut open at the root): root -> root+1 -> ... ->
// root+P-1 (mod P), as a pipelined chain broadcast uses it. P-1 hops.
#pragma once

#include "patterns/ring.h"

namespace concord::patterns {

struct Chain {
  int rank;
  int size;
  int root;

  /// Position along the chain: 0 at the root, size-1 at the end.
  constexpr int position() const { return mod(rank - root, size); }
  /// The rank before this one, or -1 at the root.
  constexpr int previous() const { return position() == 0 ? -1 : mod(rank - 1, size); }
  /// The rank after this one, or -1 at the end of the chain.
  constexpr int next() const { return position() == size - 1 ? -1 : mod(rank + 1, size); }
};

}  // namespace concord::patterns
