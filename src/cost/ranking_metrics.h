// How well predicted costs rank measured ones (TenSet's metrics,
// research/costmodel.md §1.6). Each group is one task's candidates: measured
// costs (seconds) and predicted costs, both lower = faster.
#pragma once

#include <vector>

namespace tessera::cost {

using CostGroups = std::vector<std::vector<double>>;

// Over every pair i < j within a group whose measured costs differ, the
// fraction whose predicted order agrees (a tie in prediction counts half);
// groups are weighted by their number of such pairs. 0.5 when no group has a pair.
double pairwise_accuracy(const CostGroups& measured, const CostGroups& predicted);

// Average peak score@k: per group, the candidates ordered by predicted cost,
// the mean over i = 1..k of the best throughput (1 / measured cost) among the
// first i, relative to the group's best throughput (k is cut to the group's
// size); groups are weighted by their size.
double peak_score(const CostGroups& measured, const CostGroups& predicted, int k);

}  // namespace tessera::cost
