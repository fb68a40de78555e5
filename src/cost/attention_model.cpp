// The attention cost model (see attention_model.h): the programs' features
// prepared here as plain arrays, the network in libtessera_attention.so
// (attention_module.h), loaded on first use.
#include "cost/attention_model.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "cost/attention_module.h"
#include "cost/program_features.h"
#include "cost/ranking_metrics.h"
#include "cost/value_features.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera::cost {

namespace {

// The feature layout a model file is made for: its value and hardware columns' names.
std::string layout() {
  std::string s;
  for (const ColumnDoc& c : value_feature_columns()) s += c.name + ",";
  s += ";";
  for (const ColumnDoc& c : hardware_feature_columns()) s += c.name + ",";
  return s;
}

int64_t hardware_width() { return static_cast<int64_t>(hardware_feature_columns().size()); }

// Programs as the module reads them: rows and hardware vectors slog'd, a
// program without stores given one row of zeros; group ids and labels for training.
struct Arrays {
  std::vector<int64_t> row_counts;
  std::vector<float> rows, hardware, labels;
  std::vector<int64_t> groups;

  void add(const ProgramSample& p) {
    TESSERA_CHECK(static_cast<int64_t>(p.hardware.size()) == hardware_width(), "attention model: a hardware vector of ",
                  p.hardware.size(), " values, expected ", hardware_width());
    for (const std::vector<double>& r : p.values) {
      TESSERA_CHECK(r.size() == static_cast<size_t>(kValueFeatureCount), "attention model: a store row of ", r.size(),
                    " values, expected ", kValueFeatureCount);
      for (double v : r) rows.push_back(static_cast<float>(slog(v)));
    }
    row_counts.push_back(static_cast<int64_t>(p.values.size()));
    if (p.values.empty()) {
      rows.insert(rows.end(), kValueFeatureCount, 0.0f);
      row_counts.back() = 1;
    }
    for (double v : p.hardware) hardware.push_back(static_cast<float>(slog(v)));
  }

  tessera_attention_programs view() const {
    return {static_cast<int64_t>(row_counts.size()),
            kValueFeatureCount,
            hardware_width(),
            row_counts.data(),
            rows.data(),
            hardware.data(),
            groups.empty() ? nullptr : groups.data(),
            labels.empty() ? nullptr : labels.data()};
  }
};

// A group teaches the ranking something when two of its costs differ.
bool teaches(const SampleGroup& g) {
  if (g.programs.size() < 2) return false;
  return std::any_of(g.seconds.begin(), g.seconds.end(), [&](double s) { return s != g.seconds.front(); });
}

// The teaching groups' programs, each labelled with its group's best cost over its own.
Arrays training_arrays(const std::vector<SampleGroup>& groups) {
  Arrays out;
  int64_t id = 0;
  for (const SampleGroup& g : groups) {
    TESSERA_CHECK(g.programs.size() == g.seconds.size(), "attention model: a group of ", g.programs.size(),
                  " programs has ", g.seconds.size(), " costs");
    if (!teaches(g)) continue;
    const double best = *std::min_element(g.seconds.begin(), g.seconds.end());
    for (size_t i = 0; i < g.programs.size(); ++i) {
      TESSERA_CHECK(g.seconds[i] > 0 && std::isfinite(g.seconds[i]),
                    "attention model: a measured cost must be positive, got ", g.seconds[i]);
      out.add(g.programs[i]);
      out.labels.push_back(static_cast<float>(best / g.seconds[i]));
      out.groups.push_back(id);
    }
    ++id;
  }
  return out;
}

// The module's options for a pass of training or fine-tuning; progress goes
// to `on_epoch`, whose exception (if any) is kept in `thrown` for after the call.
struct Progress {
  const std::function<void(int, int, double)>* on_epoch;
  std::exception_ptr thrown;
  static void call(void* self, int32_t epoch, int32_t epochs, double loss) {
    auto* p = static_cast<Progress*>(self);
    if (p->thrown) return;
    try {
      (*p->on_epoch)(epoch, epochs, loss);
    } catch (...) {
      p->thrown = std::current_exception();
    }
  }
};

tessera_attention_options module_options(const AttentionOptions& o, int epochs, double lr, double anchor,
                                         Progress& progress) {
  tessera_attention_options m{};
  m.dim = o.dim;
  m.heads = o.heads;
  m.epochs = epochs;
  m.group_batch = o.group_batch;
  m.batch = o.batch;
  m.threads = o.threads;
  m.lr = lr;
  m.anchor = anchor;
  m.seed = o.seed;
  if (o.on_epoch) {
    m.on_epoch = &Progress::call;
    m.on_epoch_context = &progress;
  }
  return m;
}

constexpr size_t kErrorSize = 1024;

// Throws the module's message, prefixed with `what`, unless `code` is OK.
void check(int32_t code, const char* error, const std::string& what) {
  if (code != TESSERA_ATTENTION_OK) TESSERA_FAIL("attention model: ", what, ": ", error);
}

// One call of the module's training entry `fit` (train or fine_tune) on `a`,
// with `options`' progress callback; throws what the callback threw, then the
// module's error prefixed with `what`.
void run_fit(decltype(&tessera_attention_train) fit, tessera_attention_model* model, const Arrays& a,
             const AttentionOptions& options, int epochs, double lr, double anchor, const std::string& what) {
  Progress progress{&options.on_epoch, nullptr};
  const tessera_attention_options o = module_options(options, epochs, lr, anchor, progress);
  const tessera_attention_programs view = a.view();
  char error[kErrorSize] = "";
  const int32_t code = fit(model, &view, &o, error, sizeof error);
  if (progress.thrown) std::rethrow_exception(progress.thrown);
  check(code, error, what);
}

}  // namespace

