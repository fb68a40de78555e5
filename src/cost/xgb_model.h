// A learned cost model: gradient-boosted trees (XGBoost, through its C API)
// with the pairwise ranking objective (rank:pairwise), one query group per
// task, over program rows (program_features.h), as TenSet's XGBoost model
// ranks the programs of a task. Trained on measured groups, saved to and
// loaded from a file (XGBoost's JSON model, with the row's column count and
// names kept as an attribute, so a file made for other features is refused),
// and updated online: update() trains again on the measurements so far —
// from scratch, or, for a model loaded from a file, as further trees on top
// of the loaded ones (the pre-trained model fine-tuned on them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/hardware.h"

namespace tessera::cost {

// One task's measured candidates: a program row each and its cost.
struct RankGroup {
  std::vector<std::vector<float>> rows;
  std::vector<double> seconds;
};

struct XgbOptions {
  int rounds = 200;          // boosting rounds of a training from scratch
  int update_rounds = 50;    // rounds added on top of a loaded model by update()
  int max_depth = 6;
  double eta = 0.2;
  double min_child_weight = 0.01;  // pairwise gradients are small: the default (1) would refuse most splits
  double subsample = 1;
  int threads = 1;           // XGBoost's threads
  uint64_t seed = 1;
  std::function<void(int round, int rounds)> on_round;  // called after each boosting round (progress)
};

class XgbModel : public CostModel {
 public:
  // `hw` and `threads` (0: hw.cores) describe the machine candidates are
  // predicted for (their hardware and static features).
  explicit XgbModel(HardwareDesc hw, int threads = 0, XgbOptions options = {});
  ~XgbModel() override;
  XgbModel(const XgbModel&) = delete;
  XgbModel& operator=(const XgbModel&) = delete;

  std::string name() const override { return "xgb"; }
  // Minus the model's score of each candidate's row (lower = faster); all
  // zero (no preference) before any training.
  std::vector<double> predict(const std::vector<Candidate>& candidates) const override;
  // The score of each row (higher = faster); all zero before any training.
  std::vector<double> predict_rows(const std::vector<std::vector<float>>& rows) const;

  // Trains from scratch on `groups` (groups of fewer than two candidates,
  // or whose candidates all cost the same, teach nothing and are skipped),
  // forgetting any loaded model. Throws when no group teaches anything.
  void train(const std::vector<RankGroup>& groups);
  // Online, with every measurement so far: trains from scratch on `groups`,
  // or, after load(), fits update_rounds further trees to them on top of
  // the loaded model (each update starts from the loaded model again). A
  // no-op when no group teaches anything.
  void update(const std::vector<RankGroup>& groups);
  bool trained() const { return booster_ != nullptr; }

  // Throws tessera::Error naming the file when it cannot be written or read,
  // or when it was made for another row layout.
  void save(const std::string& path) const;
  void load(const std::string& path);

  const HardwareDesc& hardware() const { return hw_; }
  int threads() const { return threads_; }
  const XgbOptions& options() const { return options_; }

 private:
  void fit(const std::vector<RankGroup>& groups, int rounds, bool from_base);
  HardwareDesc hw_;
  int threads_;
  XgbOptions options_;
  void* booster_ = nullptr;       // BoosterHandle
  std::string base_;              // the loaded model, for update() to build on
};

}  // namespace tessera::cost
