// Registration hooks of the miscellaneous family (called from
// register_misc_ops).
#pragma once

#include "ops/registry.h"

namespace tessera {

void register_control_flow_ops(OpRegistry& r);  // If, Loop, Scan
void register_random_ops(OpRegistry& r);        // RandomNormal/Uniform(+Like), Bernoulli, Multinomial

}  // namespace tessera
