// Slots inside other slots for concats done in place (concat_views.h).
#include "runtime/concat_views.h"

#include <algorithm>

#include "support/error.h"

namespace tessera::runtime {

namespace {

// A slot's root (the slot holding it, through its parents, that has no
// parent) and its byte offset inside that root.
struct RootPlace {
  int root;
  int64_t offset;
};

RootPlace root_of(const Plan& plan, int s) {
  int64_t offset = 0;
  for (;;) {
    const Slot& c = plan.slots[static_cast<size_t>(s)];
    if (c.parent < 0) return {s, offset};
    offset += c.parent_offset;
    s = c.parent;
  }
}

}  // namespace

void place_in_parent(Plan& plan, int child, int parent, int64_t offset, const Step& view) {
  Slot& c = plan.slots[static_cast<size_t>(child)];
  const Slot& p = plan.slots[static_cast<size_t>(parent)];
  // The concat's legality rules (fusion/concat_in_place.cpp) exclude all of
  // these: a failure here is a bug, not bad input.
  TESSERA_CHECK(c.kind == SlotKind::Arena && p.kind == SlotKind::Arena, view.node->describe(),
                ": a concat done in place needs its inputs and output in the arena");
  TESSERA_CHECK(c.parent < 0, view.node->describe(), ": input '", c.value ? c.value->name : "?",
                "' is already placed inside another concat's output");
  TESSERA_CHECK(c.dtype == p.dtype && offset >= 0 && offset + c.bytes <= p.bytes, view.node->describe(),
                ": input '", c.value ? c.value->name : "?", "' (", c.bytes, " bytes at ", offset,
                ") does not fit in the output (", p.bytes, " bytes)");
  c.parent = parent;
  c.parent_offset = offset;
}

void widen_view_roots(Plan& plan) {
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& c = plan.slots[i];
    if (c.parent < 0) continue;
    Slot& r = plan.slots[static_cast<size_t>(root_of(plan, static_cast<int>(i)).root)];
    r.first_step = std::min(r.first_step, c.first_step);
    r.last_step = std::max(r.last_step, c.last_step);
  }
}

void resolve_view_offsets(Plan& plan) {
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    Slot& c = plan.slots[i];
    if (c.parent < 0) continue;
    const RootPlace r = root_of(plan, static_cast<int>(i));
    c.offset = plan.slots[static_cast<size_t>(r.root)].offset + r.offset;
  }
}

}  // namespace tessera::runtime