struct AttentionModel::State {
  const AttentionModule* module = nullptr;
  tessera_attention_model* model = nullptr;
  ~State() {
    if (model) module->destroy(model);
  }
  // The module's model, the module loaded on first use.
  tessera_attention_model* get() {
    if (!model) {
      module = &attention_module();
      model = module->create();
      TESSERA_CHECK(model, "attention model: the module could not make a model (out of memory)");
    }
    return model;
  }
};

AttentionModel::AttentionModel(HardwareDesc hw, AttentionOptions options)
    : hw_(std::move(hw)), options_(std::move(options)), state_(std::make_unique<State>()) {
  TESSERA_CHECK(options_.dim > 0 && options_.heads > 0 && options_.dim % options_.heads == 0,
                "attention model: the width (", options_.dim, ") must be a positive multiple of the heads (",
                options_.heads, ")");
}
AttentionModel::~AttentionModel() = default;
AttentionModel::AttentionModel(AttentionModel&&) noexcept = default;
AttentionModel& AttentionModel::operator=(AttentionModel&&) noexcept = default;

bool AttentionModel::trained() const { return state_ && state_->model && state_->module->trained(state_->model); }

ProgramSample AttentionModel::sample_of(const Candidate& candidate, const HardwareDesc& hw) {
  ProgramSample s;
  s.values = value_features(*candidate.kernel, hw).rows;
  s.hardware = hardware_features(hw);
  return s;
}

std::vector<double> AttentionModel::predict_samples(const std::vector<ProgramSample>& programs) const {
  std::vector<double> out(programs.size(), 0.0);
  if (!trained() || programs.empty()) return out;
  Arrays a;
  for (const ProgramSample& p : programs) a.add(p);
  const tessera_attention_programs view = a.view();
  std::vector<float> scores(programs.size());
  char error[kErrorSize] = "";
  check(state_->module->predict(state_->model, &view, options_.threads, scores.data(), error, sizeof error), error,
        "predicting");
  std::copy(scores.begin(), scores.end(), out.begin());
  return out;
}

std::vector<double> AttentionModel::predict(const std::vector<Candidate>& candidates) const {
  std::vector<ProgramSample> samples;
  samples.reserve(candidates.size());
  for (const Candidate& c : candidates) samples.push_back(sample_of(c, hw_));
  return costs_from_scores(predict_samples(samples));
}

void AttentionModel::train(const std::vector<SampleGroup>& groups) {
  const Arrays a = training_arrays(groups);
  TESSERA_CHECK(!a.groups.empty(), "attention model: nothing to train on: no group has two programs of different cost");
  tessera_attention_model* model = state_->get();
  run_fit(state_->module->train, model, a, options_, options_.epochs, options_.lr, 0, "training");
}

void AttentionModel::update(const std::vector<SampleGroup>& groups) {
  if (!std::any_of(groups.begin(), groups.end(), teaches)) return;
  if (!trained()) {
    train(groups);
    return;
  }
  run_fit(state_->module->fine_tune, state_->model, training_arrays(groups), options_, options_.fine_tune_epochs,
          options_.fine_tune_lr, options_.fine_tune_anchor, "fine-tuning");
}

void AttentionModel::save(const std::string& path) const {
  TESSERA_CHECK(trained(), "attention model: cannot save ", path, ": the model is not trained");
  std::string bytes;
  auto append = [](void* context, const char* data, size_t size) {
    static_cast<std::string*>(context)->append(data, size);
  };
  char error[kErrorSize] = "";
  check(state_->module->save(state_->model, layout().c_str(), append, &bytes, error, sizeof error), error,
        "saving " + path);
  write_file(path, bytes);
}

void AttentionModel::load(const std::string& path) {
  const std::string bytes = read_file(path);
  tessera_attention_model* model = state_->get();
  char error[kErrorSize] = "";
  const int32_t code = state_->module->load(model, bytes.data(), bytes.size(), layout().c_str(), kValueFeatureCount,
                                            hardware_width(), error, sizeof error);
  if (code == TESSERA_ATTENTION_NOT_A_MODEL) TESSERA_FAIL("model file ", path, " is not an attention model: ", error);
  if (code == TESSERA_ATTENTION_OTHER_LAYOUT)
    TESSERA_FAIL("model file ", path,
                 " was made for another feature layout (an older or newer tessera): train it again "
                 "(tessera costmodel train --model attention)");
  check(code, error, "loading " + path);
}

}  // namespace tessera::cost
