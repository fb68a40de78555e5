// Placing a plan's arena slots (see plan_arena.h).
#include "runtime/plan_arena.h"

#include <vector>

#include "runtime/arena_layout.h"
#include "runtime/concat_views.h"
#include "support/error.h"
#include "support/memory.h"

namespace tessera::runtime {

namespace {

// True when step `st` reads a slot placed inside root slot `root` (views
// hang directly under their root).
bool reads_inside(const Plan& plan, const Step& st, int root) {
  for (int s : st.inputs)
    if (s >= 0 && plan.slots[static_cast<size_t>(s)].parent == root) return true;
  return false;
}

}  // namespace

void place_arena_slots(Plan& plan) {
  widen_view_roots(plan);
  std::vector<BufferRequest> reqs;
  std::vector<int> req_of(plan.slots.size(), -1);
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& s = plan.slots[i];
    if (s.kind != SlotKind::Arena || s.parent >= 0) continue;
    req_of[i] = static_cast<int>(reqs.size());
    reqs.push_back({s.bytes, s.first_step, s.last_step, 64, -1});
  }
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& st = plan.steps[si];
    int64_t step = static_cast<int64_t>(si);
    if (st.view) continue;
    int present = 0;
    for (int o : st.outputs) present += o >= 0;
    // A reference step's output is copied into its slot after the kernel ran,
    // so it may overwrite any dying input; a compiled step only an input its
    // kernel reads element for element (Step::in_place).
    if (present != 1) continue;
    int out = -1;
    for (int o : st.outputs)
      if (o >= 0) out = o;
    if (req_of[static_cast<size_t>(out)] < 0) continue;
    const Slot& os = plan.slots[static_cast<size_t>(out)];
    for (size_t k = 0; k < st.inputs.size(); ++k) {
      int in = st.inputs[k];
      if (in < 0 || req_of[static_cast<size_t>(in)] < 0) continue;
      if (st.compiled && !(k < st.in_place.size() && st.in_place[k])) continue;
      const Slot& is = plan.slots[static_cast<size_t>(in)];
      if (is.last_step != step || is.first_step >= step) continue;
      if (reads_inside(plan, st, in)) continue;  // a view of it read too would see the output's writes
      bool fits = st.compiled ? (is.bytes == os.bytes && dtype_size(is.dtype) == dtype_size(os.dtype))
                              : is.bytes >= os.bytes;
      if (!fits) continue;
      reqs[static_cast<size_t>(req_of[static_cast<size_t>(out)])].inplace_of = req_of[static_cast<size_t>(in)];
      break;
    }
  }
  plan.arena_layout = layout_arena(reqs);
  // Each value fits (ConcreteTypes checked), but all live at once may not.
  TESSERA_CHECK(plan.arena_layout.arena_bytes <= memory_limit_bytes(), "the model's activations need ",
                format_bytes(plan.arena_layout.arena_bytes), " at their peak, more than this machine's memory (", format_bytes(memory_limit_bytes()), ")");
  for (size_t i = 0; i < plan.slots.size(); ++i)
    if (req_of[i] >= 0) plan.slots[i].offset = plan.arena_layout.offsets[static_cast<size_t>(req_of[i])];
  resolve_view_offsets(plan);
}

}  // namespace tessera::runtime
