// How well predicted costs rank measured ones (TenSet's metrics,
// research/costmodel.md §1.6). Each group is one task's candidates: measured
// costs (seconds) and predicted costs, both lower = faster.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::cost {

using CostGroups = std::vector<std::vector<double>>;

// A learned model's scores (higher = faster) as the costs these metrics and
// CostModel::predict take (lower = faster), ranking the candidates alike:
// the scores negated.
std::vector<double> costs_from_scores(std::vector<double> scores);

// Over every pair i < j within a group whose measured costs differ, the
// fraction whose predicted order agrees (a tie in prediction counts half);
// groups are weighted by their number of such pairs. 0.5 when no group has a pair.
double pairwise_accuracy(const CostGroups& measured, const CostGroups& predicted);
// The number of pairs pairwise_accuracy counts (measured costs differ).
long comparable_pairs(const CostGroups& measured);
// TenSet's form of it: each group's pairwise accuracy, averaged over the
// groups that have a pair, weighted by group size. 0.5 when none has one.
double per_task_pairwise_accuracy(const CostGroups& measured, const CostGroups& predicted);
// A bootstrap interval of pairwise_accuracy: the groups resampled with
// replacement `draws` times (pairs within a group are not independent, so
// groups are the unit), the central `level` of the resampled accuracies.
// Deterministic for a seed.
struct Interval {
  double low = 0, high = 0;
};
Interval pairwise_interval(const CostGroups& measured, const CostGroups& predicted, double level = 0.95,
                           int draws = 2000, uint64_t seed = 1);

// Average peak score@k: per group, the candidates ordered by predicted cost,
// the mean over i = 1..k of the best throughput (1 / measured cost) among the
// first i, relative to the group's best throughput (k is cut to the group's
// size); groups are weighted by their size.
double peak_score(const CostGroups& measured, const CostGroups& predicted, int k);

// Top-k recall: per group, |predicted top k ∩ measured top k| / k, the top
// k being the k lowest costs (k cut to the group's size; ties in the
// measured costs broken by position); groups weighted by their size.
double top_k_recall(const CostGroups& measured, const CostGroups& predicted, int k);

// Network top-k score (TenSet's end-to-end metric): with w_t the times task
// t runs in the network, L*_t its best measured cost and π_t its
// candidates ordered by predicted cost,
//   sum_t w_t L*_t / sum_t w_t min_{i<=k} L_t(π_t(i)),
// the network's latency with every task at its best over the latency with
// each at the best of the k the model ranks first (1: the model's first k
// hold every best). Empty groups are skipped.
double network_top_k_score(const CostGroups& measured, const CostGroups& predicted, const std::vector<double>& weights,
                           int k);

}  // namespace tessera::cost
