// The static model: terms, prediction, pairwise fitting, coefficient files.
#include "cost/static_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "cost/ranking_metrics.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera::cost {

namespace {

constexpr std::array<std::string_view, kSummaryTerms> kTermNames{
    "est_seconds", "compute_seconds", "memory_seconds", "front_end_seconds", "overhead_seconds",
    "spill_ratio",  "gather_ratio",    "scalar_share",   "imbalance",         "bias"};

// log of a time, floored at a picosecond so a zero part stays finite.
double log_time(double seconds) { return std::log(std::max(seconds, 1e-12)); }

double sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

}  // namespace

std::string term_name(int term) {
  if (term < kSummaryTerms) return std::string(kTermNames.at(static_cast<size_t>(term)));
  return "slog_" + std::string(feature_name(static_cast<Feature>(term - kSummaryTerms)));
}

std::vector<double> terms(const StaticFeatures& f) {
  using F = Feature;
  const double hz = std::max(f[F::Ghz], 0.1) * 1e9;
  double memory = std::max({f[F::L1Cycles], f[F::L2Cycles], f[F::L3Cycles]}) / hz;
  std::vector<double> t(kTermCount, 0.0);
  t[static_cast<int>(Term::EstSeconds)] = log_time(f[F::EstSeconds]);
  t[static_cast<int>(Term::ComputeSeconds)] = log_time(f[F::ComputeCycles] / hz);
  t[static_cast<int>(Term::MemorySeconds)] = log_time(std::max(memory, f[F::DramSeconds]));
  t[static_cast<int>(Term::FrontEndSeconds)] = log_time(f[F::FrontEndCycles] / hz);
  t[static_cast<int>(Term::OverheadSeconds)] = log_time(f[F::OverheadSeconds]);
  double float_instr = f[F::AsmAvailable] > 0 ? f[F::AsmFma] + f[F::AsmFloatArith]
                                              : f[F::IrFma] + f[F::IrMul] + f[F::IrAdd] + f[F::IrOtherFloat];
  t[static_cast<int>(Term::SpillRatio)] = std::log1p((f[F::AsmSpills] + f[F::AsmReloads]) / (float_instr + 1));
  double loads = f[F::AsmAvailable] > 0 ? f[F::AsmLoads] : f[F::IrLoads];
  double gathers = f[F::AsmAvailable] > 0 ? f[F::AsmGathers] : f[F::IrGatherLanes];
  t[static_cast<int>(Term::GatherRatio)] = std::log1p(gathers / (loads + 1));
  double scalar = f[F::AsmAvailable] > 0 ? f[F::AsmScalarFloat] / (float_instr + 1)
                                         : 1 / std::max(1.0, f[F::IrVectorLanes]);
  t[static_cast<int>(Term::ScalarShare)] = std::log1p(scalar);
  t[static_cast<int>(Term::Imbalance)] = std::log(std::max(1.0, f[F::ParallelBalance]));
  t[static_cast<int>(Term::Bias)] = 1;
  for (int i = 0; i < kFeatureCount; ++i) {
    const double x = f.v[static_cast<size_t>(i)];
    t[static_cast<size_t>(kSummaryTerms + i)] = std::copysign(std::log1p(std::abs(x)), x);
  }
  return t;
}

StaticModel::StaticModel(HardwareDesc hw, int threads)
    : hw_(std::move(hw)), threads_(threads > 0 ? threads : hw_.cores), w_(default_coefficients()) {}

std::vector<double> StaticModel::default_coefficients() {
  std::vector<double> w(kTermCount, 0.0);
  w[static_cast<int>(Term::EstSeconds)] = 1;
  return w;
}

void StaticModel::set_coefficients(std::vector<double> w) {
  TESSERA_CHECK(static_cast<int>(w.size()) == kTermCount, "static model: ", w.size(), " coefficients, want ",
                kTermCount);
  for (double x : w) TESSERA_CHECK(std::isfinite(x), "static model: a coefficient is not finite");
  w_ = std::move(w);
}

StaticFeatures StaticModel::features(const Candidate& c) const { return static_features(c, hw_, threads_); }

double StaticModel::predict_log(const StaticFeatures& f) const {
  std::vector<double> t = terms(f);
  double s = 0;
  for (int i = 0; i < kTermCount; ++i) s += w_[static_cast<size_t>(i)] * t[static_cast<size_t>(i)];
  return s;
}

std::vector<double> StaticModel::predict_features(const std::vector<StaticFeatures>& fs) const {
  std::vector<double> out;
  out.reserve(fs.size());
  for (const StaticFeatures& f : fs) out.push_back(std::exp(predict_log(f)));
  return out;
}

std::vector<double> StaticModel::predict(const std::vector<Candidate>& candidates) const {
  std::vector<StaticFeatures> fs;
  fs.reserve(candidates.size());
  for (const Candidate& c : candidates) fs.push_back(features(c));
  return predict_features(fs);
}

