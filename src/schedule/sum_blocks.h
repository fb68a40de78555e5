// A contraction's reduction summed in blocks of a few hundred terms, each
// block's sum added to the total: fewer rounding errors than one chain over
// thousands of terms.
#pragma once

#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// Whether summing in blocks applies: a sum over constant extents longer than
// two blocks.
bool can_sum_blocks(const te::Stage& st);

// Splits the local stage's reduction (loops `order`, outermost first, the
// first `reduce` of them reduction loops) into blocks; returns the loop
// whose iterations are one block's terms (the accumulate loop), "" when the
// reduction is one block.
std::string sum_block_loop(Schedule& s, const te::Stage& st, const std::string& local, std::vector<std::string>& order,
                           size_t reduce);

}  // namespace tessera::schedule
