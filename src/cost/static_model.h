// Tuna's static cost model: no measurement while searching. A candidate's
// predicted log-cost is w · phi(features) + sum_h v_h tanh(b_h + u_h · z):
// phi are a few log-scaled terms of the static features (static_features.h)
// — the analytic estimate and its parts, spill and gather ratios, the
// parallel balance — and the signed log of every feature; z are the terms
// standardized (centre and scale kept with the coefficients); the optional
// hidden units (v, b, u) let the terms interact, as a footprint that only
// matters once spills appear. All are coefficients fitted once per hardware
// description from measured candidates (fit: a pairwise ranking loss within
// each task, RankNet style, with L2 regularization toward the defaults). The
// defaults weigh only the analytic estimate and have no hidden units, so an
// unfitted model ranks by it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "cost/hardware.h"
#include "cost/static_features.h"

namespace tessera::cost {

// The model's terms, in coefficient order.
enum class Term : int {
  EstSeconds,        // log of the analytic estimate (the default weighs only this)
  ComputeSeconds,    // log of the compute part
  MemorySeconds,     // log of the slowest memory level
  FrontEndSeconds,   // log of the instruction issue time
  OverheadSeconds,   // log of the launch overhead
  SpillRatio,        // log(1 + stack spills and reloads per float instruction)
  GatherRatio,       // log(1 + gathers per load)
  ScalarShare,       // log(1 + share of float instructions on one element)
  Imbalance,         // log of the parallel balance (0 when perfect)
  Bias,              // constant (ranks nothing; absorbs scale)
  kCount
};
// Then two terms per feature, so that fitting can weigh what the summary
// terms miss: its signed log, sign(x) log(1 + |x|) (named "slog_<feature>"),
// and its amount per unit of float work, log(1 + |x| / max(1, ir_flops))
// (named "pw_<feature>"), which reads alike in a small task and a large one.
inline constexpr int kSummaryTerms = static_cast<int>(Term::kCount);
inline constexpr int kTermCount = kSummaryTerms + 2 * kFeatureCount;
std::string term_name(int term);  // "est_seconds", ..., "slog_ir_flops", ..., "pw_ir_flops", ...
std::vector<double> terms(const StaticFeatures& f);

// One task's measured candidates, for fitting.
struct FitGroup {
  std::vector<StaticFeatures> features;
  std::vector<double> seconds;  // measured cost of each
  // What the candidates are, for reports and feature dumps (may be empty).
  std::string task;
  std::vector<std::string> schedules;
};

// One hidden unit: v tanh(b + u · z), z the standardized terms.
struct HiddenUnit {
  double output = 0;             // v
  double bias = 0;               // b
  std::vector<double> weights;   // u, one per term
};

struct FitOptions {
  int hidden_units = 0;          // 0: the linear model alone
  double hidden_l2 = 1e-3;       // pull of the hidden weights toward zero
  int iterations = 600;
  double learning_rate = 0.05;
  double l2 = 1e-4;              // pull toward the default coefficients
  int max_pairs_per_group = 20000;  // pairs sampled (seeded) beyond this
  double min_relative_gap = 1e-3;  // pairs measured closer than this are noise, skipped
  uint64_t seed = 1;
};

class StaticModel : public CostModel {
 public:
  // threads 0: hw.cores.
  explicit StaticModel(HardwareDesc hw, int threads = 0);

  std::string name() const override { return "static"; }
  // exp(w · phi) per candidate.
  std::vector<double> predict(const std::vector<Candidate>& candidates) const override;

  StaticFeatures features(const Candidate& c) const;
  double predict_log(const StaticFeatures& f) const;  // w · phi + the hidden units
  std::vector<double> predict_features(const std::vector<StaticFeatures>& fs) const;

  // Fits the coefficients, from the defaults (and a seeded start of
  // options.hidden_units hidden units), to rank every group's candidates as
  // measured. Returns the pairwise accuracy on the groups after fitting.
  double fit(const std::vector<FitGroup>& groups, const FitOptions& options = {});

  // The linear coefficients w, one per term.
  static std::vector<double> default_coefficients();
  const std::vector<double>& coefficients() const { return w_; }
  void set_coefficients(std::vector<double> w);
  // The hidden units and the terms' centre and scale they read them by.
  const std::vector<HiddenUnit>& hidden() const { return hidden_; }
  void set_hidden(std::vector<HiddenUnit> units, std::vector<double> center, std::vector<double> scale);
  // Back to the defaults: the analytic estimate alone.
  void reset();

  // Coefficients as JSON: {"<hardware name>": {"hardware": "<text form>",
  // "coefficients": {"<term>": value, ...}}}, with hidden units also
  // "hidden": [{"output": v, "bias": b, "weights": {"<term>": u, ...}}, ...],
  // "center": {"<term>": c, ...}, "scale": {"<term>": s, ...}. save() keeps
  // the other hardware's entries of an existing file; load() reads this
  // hardware's entry and throws tessera::Error naming the file when it has
  // none or a coefficient is missing.
  std::string coefficients_json() const;
  void save(const std::string& path) const;
  void load(const std::string& path);

  const HardwareDesc& hardware() const { return hw_; }
  int threads() const { return threads_; }

 private:
  HardwareDesc hw_;
  int threads_;
  std::vector<double> w_;
  std::vector<HiddenUnit> hidden_;
  std::vector<double> center_, scale_;  // per term (empty without hidden units)
};

}  // namespace tessera::cost