// RankNet on pairs within each group: for a pair where i measured faster
// than j, the loss is log(1 + exp(s_i - s_j)) with s = w · phi, plus
// l2 * |w - w_default|^2; full-batch gradient descent with Adam steps.
double StaticModel::fit(const std::vector<FitGroup>& groups, const FitOptions& o) {
  std::vector<std::vector<double>> diffs;  // phi(faster) - phi(slower)
  std::mt19937_64 rng(o.seed);
  for (const FitGroup& g : groups) {
    TESSERA_CHECK(g.features.size() == g.seconds.size(), "static model fit: a group has ", g.features.size(),
                  " feature vectors and ", g.seconds.size(), " costs");
    std::vector<std::vector<double>> phi;
    for (const StaticFeatures& f : g.features) phi.push_back(terms(f));
    std::vector<std::pair<size_t, size_t>> pairs;
    for (size_t i = 0; i < phi.size(); ++i)
      for (size_t j = i + 1; j < phi.size(); ++j) {
        double a = g.seconds[i], b = g.seconds[j];
        if (std::abs(a - b) <= o.min_relative_gap * std::max(a, b)) continue;
        pairs.emplace_back(a < b ? i : j, a < b ? j : i);
      }
    if (static_cast<int>(pairs.size()) > o.max_pairs_per_group) {
      std::shuffle(pairs.begin(), pairs.end(), rng);
      pairs.resize(static_cast<size_t>(o.max_pairs_per_group));
    }
    for (const auto& [fast, slow] : pairs) {
      std::vector<double> d(kTermCount);
      for (int k = 0; k < kTermCount; ++k) d[static_cast<size_t>(k)] = phi[fast][static_cast<size_t>(k)] - phi[slow][static_cast<size_t>(k)];
      diffs.push_back(std::move(d));
    }
  }
  const std::vector<double> w0 = default_coefficients();
  if (!diffs.empty()) {
    std::vector<double> w = w_, m(kTermCount, 0.0), v(kTermCount, 0.0);
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int it = 1; it <= o.iterations; ++it) {
      std::vector<double> grad(kTermCount, 0.0);
      for (const std::vector<double>& d : diffs) {
        double s = 0;
        for (int k = 0; k < kTermCount; ++k) s += w[static_cast<size_t>(k)] * d[static_cast<size_t>(k)];
        double p = sigmoid(s);  // d loss / d s
        for (int k = 0; k < kTermCount; ++k) grad[static_cast<size_t>(k)] += p * d[static_cast<size_t>(k)];
      }
      for (int k = 0; k < kTermCount; ++k) {
        size_t u = static_cast<size_t>(k);
        double gk = grad[u] / static_cast<double>(diffs.size()) + 2 * o.l2 * (w[u] - w0[u]);
        m[u] = b1 * m[u] + (1 - b1) * gk;
        v[u] = b2 * v[u] + (1 - b2) * gk * gk;
        double mh = m[u] / (1 - std::pow(b1, it)), vh = v[u] / (1 - std::pow(b2, it));
        w[u] -= o.learning_rate * mh / (std::sqrt(vh) + eps);
      }
    }
    set_coefficients(std::move(w));
  }
  CostGroups measured, predicted;
  for (const FitGroup& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(predict_features(g.features));
  }
  return pairwise_accuracy(measured, predicted);
}

std::string StaticModel::coefficients_json() const {
  nlohmann::json c = nlohmann::json::object();
  for (int k = 0; k < kTermCount; ++k) c[term_name(k)] = w_[static_cast<size_t>(k)];
  nlohmann::json j = {{hw_.name, {{"hardware", hw_.to_string()}, {"coefficients", c}}}};
  return j.dump(2);
}

void StaticModel::save(const std::string& path) const {
  nlohmann::json all = nlohmann::json::object();
  if (std::filesystem::exists(path)) {
    all = nlohmann::json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
    TESSERA_CHECK(all.is_object(), "static model: '", path, "' is not a JSON object of coefficients");
  }
  nlohmann::json mine = nlohmann::json::parse(coefficients_json());
  all[hw_.name] = mine[hw_.name];
  write_file(path, all.dump(2) + "\n");
}

void StaticModel::load(const std::string& path) {
  nlohmann::json all = nlohmann::json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(all.is_object(), "static model: '", path, "' is not a JSON object of coefficients");
  auto entry = all.find(hw_.name);
  TESSERA_CHECK(entry != all.end() && entry->is_object() && entry->contains("coefficients"),
                "static model: '", path, "' has no coefficients for hardware '", hw_.name, "'");
  const nlohmann::json& c = (*entry)["coefficients"];
  std::vector<double> w = default_coefficients();
  for (int k = 0; k < kTermCount; ++k) {
    std::string key = term_name(k);
    auto it = c.find(key);
    TESSERA_CHECK(it != c.end() && it->is_number(), "static model: '", path, "' lacks coefficient '", key,
                  "' for hardware '", hw_.name, "'");
    w[static_cast<size_t>(k)] = it->get<double>();
  }
  set_coefficients(std::move(w));
}

}  // namespace tessera::cost
