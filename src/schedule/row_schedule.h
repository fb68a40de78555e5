// The program-level row rule: blocks that are row-wise (layer norm, softmax
// and what surrounds them) run as one parallel loop over the output's rows,
// each row's reductions and shared values computed inside it.
#pragma once

#include <memory>

#include "schedule/schedule_rule.h"

namespace tessera::schedule {

std::unique_ptr<ScheduleRule> make_rows_rule();

}  // namespace tessera::schedule
