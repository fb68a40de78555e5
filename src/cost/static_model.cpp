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
  if (term < kSummaryTerms + kFeatureCount)
    return "slog_" + std::string(feature_name(static_cast<Feature>(term - kSummaryTerms)));
  return "pw_" + std::string(feature_name(static_cast<Feature>(term - kSummaryTerms - kFeatureCount)));
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
  const double work = std::max(1.0, f[F::IrFlops]);
  for (int i = 0; i < kFeatureCount; ++i) {
    const double x = f.v[static_cast<size_t>(i)];
    t[static_cast<size_t>(kSummaryTerms + i)] = std::copysign(std::log1p(std::abs(x)), x);
    t[static_cast<size_t>(kSummaryTerms + kFeatureCount + i)] = std::log1p(std::abs(x) / work);
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

void StaticModel::set_hidden(std::vector<HiddenUnit> units, std::vector<double> center, std::vector<double> scale) {
  const size_t k = kTermCount;
  TESSERA_CHECK(units.empty() || (center.size() == k && scale.size() == k), "static model: hidden units need ",
                k, " term centres and scales, got ", center.size(), " and ", scale.size());
  for (size_t i = 0; i < center.size(); ++i)
    TESSERA_CHECK(std::isfinite(center[i]) && std::isfinite(scale[i]) && scale[i] > 0,
                  "static model: term ", term_name(static_cast<int>(i)), " has centre ", center[i], " and scale ",
                  scale[i]);
  for (const HiddenUnit& u : units) {
    TESSERA_CHECK(u.weights.size() == k, "static model: a hidden unit has ", u.weights.size(), " weights, want ", k);
    bool finite = std::isfinite(u.output) && std::isfinite(u.bias);
    for (double x : u.weights) finite = finite && std::isfinite(x);
    TESSERA_CHECK(finite, "static model: a hidden unit's coefficient is not finite");
  }
  hidden_ = std::move(units);
  center_ = hidden_.empty() ? std::vector<double>{} : std::move(center);
  scale_ = hidden_.empty() ? std::vector<double>{} : std::move(scale);
}

void StaticModel::reset() {
  w_ = default_coefficients();
  set_hidden({}, {}, {});
}

StaticFeatures StaticModel::features(const Candidate& c) const { return static_features(c, hw_, threads_); }

namespace {

// The model's log-cost of one candidate's terms; `activations` (if given)
// receives each hidden unit's tanh.
double model_log(const std::vector<double>& t, const std::vector<double>& w, const std::vector<HiddenUnit>& hidden,
                 const std::vector<double>& center, const std::vector<double>& scale,
                 std::vector<double>* activations = nullptr) {
  double s = 0;
  for (size_t k = 0; k < t.size(); ++k) s += w[k] * t[k];
  if (activations) activations->assign(hidden.size(), 0.0);
  for (size_t h = 0; h < hidden.size(); ++h) {
    double x = hidden[h].bias;
    for (size_t k = 0; k < t.size(); ++k) x += hidden[h].weights[k] * (t[k] - center[k]) / scale[k];
    const double a = std::tanh(x);
    if (activations) (*activations)[h] = a;
    s += hidden[h].output * a;
  }
  return s;
}

}  // namespace

double StaticModel::predict_log(const StaticFeatures& f) const {
  return model_log(terms(f), w_, hidden_, center_, scale_);
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
// than j, the loss is log(1 + exp(s_i - s_j)) with s the model's log-cost,
// plus l2 * |w - w_default|^2 and hidden_l2 * |v, u|^2; full-batch gradient
// descent with Adam steps. The gradient is gathered per candidate (d loss /
// d s_i from its pairs), then taken through the model once per candidate.
double StaticModel::fit(const std::vector<FitGroup>& groups, const FitOptions& o) {
  struct Group {
    std::vector<std::vector<double>> phi;
    std::vector<std::pair<size_t, size_t>> pairs;  // (faster, slower)
  };
  std::vector<Group> gs;
  size_t total_pairs = 0;
  std::mt19937_64 rng(o.seed);
  for (const FitGroup& g : groups) {
    TESSERA_CHECK(g.features.size() == g.seconds.size(), "static model fit: a group has ", g.features.size(),
                  " feature vectors and ", g.seconds.size(), " costs");
    Group x;
    for (const StaticFeatures& f : g.features) x.phi.push_back(terms(f));
    for (size_t i = 0; i < x.phi.size(); ++i)
      for (size_t j = i + 1; j < x.phi.size(); ++j) {
        double a = g.seconds[i], b = g.seconds[j];
        if (std::abs(a - b) <= o.min_relative_gap * std::max(a, b)) continue;
        x.pairs.emplace_back(a < b ? i : j, a < b ? j : i);
      }
    if (static_cast<int>(x.pairs.size()) > o.max_pairs_per_group) {
      std::shuffle(x.pairs.begin(), x.pairs.end(), rng);
      x.pairs.resize(static_cast<size_t>(o.max_pairs_per_group));
    }
    total_pairs += x.pairs.size();
    gs.push_back(std::move(x));
  }
  reset();
  const size_t K = kTermCount, H = static_cast<size_t>(std::max(0, o.hidden_units));
  std::vector<HiddenUnit> hidden;
  std::vector<double> center(K, 0.0), scale(K, 1.0);
  if (H > 0 && total_pairs > 0) {
    // The terms' mean and standard deviation over every candidate.
    double n = 0;
    std::vector<double> sq(K, 0.0);
    for (const Group& g : gs)
      for (const std::vector<double>& t : g.phi) {
        n += 1;
        for (size_t k = 0; k < K; ++k) center[k] += t[k];
      }
    for (size_t k = 0; k < K; ++k) center[k] /= std::max(n, 1.0);
    for (const Group& g : gs)
      for (const std::vector<double>& t : g.phi)
        for (size_t k = 0; k < K; ++k) sq[k] += (t[k] - center[k]) * (t[k] - center[k]);
    for (size_t k = 0; k < K; ++k) {
      const double sd = std::sqrt(sq[k] / std::max(n, 1.0));
      scale[k] = sd > 1e-9 ? sd : 1.0;
    }
    std::normal_distribution<double> init(0, 1 / std::sqrt(static_cast<double>(K)));
    hidden.resize(H);
    for (HiddenUnit& u : hidden) {
      u.weights.resize(K);
      for (double& x : u.weights) x = init(rng);
    }
  }
  if (total_pairs > 0) {
    // Parameters, flat: w (K), then per unit v, b, u (K).
    const size_t P = K + H * (K + 2);
    const std::vector<double> w0 = default_coefficients();
    std::vector<double> w = w0, m(P, 0.0), v(P, 0.0), grad(P);
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    std::vector<double> act, ds;
    for (int it = 1; it <= o.iterations; ++it) {
      std::fill(grad.begin(), grad.end(), 0.0);
      for (const Group& g : gs) {
        if (g.pairs.empty()) continue;
        std::vector<double> s(g.phi.size());
        for (size_t i = 0; i < g.phi.size(); ++i) s[i] = model_log(g.phi[i], w, hidden, center, scale);
        ds.assign(g.phi.size(), 0.0);
        for (const auto& [fast, slow] : g.pairs) {
          const double p = sigmoid(s[fast] - s[slow]) / static_cast<double>(total_pairs);  // d loss / d s_fast
          ds[fast] += p;
          ds[slow] -= p;
        }
        for (size_t i = 0; i < g.phi.size(); ++i) {
          if (ds[i] == 0) continue;
          const std::vector<double>& t = g.phi[i];
          for (size_t k = 0; k < K; ++k) grad[k] += ds[i] * t[k];
          if (H == 0) continue;
          model_log(t, w, hidden, center, scale, &act);
          for (size_t h = 0; h < H; ++h) {
            const size_t at = K + h * (K + 2);
            grad[at] += ds[i] * act[h];
            const double dx = ds[i] * hidden[h].output * (1 - act[h] * act[h]);
            grad[at + 1] += dx;
            for (size_t k = 0; k < K; ++k) grad[at + 2 + k] += dx * (t[k] - center[k]) / scale[k];
          }
        }
      }
      for (size_t k = 0; k < K; ++k) grad[k] += 2 * o.l2 * (w[k] - w0[k]);
      for (size_t h = 0; h < H; ++h) {
        const size_t at = K + h * (K + 2);
        grad[at] += 2 * o.hidden_l2 * hidden[h].output;
        for (size_t k = 0; k < K; ++k) grad[at + 2 + k] += 2 * o.hidden_l2 * hidden[h].weights[k];
      }
      auto step = [&](size_t u, double& x) {
        m[u] = b1 * m[u] + (1 - b1) * grad[u];
        v[u] = b2 * v[u] + (1 - b2) * grad[u] * grad[u];
        const double mh = m[u] / (1 - std::pow(b1, it)), vh = v[u] / (1 - std::pow(b2, it));
        x -= o.learning_rate * mh / (std::sqrt(vh) + eps);
      };
      for (size_t k = 0; k < K; ++k) step(k, w[k]);
      for (size_t h = 0; h < H; ++h) {
        const size_t at = K + h * (K + 2);
        step(at, hidden[h].output);
        step(at + 1, hidden[h].bias);
        for (size_t k = 0; k < K; ++k) step(at + 2 + k, hidden[h].weights[k]);
      }
    }
    set_coefficients(std::move(w));
    set_hidden(std::move(hidden), std::move(center), std::move(scale));
  }
  CostGroups measured, predicted;
  for (const FitGroup& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(predict_features(g.features));
  }
  return pairwise_accuracy(measured, predicted);
}

namespace {

nlohmann::json by_term(const std::vector<double>& x) {
  nlohmann::json c = nlohmann::json::object();
  for (int k = 0; k < kTermCount; ++k) c[term_name(k)] = x[static_cast<size_t>(k)];
  return c;
}

// One value per term from {"<term>": value}; throws naming the file, what
// and the missing term.
std::vector<double> read_terms(const nlohmann::json& c, const std::string& path, const std::string& what,
                               const std::string& hw) {
  TESSERA_CHECK(c.is_object(), "static model: '", path, "': ", what, " of hardware '", hw, "' is not an object");
  std::vector<double> x(kTermCount, 0.0);
  for (int k = 0; k < kTermCount; ++k) {
    std::string key = term_name(k);
    auto it = c.find(key);
    TESSERA_CHECK(it != c.end() && it->is_number(), "static model: '", path, "' lacks ", what, " '", key,
                  "' for hardware '", hw, "'");
    x[static_cast<size_t>(k)] = it->get<double>();
  }
  return x;
}

}  // namespace

std::string StaticModel::coefficients_json() const {
  nlohmann::json entry = {{"hardware", hw_.to_string()}, {"coefficients", by_term(w_)}};
  if (!hidden_.empty()) {
    nlohmann::json units = nlohmann::json::array();
    for (const HiddenUnit& u : hidden_)
      units.push_back({{"output", u.output}, {"bias", u.bias}, {"weights", by_term(u.weights)}});
    entry["hidden"] = units;
    entry["center"] = by_term(center_);
    entry["scale"] = by_term(scale_);
  }
  nlohmann::json j = {{hw_.name, entry}};
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
  std::vector<double> w = read_terms((*entry)["coefficients"], path, "coefficient", hw_.name);
  std::vector<HiddenUnit> units;
  std::vector<double> center, scale;
  if (entry->contains("hidden")) {
    const nlohmann::json& hs = (*entry)["hidden"];
    TESSERA_CHECK(hs.is_array(), "static model: '", path, "': \"hidden\" of hardware '", hw_.name,
                  "' is not a list of units");
    for (const nlohmann::json& h : hs) {
      TESSERA_CHECK(h.is_object() && h.contains("output") && h["output"].is_number() && h.contains("bias") &&
                        h["bias"].is_number() && h.contains("weights"),
                    "static model: '", path, "': a hidden unit of hardware '", hw_.name,
                    "' lacks its output, bias or weights");
      HiddenUnit u;
      u.output = h["output"].get<double>();
      u.bias = h["bias"].get<double>();
      u.weights = read_terms(h["weights"], path, "hidden weight", hw_.name);
      units.push_back(std::move(u));
    }
    if (!units.empty()) {
      TESSERA_CHECK(entry->contains("center") && entry->contains("scale"), "static model: '", path,
                    "': hidden units of hardware '", hw_.name, "' without the terms' centre and scale");
      center = read_terms((*entry)["center"], path, "term centre", hw_.name);
      scale = read_terms((*entry)["scale"], path, "term scale", hw_.name);
    }
  }
  set_coefficients(std::move(w));
  set_hidden(std::move(units), std::move(center), std::move(scale));
}

}  // namespace tessera::cost
