// Pruning a cost-model dataset (see dataset_prune.h).
#include "cost/dataset_prune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "support/error.h"
#include "support/name_table.h"

namespace tessera::cost {

namespace {

constexpr Named<PruneMethod> kMethods[] = {
    {PruneMethod::Random, "random"},
    {PruneMethod::Cluster, "cluster"},
    {PruneMethod::Loss, "loss"},
    {PruneMethod::Twins, "twins"},
};

// A generator for one group, from the seed and the group's position.
std::mt19937_64 group_rng(uint64_t seed, size_t group) { return std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + group); }

std::vector<bool> keep_random(size_t n, size_t k, std::mt19937_64& rng) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> kept(n, false);
  for (size_t i = 0; i < k; ++i) kept[order[i]] = true;
  return kept;
}

// The group's rows, each column standardised over the group (a constant column is zero).
std::vector<std::vector<double>> standardised(const std::vector<std::vector<float>>& rows) {
  const size_t n = rows.size(), f = rows.empty() ? 0 : rows.front().size();
  std::vector<std::vector<double>> z(n, std::vector<double>(f, 0.0));
  for (size_t c = 0; c < f; ++c) {
    double s = 0, ss = 0;
    for (const std::vector<float>& r : rows) {
      TESSERA_CHECK(r.size() == f, "prune: rows of ", f, " and ", r.size(), " columns in one group");
      s += r[c];
      ss += static_cast<double>(r[c]) * r[c];
    }
    const double mean = s / static_cast<double>(n), var = ss / static_cast<double>(n) - mean * mean;
    if (var <= 1e-12) continue;
    for (size_t i = 0; i < n; ++i) z[i][c] = (rows[i][c] - mean) / std::sqrt(var);
  }
  return z;
}

double distance2(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t c = 0; c < a.size(); ++c) d += (a[c] - b[c]) * (a[c] - b[c]);
  return d;
}

// k-means (k-means++ seeding, Lloyd's iterations) over the group's
// standardised rows; the member nearest each centre kept (the next nearest
// not yet kept when two centres share one).
std::vector<bool> keep_cluster(const std::vector<std::vector<float>>& rows, size_t k, std::mt19937_64& rng) {
  const size_t n = rows.size();
  std::vector<bool> kept(n, false);
  const std::vector<std::vector<double>> z = standardised(rows);
  std::vector<std::vector<double>> centres{z[std::uniform_int_distribution<size_t>(0, n - 1)(rng)]};
  std::vector<double> near(n, std::numeric_limits<double>::infinity());
  while (centres.size() < k) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += near[i] = std::min(near[i], distance2(z[i], centres.back()));
    size_t pick = 0;
    if (total > 0) {
      double at = std::uniform_real_distribution<double>(0, total)(rng);
      while (pick + 1 < n && (at -= near[pick]) > 0) ++pick;
    } else {
      pick = std::uniform_int_distribution<size_t>(0, n - 1)(rng);  // every row alike: any will do
    }
    centres.push_back(z[pick]);
  }
  std::vector<size_t> member(n, 0);
  for (int iter = 0; iter < 20; ++iter) {
    bool moved = false;
    for (size_t i = 0; i < n; ++i) {
      size_t best = 0;
      for (size_t c = 1; c < k; ++c)
        if (distance2(z[i], centres[c]) < distance2(z[i], centres[best])) best = c;
      moved |= best != member[i] || iter == 0;
      member[i] = best;
    }
    if (!moved) break;
    for (size_t c = 0; c < k; ++c) {
      std::vector<double> sum(z.front().size(), 0.0);
      size_t count = 0;
      for (size_t i = 0; i < n; ++i)
        if (member[i] == c) {
          for (size_t f = 0; f < sum.size(); ++f) sum[f] += z[i][f];
          ++count;
        }
      if (count == 0) continue;  // an empty cluster keeps its centre
      for (double& s : sum) s /= static_cast<double>(count);
      centres[c] = std::move(sum);
    }
  }
  for (size_t c = 0; c < k; ++c) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i)
      if (!kept[i] && (best == n || distance2(z[i], centres[c]) < distance2(z[best], centres[c]))) best = i;
    kept[best] = true;
  }
  return kept;
}

// The group's fastest kept, then the programs of highest mean RankNet loss
// log(1 + e^-(s_fast - s_slow)) over their pairs of different cost under
// the first model's scores `s` (higher = faster).
std::vector<bool> keep_loss(const RankGroup& g, const std::vector<double>& s, size_t k) {
  const size_t n = g.rows.size();
  std::vector<double> loss(n, 0.0);
  std::vector<int> pairs(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      if (g.seconds[i] == g.seconds[j]) continue;
      const bool i_fast = g.seconds[i] < g.seconds[j];
      const double margin = i_fast ? s[i] - s[j] : s[j] - s[i];
      const double l = std::log1p(std::exp(-margin));
      loss[i] += l;
      loss[j] += l;
      ++pairs[i];
      ++pairs[j];
    }
  for (size_t i = 0; i < n; ++i)
    if (pairs[i]) loss[i] /= pairs[i];
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const size_t fastest = static_cast<size_t>(std::min_element(g.seconds.begin(), g.seconds.end()) - g.seconds.begin());
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((a == fastest) != (b == fastest)) return a == fastest;
    return loss[a] > loss[b];
  });
  std::vector<bool> kept(n, false);
  for (size_t i = 0; i < k; ++i) kept[order[i]] = true;
  return kept;
}

