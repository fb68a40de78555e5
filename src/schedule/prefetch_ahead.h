// Lowering of the prefetch directive (schedule.h, DirectiveKind::Prefetch):
// a register-tiled product whose tiles walk the rows inside each column
// panel of a packed constant operand reads a panel from memory only in the
// panel's first tile (the others find it in cache). That tile streams the
// panel at the rate of its arithmetic, faster than memory delivers it (a
// model's weights do not stay in cache between runs), and stalls. With the
// directive, every tile of a panel prefetches a share of the next panel
// while it computes: tile t (A tiles to a panel) touches, every S steps of
// the reduction, the row the tile t + A reads at that S-block's step
// (t mod A) mod S, so the A tiles between them cover every row of the next
// panel, a few lines at a time.
#pragma once

#include "loop/stmt.h"
#include "schedule/schedule.h"

namespace tessera::schedule {

// `body` (flattened loop IR) with the prefetches of `step` (a Prefetch
// directive) at the start of its reduction loop's body, reading `input`
// (the storage buffer of the step's input stage). Throws tessera::Error
// naming the step when its loops or the input's reads are not in `body`.
loop::Stmt insert_prefetch(const loop::Stmt& body, const Directive& step, const loop::Buffer& input);

}  // namespace tessera::schedule
