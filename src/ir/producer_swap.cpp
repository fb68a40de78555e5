// Two values trading their producers (producer_swap.h).
#include "ir/producer_swap.h"

#include <utility>

#include "support/error.h"

namespace tessera {

void swap_producers(Value* a, Value* b) {
  TESSERA_CHECK(a->producer && b->producer, "swap_producers: value '", a->producer ? b->name : a->name,
                "' has no producer");
  a->producer->outputs[static_cast<size_t>(a->producer_output)] = b;
  b->producer->outputs[static_cast<size_t>(b->producer_output)] = a;
  std::swap(a->producer, b->producer);
  std::swap(a->producer_output, b->producer_output);
}

}  // namespace tessera
