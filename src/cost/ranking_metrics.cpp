// Ranking metrics (see ranking_metrics.h).
#include "cost/ranking_metrics.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <numeric>
#include <random>

#include "support/error.h"

namespace tessera::cost {

std::vector<double> costs_from_scores(std::vector<double> scores) {
  for (double& s : scores) s = -s;
  return scores;
}

namespace {

void check_shapes(const CostGroups& measured, const CostGroups& predicted) {
  TESSERA_CHECK(measured.size() == predicted.size(), "ranking metrics: ", measured.size(), " measured groups, ",
                predicted.size(), " predicted");
  for (size_t g = 0; g < measured.size(); ++g)
    TESSERA_CHECK(measured[g].size() == predicted[g].size(), "ranking metrics: group ", g, " has ",
                  measured[g].size(), " measured costs, ", predicted[g].size(), " predicted");
}

// The group's indices ordered by cost (lowest first; ties by position).
std::vector<size_t> order_by(const std::vector<double>& cost) {
  std::vector<size_t> order(cost.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] < cost[b]; });
  return order;
}

// A group's pairs whose measured costs differ, and how many of them the
// prediction orders alike (a tie in prediction counts half).
struct PairCount {
  double agree = 0;
  long pairs = 0;
};
PairCount count_pairs(const std::vector<double>& y, const std::vector<double>& p) {
  PairCount c;
  for (size_t i = 0; i < y.size(); ++i)
    for (size_t j = i + 1; j < y.size(); ++j) {
      if (y[i] == y[j]) continue;
      c.pairs += 1;
      if (p[i] == p[j]) c.agree += 0.5;
      else if ((p[i] < p[j]) == (y[i] < y[j])) c.agree += 1;
    }
  return c;
}

}  // namespace

double pairwise_accuracy(const CostGroups& measured, const CostGroups& predicted) {
  check_shapes(measured, predicted);
  double agree = 0, pairs = 0;
  for (size_t g = 0; g < measured.size(); ++g) {
    const PairCount c = count_pairs(measured[g], predicted[g]);
    agree += c.agree;
    pairs += static_cast<double>(c.pairs);
  }
  // Weighting each group's accuracy by its pair count is the pooled fraction.
  return pairs > 0 ? agree / pairs : 0.5;
}

long comparable_pairs(const CostGroups& measured) {
  long pairs = 0;
  for (const std::vector<double>& y : measured) pairs += count_pairs(y, y).pairs;
  return pairs;
}

double per_task_pairwise_accuracy(const CostGroups& measured, const CostGroups& predicted) {
  check_shapes(measured, predicted);
  double total = 0, weight = 0;
  for (size_t g = 0; g < measured.size(); ++g) {
    const PairCount c = count_pairs(measured[g], predicted[g]);
    if (c.pairs == 0) continue;
    const double n = static_cast<double>(measured[g].size());
    total += n * c.agree / static_cast<double>(c.pairs);
    weight += n;
  }
  return weight > 0 ? total / weight : 0.5;
}

Interval pairwise_interval(const CostGroups& measured, const CostGroups& predicted, double level, int draws,
                           uint64_t seed) {
  check_shapes(measured, predicted);
  TESSERA_CHECK(level > 0 && level < 1 && draws >= 1, "pairwise interval: level ", level, ", draws ", draws);
  std::vector<PairCount> counts;
  for (size_t g = 0; g < measured.size(); ++g) counts.push_back(count_pairs(measured[g], predicted[g]));
  if (counts.empty()) return {0.5, 0.5};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, counts.size() - 1);
  std::vector<double> acc;
  for (int d = 0; d < draws; ++d) {
    double agree = 0, pairs = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const PairCount& c = counts[pick(rng)];
      agree += c.agree;
      pairs += static_cast<double>(c.pairs);
    }
    acc.push_back(pairs > 0 ? agree / pairs : 0.5);
  }
  std::sort(acc.begin(), acc.end());
  auto at = [&](double q) {
    const size_t i = static_cast<size_t>(std::llround(q * static_cast<double>(acc.size() - 1)));
    return acc[std::min(i, acc.size() - 1)];
  };
  return {at((1 - level) / 2), at((1 + level) / 2)};
}

double peak_score(const CostGroups& measured, const CostGroups& predicted, int k) {
  check_shapes(measured, predicted);
  TESSERA_CHECK(k >= 1, "peak score: k must be at least 1, got ", k);
  double total = 0, weight = 0;
  for (size_t g = 0; g < measured.size(); ++g) {
    const std::vector<double>& y = measured[g];
    const std::vector<double>& p = predicted[g];
    if (y.empty()) continue;
    for (double c : y) TESSERA_CHECK(c > 0, "peak score: measured costs must be positive, got ", c);
    std::vector<size_t> order(y.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
    double best = 1 / *std::min_element(y.begin(), y.end());
    size_t n = std::min(order.size(), static_cast<size_t>(k));
    double running = 0, score = 0;
    for (size_t i = 0; i < n; ++i) {
      running = std::max(running, 1 / y[order[i]]);
      score += running / best;
    }
    total += score / static_cast<double>(n) * static_cast<double>(y.size());
    weight += static_cast<double>(y.size());
  }
  return weight > 0 ? total / weight : 0;
}

double top_k_recall(const CostGroups& measured, const CostGroups& predicted, int k) {
  check_shapes(measured, predicted);
  TESSERA_CHECK(k >= 1, "top-k recall: k must be at least 1, got ", k);
  double total = 0, weight = 0;
  for (size_t g = 0; g < measured.size(); ++g) {
    const size_t n = std::min(measured[g].size(), static_cast<size_t>(k));
    if (n == 0) continue;
    std::vector<size_t> truth = order_by(measured[g]), guess = order_by(predicted[g]);
    truth.resize(n);
    guess.resize(n);
    std::sort(truth.begin(), truth.end());
    std::sort(guess.begin(), guess.end());
    std::vector<size_t> both;
    std::set_intersection(truth.begin(), truth.end(), guess.begin(), guess.end(), std::back_inserter(both));
    const double size = static_cast<double>(measured[g].size());
    total += static_cast<double>(both.size()) / static_cast<double>(n) * size;
    weight += size;
  }
  return weight > 0 ? total / weight : 0;
}

double network_top_k_score(const CostGroups& measured, const CostGroups& predicted, const std::vector<double>& weights,
                           int k) {
  check_shapes(measured, predicted);
  TESSERA_CHECK(k >= 1, "network top-k score: k must be at least 1, got ", k);
  TESSERA_CHECK(weights.size() == measured.size(), "network top-k score: ", weights.size(), " weights for ",
                measured.size(), " groups");
  double best = 0, chosen = 0;
  for (size_t g = 0; g < measured.size(); ++g) {
    const std::vector<double>& y = measured[g];
    if (y.empty()) continue;
    const std::vector<size_t> guess = order_by(predicted[g]);
    double first_k = y[guess[0]];
    for (size_t i = 1; i < guess.size() && i < static_cast<size_t>(k); ++i) first_k = std::min(first_k, y[guess[i]]);
    best += weights[g] * *std::min_element(y.begin(), y.end());
    chosen += weights[g] * first_k;
  }
  return chosen > 0 ? best / chosen : 0;
}

}  // namespace tessera::cost
