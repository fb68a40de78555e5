// Program rows for learned models (see program_features.h).
#include "cost/program_features.h"

#include <cmath>

#include "cost/static_features.h"

namespace tessera::cost {

double slog(double x) { return std::copysign(std::log2(1 + std::abs(x)), x); }

const std::vector<ColumnDoc>& program_feature_columns() {
  static const std::vector<ColumnDoc> columns = [] {
    std::vector<ColumnDoc> c;
    for (const ColumnDoc& d : value_feature_columns())
      c.push_back({"sum_" + d.name, "slog of the sum over the program's stores of: " + d.doc});
    for (int i = 0; i < kFeatureCount; ++i) {
      const std::string name(feature_name(static_cast<Feature>(i)));
      c.push_back({"static_" + name, "slog of the static model's feature " + name});
    }
    for (const ColumnDoc& d : hardware_feature_columns()) c.push_back(d);
    c.push_back({"n_stores", "store statements in the program"});
    return c;
  }();
  return columns;
}

std::vector<float> program_features(const Candidate& candidate, const HardwareDesc& hw, int threads) {
  std::vector<float> row;
  row.reserve(program_feature_columns().size());
  const ValueFeatures vf = value_features(*candidate.kernel, hw);
  std::vector<double> sum(kValueFeatureCount, 0.0);
  for (const std::vector<double>& r : vf.rows)
    for (int i = 0; i < kValueFeatureCount; ++i) sum[static_cast<size_t>(i)] += r[static_cast<size_t>(i)];
  for (double x : sum) row.push_back(static_cast<float>(slog(x)));
  const StaticFeatures sf = static_features(candidate, hw, threads);
  for (double x : sf.v) row.push_back(static_cast<float>(slog(x)));
  for (double x : hardware_features(hw)) row.push_back(static_cast<float>(x));
  row.push_back(static_cast<float>(vf.rows.size()));
  return row;
}

}  // namespace tessera::cost
