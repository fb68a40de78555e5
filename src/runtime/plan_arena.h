// A plan's activation arena: once every step is bound and the views of
// concats done in place are placed (concat_views.h), each Arena slot that
// is a root gets an offset in one arena laid out by layout_arena
// (arena_layout.h) over its live range, and a step with one output may write
// it over an input that dies at that step.
#pragma once

#include "runtime/executor.h"

namespace tessera::runtime {

// Sets every Arena slot's offset and plan.arena_layout. Slots inside a
// concat's output get no buffer of their own, so no step overwrites one in
// place, nor writes in place into one. Throws when the activations live at
// once need more than this machine's memory.
void place_arena_slots(Plan& plan);

}  // namespace tessera::runtime
