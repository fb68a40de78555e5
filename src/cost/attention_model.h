// A learned cost model on libtorch in the manner of Verma et al.'s
// attention-inspired transfer model (research/costmodel.md §2.1): each
// program is the set of its per-store feature rows (value_features.h), each
// row embedded, joined with an embedding of the target's hardware vector
// (hardware_features), attended over by one self-attention block, pooled
// (mean, max and the store count) and, beside the hardware embedding, read
// out as one score (higher = faster). Trained with a pairwise ranking loss
// (RankNet: log(1 + e^-(s_i - s_j)) for every pair of one task group where
// i is faster) on groups of many targets, so the hardware embedding tells
// targets apart; fine-tuned on a few groups of a new target by update().
//
// The features are prepared here; the network, its training and its files are
// in libtessera_attention.so (attention_module.h), which links libtorch and is
// loaded on the first call that needs it (train, update, load): a process that
// never uses this model never loads libtorch. Without the module those calls
// throw tessera::Error naming the paths tried.
//
// Deterministic for a seed (weights, batches) at one thread. Torch's
// intra-op threads are set to the model's `threads` while it trains or
// predicts, and given back after.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/hardware.h"

namespace tessera::cost {

// One program as the attention model reads it: raw (not log-compressed) rows.
struct ProgramSample {
  std::vector<std::vector<double>> values;  // one row per store, kValueFeatureCount columns
  std::vector<double> hardware;             // hardware_features() of the target it runs on
};

// One task's measured programs on one target, and their costs (seconds).
struct SampleGroup {
  std::vector<ProgramSample> programs;
  std::vector<double> seconds;
};

struct AttentionOptions {
  int dim = 64;            // embedding width
  int heads = 4;           // attention heads (dim must be a multiple)
  int epochs = 40;         // passes of train() over the groups
  int fine_tune_epochs = 20;  // passes of update() over its groups
  double lr = 2e-3;        // Adam's step size for train()
  double fine_tune_lr = 1e-3;
  // update(): the weight of the squared distance of the weights from where
  // fine-tuning starts, added to the loss (L2-SP), so a few records of a new
  // target move the model without it forgetting what it learned.
  double fine_tune_anchor = 0.01;
  int group_batch = 32;    // programs drawn from a group per step (all when fewer)
  int batch = 64;          // programs per step (whole groups of group_batch)
  int threads = 1;         // torch's intra-op threads while training and predicting
  uint64_t seed = 1;
  std::function<void(int epoch, int epochs, double loss)> on_epoch;  // progress, after each pass
};

class AttentionModel : public CostModel {
 public:
  // `hw` is the machine candidates are predicted for (predict()).
  explicit AttentionModel(HardwareDesc hw, AttentionOptions options = {});
  ~AttentionModel() override;
  AttentionModel(AttentionModel&&) noexcept;
  AttentionModel& operator=(AttentionModel&&) noexcept;

  std::string name() const override { return "attention"; }
  // Minus the score of each candidate's loop IR on hardware(); zero before training.
  std::vector<double> predict(const std::vector<Candidate>& candidates) const override;
  // The score of each program (higher = faster); all zero before training.
  std::vector<double> predict_samples(const std::vector<ProgramSample>& programs) const;

  // Trains from fresh weights on `groups` (those whose costs all agree, or of
  // fewer than two programs, teach nothing and are skipped); the feature
  // scaling is fitted to them. Throws when no group teaches anything.
  void train(const std::vector<SampleGroup>& groups);
  // Fine-tunes on `groups` for fine_tune_epochs, starting each time from the
  // weights train() or load() left (so repeated online updates with every
  // measurement so far do not compound); trains from fresh weights when
  // untrained. A no-op when no group teaches anything.
  void update(const std::vector<SampleGroup>& groups);
  bool trained() const;

  // Throws tessera::Error naming the file when it cannot be written or read,
  // or when it was made for another feature layout.
  void save(const std::string& path) const;
  void load(const std::string& path);

  const HardwareDesc& hardware() const { return hw_; }
  const AttentionOptions& options() const { return options_; }
  // The sample of a candidate (its kernel's value features, hw's vector).
  static ProgramSample sample_of(const Candidate& candidate, const HardwareDesc& hw);

 private:
  struct State;
  HardwareDesc hw_;
  AttentionOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::cost
