// The XGBoost ranking model (see xgb_model.h).
#include "cost/xgb_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cost/program_features.h"
#include "cost/ranking_metrics.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera::cost {

namespace {

// Throws with XGBoost's own message when a call fails.
void check(int status, const char* what) {
  TESSERA_CHECK(status == 0, "xgboost: ", what, ": ", XGBGetLastError());
}

// The row layout a model file is made for: the program columns' names.
std::string layout() {
  std::string s;
  for (const ColumnDoc& c : program_feature_columns()) s += c.name + ",";
  return s;
}

// A dense matrix of rows (all of one width), freed on scope exit.
struct Matrix {
  DMatrixHandle h = nullptr;
  explicit Matrix(const std::vector<std::vector<float>>& rows) {
    const size_t width = rows.empty() ? 0 : rows.front().size();
    std::vector<float> flat;
    flat.reserve(rows.size() * width);
    for (const std::vector<float>& r : rows) {
      TESSERA_CHECK(r.size() == width, "xgboost: rows of ", width, " and ", r.size(), " columns in one matrix");
      flat.insert(flat.end(), r.begin(), r.end());
    }
    check(XGDMatrixCreateFromMat(flat.data(), rows.size(), width, std::numeric_limits<float>::quiet_NaN(), &h),
          "creating a matrix");
  }
  ~Matrix() { XGDMatrixFree(h); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
};

// A group teaches the ranking something when two of its costs differ.
bool teaches(const RankGroup& g) {
  if (g.rows.size() < 2) return false;
  return std::any_of(g.seconds.begin(), g.seconds.end(), [&](double s) { return s != g.seconds.front(); });
}

}  // namespace

XgbModel::XgbModel(HardwareDesc hw, int threads, XgbOptions options)
    : hw_(std::move(hw)), threads_(threads > 0 ? threads : hw_.cores), options_(options) {}

XgbModel::~XgbModel() {
  if (booster_) XGBoosterFree(booster_);
}

void XgbModel::fit(const std::vector<RankGroup>& groups, int rounds, bool from_base) {
  std::vector<std::vector<float>> rows;
  std::vector<float> labels;
  std::vector<unsigned> sizes;
  for (const RankGroup& g : groups) {
    TESSERA_CHECK(g.rows.size() == g.seconds.size(), "xgboost: a group of ", g.rows.size(), " rows has ",
                  g.seconds.size(), " costs");
    if (!teaches(g)) continue;
    // Relevance: the group's best cost over each one's (1 for the fastest).
    const double best = *std::min_element(g.seconds.begin(), g.seconds.end());
    for (size_t i = 0; i < g.rows.size(); ++i) {
      TESSERA_CHECK(g.seconds[i] > 0 && std::isfinite(g.seconds[i]), "xgboost: a measured cost must be positive, got ",
                    g.seconds[i]);
      rows.push_back(g.rows[i]);
      labels.push_back(static_cast<float>(best / g.seconds[i]));
    }
    sizes.push_back(static_cast<unsigned>(g.rows.size()));
  }
  if (rows.empty()) return;
  Matrix m(rows);
  check(XGDMatrixSetFloatInfo(m.h, "label", labels.data(), labels.size()), "setting labels");
  check(XGDMatrixSetUIntInfo(m.h, "group", sizes.data(), sizes.size()), "setting query groups");
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(&m.h, 1, &b), "creating a booster");
  auto free_b = [&] { XGBoosterFree(b); };
  try {
    if (from_base) check(XGBoosterLoadModelFromBuffer(b, base_.data(), base_.size()), "loading the base model");
    const std::pair<const char*, std::string> params[] = {
        {"objective", "rank:pairwise"},
        {"max_depth", std::to_string(options_.max_depth)},
        {"eta", std::to_string(options_.eta)},
        {"min_child_weight", std::to_string(options_.min_child_weight)},
        {"subsample", std::to_string(options_.subsample)},
        {"nthread", std::to_string(std::max(1, options_.threads))},
        {"seed", std::to_string(options_.seed)},
        {"verbosity", "0"},
    };
    for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k, v.c_str()), "setting a parameter");
    for (int i = 0; i < rounds; ++i) {
      check(XGBoosterUpdateOneIter(b, i, m.h), "boosting");
      if (options_.on_round) options_.on_round(i + 1, rounds);
    }
  } catch (...) {
    free_b();
    throw;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = b;
}

void XgbModel::train(const std::vector<RankGroup>& groups) {
  TESSERA_CHECK(std::any_of(groups.begin(), groups.end(), teaches),
                "xgboost: nothing to train on: no group has two candidates of different cost");
  base_.clear();
  fit(groups, options_.rounds, false);
}

void XgbModel::update(const std::vector<RankGroup>& groups) {
  if (!std::any_of(groups.begin(), groups.end(), teaches)) return;
  if (!base_.empty()) fit(groups, options_.update_rounds, true);
  else fit(groups, options_.rounds, false);
}

std::vector<double> XgbModel::predict_rows(const std::vector<std::vector<float>>& rows) const {
  if (!booster_ || rows.empty()) return std::vector<double>(rows.size(), 0.0);
  Matrix m(rows);
  bst_ulong n = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster_, m.h, 0, 0, 0, &n, &out), "predicting");
  TESSERA_CHECK(n == rows.size(), "xgboost: ", n, " predictions for ", rows.size(), " rows");
  return std::vector<double>(out, out + n);
}

std::vector<double> XgbModel::predict(const std::vector<Candidate>& candidates) const {
  std::vector<std::vector<float>> rows;
  rows.reserve(candidates.size());
  for (const Candidate& c : candidates) rows.push_back(program_features(c, hw_, threads_));
  return costs_from_scores(predict_rows(rows));
}

void XgbModel::save(const std::string& path) const {
  TESSERA_CHECK(booster_, "xgboost: cannot save ", path, ": the model is not trained");
  check(XGBoosterSetAttr(booster_, "tessera_layout", layout().c_str()), "setting an attribute");
  bst_ulong n = 0;
  const char* bytes = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &n, &bytes), "saving");
  write_file(path, std::string(bytes, n));
}

void XgbModel::load(const std::string& path) {
  std::string bytes = read_file(path);
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(nullptr, 0, &b), "creating a booster");
  const char* value = nullptr;
  int found = 0;
  if (XGBoosterLoadModelFromBuffer(b, bytes.data(), bytes.size()) != 0 ||
      XGBoosterGetAttr(b, "tessera_layout", &value, &found) != 0) {
    const std::string why = XGBGetLastError();
    XGBoosterFree(b);
    TESSERA_FAIL("model file ", path, " is not an XGBoost model: ", why);
  }
  if (!found || value != layout()) {
    XGBoosterFree(b);
    TESSERA_FAIL("model file ", path, " was made for ",
                 found ? "another feature layout (an older or newer tessera)" : "no tessera feature layout",
                 ": train it again (tessera costmodel train)");
  }
  check(XGBoosterSetParam(b, "nthread", std::to_string(std::max(1, options_.threads)).c_str()), "setting threads");
  if (booster_) XGBoosterFree(booster_);
  booster_ = b;
  base_ = std::move(bytes);
}

}  // namespace tessera::cost
