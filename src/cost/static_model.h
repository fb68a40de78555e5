// Tuna's static cost model: no measurement while searching. A candidate's
// predicted log-cost is w · phi(features): phi are a few log-scaled terms of
// the static features (static_features.h) — the analytic estimate and its
// parts, spill and gather ratios, the parallel balance — and w are
// coefficients fitted once per hardware description from measured
// candidates (fit: a pairwise ranking loss within each task, RankNet style,
// with L2 regularization toward the defaults). The defaults weigh only the
// analytic estimate, so an unfitted model ranks by it.
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
// Then one term per feature: its signed log, sign(x) log(1 + |x|) (named
// "slog_<feature>"), so that fitting can weigh what the summary terms miss.
inline constexpr int kSummaryTerms = static_cast<int>(Term::kCount);
inline constexpr int kTermCount = kSummaryTerms + kFeatureCount;
std::string term_name(int term);  // "est_seconds", ..., "slog_ir_flops", ...
std::vector<double> terms(const StaticFeatures& f);

// One task's measured candidates, for fitting.
struct FitGroup {
  std::vector<StaticFeatures> features;
  std::vector<double> seconds;  // measured cost of each
  // What the candidates are, for reports and feature dumps (may be empty).
  std::string task;
  std::vector<std::string> schedules;
};

struct FitOptions {
  int iterations = 600;
  double learning_rate = 0.05;
  double l2 = 1e-3;              // pull toward the default coefficients
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
  double predict_log(const StaticFeatures& f) const;  // w · phi
  std::vector<double> predict_features(const std::vector<StaticFeatures>& fs) const;

  // Fits the coefficients to rank every group's candidates as measured.
  // Returns the pairwise accuracy on the groups after fitting.
  double fit(const std::vector<FitGroup>& groups, const FitOptions& options = {});

  static std::vector<double> default_coefficients();
  const std::vector<double>& coefficients() const { return w_; }
  void set_coefficients(std::vector<double> w);

  // Coefficients as JSON: {"<hardware name>": {"hardware": "<text form>",
  // "coefficients": {"<term>": value, ...}}}. save() keeps the other
  // hardware's entries of an existing file; load() reads this hardware's
  // entry and throws tessera::Error naming the file when it has none.
  std::string coefficients_json() const;
  void save(const std::string& path) const;
  void load(const std::string& path);

  const HardwareDesc& hardware() const { return hw_; }
  int threads() const { return threads_; }

 private:
  HardwareDesc hw_;
  int threads_;
  std::vector<double> w_;
};

}  // namespace tessera::cost
