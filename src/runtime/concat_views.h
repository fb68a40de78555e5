// Concats done in place in a plan (fusion/concat_in_place.h): their input
// slots, and the output slots of views nested in a larger one, become
// children inside their root's slot. The arena places only the roots, each
// living from its earliest child's write to its last reader; a child's
// offset is its root's plus its offset within the root.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/executor.h"

namespace tessera::runtime {

// Makes slot `child` live at byte `offset` of slot `parent` (both Arena
// slots; the child not placed before, and inside the parent's bytes).
void place_in_parent(Plan& plan, int child, int parent, int64_t offset, const Step& view);

// Widens every root slot's live range over its children's (and theirs).
void widen_view_roots(Plan& plan);

// Sets every child slot's arena offset from its root's, once roots are placed.
void resolve_view_offsets(Plan& plan);

}  // namespace tessera::runtime
