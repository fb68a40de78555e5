// A candidate program as one fixed-length row, for learned models that rank
// programs (xgb_model.h): its per-store rows (value_features.h) summed,
// the static model's program-level features (static_features.h), each
// log-compressed, then the hardware vector and the number of stores.
//
// Why one row per program rather than per store: XGBoost's pairwise ranking
// objective (rank:pairwise) compares rows of one query group, so each
// ranked item must be one row. Ansor's pack-sum instead scores each store
// and sums the scores, which needs a custom objective whose gradients are
// shared out over a program's rows; summing the rows first keeps the
// library's own objective, and the per-store structure is kept for the
// attention model, which reads the matrix itself.
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/hardware.h"
#include "cost/value_features.h"

namespace tessera::cost {

// sign(x) log2(1 + |x|), Ansor's compression of feature values.
double slog(double x);

// Every column's name and meaning, in row order: "sum_<value feature>",
// "static_<static feature>", "hw_<field>", "n_stores".
const std::vector<ColumnDoc>& program_feature_columns();

// The row of `candidate` on `hw` run by `threads` threads (0: hw.cores);
// machine-code features are zero without the candidate's JIT kernel.
std::vector<float> program_features(const Candidate& candidate, const HardwareDesc& hw, int threads = 0);

}  // namespace tessera::cost