// The twins method (see the header). Each family's programs are taken in a
// drawn order; each keeps its drawn number of copies in the groups that have
// kept the smallest share of their programs so far, so every group ends near
// the share. Then a group left with fewer than a pair keeps more, drawn.
std::vector<std::vector<bool>> keep_twins(const std::vector<RankGroup>& groups, const std::vector<PruneTwins>& twins,
                                          double keep, uint64_t seed) {
  using Copy = std::pair<size_t, size_t>;  // group, program
  std::map<std::string, std::map<std::string, std::vector<Copy>>> families;
  std::vector<std::vector<bool>> kept(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    TESSERA_CHECK(twins[gi].programs.size() == groups[gi].rows.size(), "prune twins: group ", gi, " has ",
                  groups[gi].rows.size(), " programs but ", twins[gi].programs.size(), " program keys");
    kept[gi].assign(groups[gi].rows.size(), false);
    for (size_t k = 0; k < twins[gi].programs.size(); ++k)
      families[twins[gi].family][twins[gi].programs[k]].push_back({gi, k});
  }
  std::vector<size_t> count(groups.size(), 0);
  auto fill = [&](size_t g) { return static_cast<double>(count[g]) / static_cast<double>(groups[g].rows.size()); };
  std::uniform_real_distribution<double> u(0, 1);
  size_t fi = 0;
  for (auto& [family, programs] : families) {
    std::mt19937_64 rng = group_rng(seed ^ 0x7477696E73ull, fi++);
    std::vector<std::vector<Copy>*> order;
    for (auto& [key, copies] : programs) order.push_back(&copies);
    std::shuffle(order.begin(), order.end(), rng);
    for (std::vector<Copy>* copies : order) {
      const double want = keep * static_cast<double>(copies->size());
      size_t n = static_cast<size_t>(std::floor(want + u(rng)));
      if (want >= 1) n = std::max<size_t>(n, 1);
      n = std::min(n, copies->size());
      std::shuffle(copies->begin(), copies->end(), rng);
      std::stable_sort(copies->begin(), copies->end(), [&](const Copy& a, const Copy& b) { return fill(a.first) < fill(b.first); });
      for (size_t i = 0; i < n; ++i) {
        kept[(*copies)[i].first][(*copies)[i].second] = true;
        ++count[(*copies)[i].first];
      }
    }
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const size_t need = std::min<size_t>(groups[gi].rows.size(), 2);
    if (count[gi] >= need) continue;
    std::mt19937_64 rng = group_rng(seed, gi);
    std::vector<size_t> left;
    for (size_t k = 0; k < kept[gi].size(); ++k)
      if (!kept[gi][k]) left.push_back(k);
    std::shuffle(left.begin(), left.end(), rng);
    for (size_t i = 0; count[gi] < need; ++i, ++count[gi]) kept[gi][left[i]] = true;
  }
  return kept;
}

}  // namespace

std::string prune_method_name(PruneMethod m) { return std::string(table_name(kMethods, m)); }

PruneMethod parse_prune_method(const std::string& name) { return table_parse(kMethods, name, "pruning method"); }

size_t kept_count(size_t size, double keep) {
  const size_t k = static_cast<size_t>(std::ceil(keep * static_cast<double>(size) - 1e-9));
  return std::min(size, std::max<size_t>(k, 2));
}

std::vector<std::vector<bool>> prune(const std::vector<RankGroup>& groups, const PruneOptions& options,
                                     const std::vector<PruneTwins>& twins) {
  TESSERA_CHECK(options.keep > 0 && options.keep <= 1, "prune: the share kept must be in (0, 1], got ", options.keep);
  for (const RankGroup& g : groups)
    TESSERA_CHECK(g.rows.size() == g.seconds.size(), "prune: a group of ", g.rows.size(), " rows has ",
                  g.seconds.size(), " costs");
  if (options.method == PruneMethod::Twins) {
    TESSERA_CHECK(twins.size() == groups.size(), "prune: the twins method needs each group's family and program keys (",
                  twins.size(), " given for ", groups.size(), " groups)");
    return keep_twins(groups, twins, options.keep, options.seed);
  }
  std::optional<XgbModel> first;
  if (options.method == PruneMethod::Loss) {
    first.emplace(HardwareDesc{}, 0, options.xgb);
    first->update(groups);  // a no-op when no group teaches: every score zero, the fastest then first in order
  }
  std::vector<std::vector<bool>> kept;
  kept.reserve(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const RankGroup& g = groups[gi];
    const size_t n = g.rows.size(), k = kept_count(n, options.keep);
    std::mt19937_64 rng = group_rng(options.seed, gi);
    if (k >= n) kept.emplace_back(n, true);
    else if (options.method == PruneMethod::Random) kept.push_back(keep_random(n, k, rng));
    else if (options.method == PruneMethod::Cluster) kept.push_back(keep_cluster(g.rows, k, rng));
    else kept.push_back(keep_loss(g, first->predict_rows(g.rows), k));
  }
  return kept;
}

}  // namespace tessera::cost
