// `tessera costmodel` (see costmodel_command.h).
#include "costmodel_command.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <utility>

#include "cost/dataset_split.h"
#include "cost/program_features.h"
#include "cost/ranking_metrics.h"
#include "cost/xgb_model.h"
#include "costmodel_data.h"
#include "support/error.h"
#include "support/name_table.h"
#include "tune/progress.h"

namespace tessera::tools {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The dataset and which samples are in the test part of the split.
struct SplitData {
  CostDataset data;
  std::vector<bool> test;
};

SplitData load_split(const CostModelArgs& a, bool keep_values) {
  SplitData s;
  s.data = load_cost_dataset(a.records, a.datasets, a.cache, tune::parse_cost_label(a.label), !a.quiet, keep_values);
  cost::SplitOptions o;
  o.split = cost::parse_split(a.split);
  o.test_share = a.test_share;
  o.held_out = a.held_out;
  o.seed = a.seed;
  TESSERA_CHECK((o.split != cost::Split::ByTarget && o.split != cost::Split::ByNetwork) || !a.held_out.empty(),
                "split ", a.split, " needs --held-out NAME (the ", o.split == cost::Split::ByTarget ? "target" : "network",
                " to hold out)");
  s.test = cost::test_items(split_items(s.data), o);
  std::fprintf(stderr, "costmodel: %zu measured schedules (%d could not be rebuilt), split %s, label %s\n",
               s.data.samples.size(), s.data.skipped, a.split.c_str(), a.label.c_str());
  return s;
}

// One group per (task, target) of the samples in the chosen part: indices into the samples.
std::map<GroupKey, std::vector<size_t>> groups_of(const SplitData& s, bool test) {
  return sample_groups(s.data, [&](size_t i) { return s.test[i] == test; });
}

// The metrics of one set of groups, as a table row.
struct Scores {
  int tasks = 0, candidates = 0;
  cost::CostGroups measured, predicted;
  std::vector<double> network_weights;  // by-network: the task's weight in the held-out network
};

void print_header(bool network) {
  std::printf("%-10s %6s %10s %7s %9s %8s %8s %9s %8s %8s %8s %8s%s\n", "target", "tasks", "candidates", "pairs",
              "pairwise", "ci95_lo", "ci95_hi", "per-task", "recall@1", "recall@5", "peak@1", "peak@5",
              network ? "  net@1    net@5" : "");
}

// pairwise: pooled over the pairs; ci95: its bootstrap interval over the
// groups; per-task: TenSet's average of each group's accuracy.
void print_row(const std::string& name, const Scores& s, bool network) {
  const cost::Interval ci = cost::pairwise_interval(s.measured, s.predicted);
  std::printf("%-10s %6d %10d %7ld %9.4f %8.4f %8.4f %9.4f %8.4f %8.4f %8.4f %8.4f", name.c_str(), s.tasks,
              s.candidates, cost::comparable_pairs(s.measured), cost::pairwise_accuracy(s.measured, s.predicted),
              ci.low, ci.high, cost::per_task_pairwise_accuracy(s.measured, s.predicted),
              cost::top_k_recall(s.measured, s.predicted, 1), cost::top_k_recall(s.measured, s.predicted, 5),
              cost::peak_score(s.measured, s.predicted, 1), cost::peak_score(s.measured, s.predicted, 5));
  if (network)
    std::printf(" %8.4f %8.4f", cost::network_top_k_score(s.measured, s.predicted, s.network_weights, 1),
                cost::network_top_k_score(s.measured, s.predicted, s.network_weights, 5));
  std::printf("\n");
}

// The closing line of `costmodel train`: the model's pairwise accuracy on the
// groups it was trained on, `score(group)` its scores (higher = faster).
template <typename Group, typename Score>
void print_trained(const char* name, const std::vector<Group>& groups, int candidates,
                   std::chrono::steady_clock::time_point start, const std::string& file, const Score& score) {
  cost::CostGroups measured, predicted;
  for (const Group& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(cost::costs_from_scores(score(g)));
  }
  std::printf("trained %s on %d candidates (%zu groups) in %s; pairwise accuracy on them %.4f; written to %s\n", name,
              candidates, groups.size(), tune::duration_text(since(start)).c_str(),
              cost::pairwise_accuracy(measured, predicted), file.c_str());
}

void check_model(const std::string& model) { check_one_of(model, {"xgb", "attention"}, "--model"); }

// The attention model trained on the train part's groups, saved.
int train_attention(const CostModelArgs& a, const SplitData& s) {
  const std::vector<cost::SampleGroup> groups = sample_groups_of(s.data, groups_of(s, false));
  int candidates = 0;
  for (const cost::SampleGroup& g : groups) candidates += static_cast<int>(g.programs.size());
  std::fprintf(stderr, "costmodel: training attention (pairwise, %d epochs) on %d candidates of %zu task-target groups\n",
               a.epochs, candidates, groups.size());
  const auto start = std::chrono::steady_clock::now();
  cost::AttentionModel model(cost::HardwareDesc{}, attention_options(a, "training attention"));
  model.train(groups);
  model.save(a.model_file);
  print_trained("attention", groups, candidates, start, a.model_file,
                [&](const cost::SampleGroup& g) { return model.predict_samples(g.programs); });
  return 0;
}

// A group's program rows.
std::vector<std::vector<float>> rows_of(const CostDataset& d, const std::vector<size_t>& members) {
  std::vector<std::vector<float>> rows;
  for (size_t i : members) rows.push_back(d.samples[i].row);
  return rows;
}

// eval's tables: the model's scores per target and over all, and the
// baseline's, ranking by the static model's analytic estimate (its default
// coefficients weigh only that), a column of the same rows.
struct EvalTables {
  explicit EvalTables(bool network) : network(network) {
    const auto& columns = cost::program_feature_columns();
    while (est < columns.size() && columns[est].name != "static_est_seconds") ++est;
    TESSERA_CHECK(est < columns.size(), "no static_est_seconds column");
  }
  // One judged group: its members (indices into d's samples) and the
  // model's scores of them (higher = faster); weight: by-network's.
  void add(const CostDataset& d, const GroupKey& key, const std::vector<size_t>& members, std::vector<double> scores,
           double weight) {
    std::vector<double> seconds;
    for (size_t i : members) seconds.push_back(d.samples[i].seconds);
    const std::vector<double> p = cost::costs_from_scores(std::move(scores));
    Scores& b = baseline[key.second];
    b.measured.push_back(seconds);
    b.predicted.emplace_back();
    for (size_t i : members) b.predicted.back().push_back(d.samples[i].row[est]);
    for (Scores* sc : {&by_target[key.second], &all}) {
      sc->tasks += 1;
      sc->candidates += static_cast<int>(members.size());
      sc->measured.push_back(seconds);
      sc->predicted.push_back(p);
      sc->network_weights.push_back(weight);
    }
  }
  void print() const {
    print_header(network);
    for (const auto& [target, sc] : by_target) print_row(target, sc, network);
    if (by_target.size() > 1) print_row("all", all, network);
    std::printf("baseline, the static model's analytic estimate: pairwise");
    for (const auto& [target, sc] : baseline)
      std::printf(" %s %.4f", target.c_str(), cost::pairwise_accuracy(sc.measured, sc.predicted));
    std::printf("\n");
  }
  bool network;
  size_t est = 0;  // the static_est_seconds column
  std::map<std::string, Scores> by_target, baseline;
  Scores all;
};

// eval --folds: k-fold cross-validation within task. Each (task, target)
// group's candidates are dealt into k folds; for each fold an xgb model is
// trained on the others and judges it, so every candidate is judged once,
// and pairs are those within one fold of one group.
int eval_folds(const CostModelArgs& a) {
  TESSERA_CHECK(a.model == "xgb", "costmodel eval --folds trains xgb per fold; for --model ", a.model,
                " give --model-file and a split");
  TESSERA_CHECK(a.model_file.empty(), "costmodel eval --folds trains a model per fold: it reads no --model-file");
  TESSERA_CHECK(a.split == "none" || a.split == "within-task", "costmodel eval --folds is within task; --split ",
                a.split, " does not go with it");
  const CostDataset d = load_cost_dataset(a.records, a.datasets, a.cache, tune::parse_cost_label(a.label), !a.quiet);
  const std::vector<int> fold = cost::within_task_folds(split_items(d), a.folds, a.seed);
  EvalTables t(false);
  tune::Progress line(!a.quiet, "costmodel: ");
  const auto start = std::chrono::steady_clock::now();
  for (int f = 0; f < a.folds; ++f) {
    line.show("fold " + std::to_string(f + 1) + "/" + std::to_string(a.folds) + ", " + tune::duration_text(since(start)));
    const std::vector<cost::RankGroup> train = rank_groups(d, sample_groups(d, [&](size_t i) { return fold[i] != f; }));
    cost::XgbModel model(cost::HardwareDesc{}, 0, xgb_options(a));
    model.train(train);
    for (const auto& [key, members] : sample_groups(d, [&](size_t i) { return fold[i] == f; }))
      t.add(d, key, members, model.predict_rows(rows_of(d, members)), 0);
  }
  line.done();
  TESSERA_CHECK(t.all.candidates > 0, "no candidate to judge");
  std::printf("xgb (%d rounds), %d-fold cross-validation within task, seed %llu, label %s: %d candidates, each judged "
              "once by the model trained on the other folds (tasks: a task's fold groups)\n",
              a.rounds, a.folds, static_cast<unsigned long long>(a.seed), a.label.c_str(), t.all.candidates);
  t.print();
  return 0;
}

}  // namespace

cost::XgbOptions xgb_options(const CostModelArgs& a) {
  cost::XgbOptions o;
  o.rounds = a.rounds;
  o.threads = a.threads;
  o.seed = a.seed;
  return o;
}

cost::AttentionOptions attention_options(const CostModelArgs& a, const std::string& what) {
  cost::AttentionOptions o;
  o.epochs = a.epochs;
  o.fine_tune_epochs = a.fine_tune_epochs;
  o.fine_tune_anchor = a.fine_tune_anchor;
  o.threads = a.threads;
  o.seed = a.seed;
  if (!a.quiet) {
    auto line = std::make_shared<tune::Progress>(true, "costmodel: ");
    const auto start = std::chrono::steady_clock::now();
    o.on_epoch = [line, start, what](int epoch, int epochs, double loss) {
      char text[96];
      std::snprintf(text, sizeof text, " epoch %d/%d, loss %.4f, ", epoch, epochs, loss);
      line->show(what + text + tune::duration_text(since(start)), epoch == epochs);
      if (epoch == epochs) line->done();
    };
  }
  return o;
}

int cmd_costmodel_train(const CostModelArgs& a) {
  check_model(a.model);
  TESSERA_CHECK(!a.model_file.empty(), "costmodel train needs --out FILE (the model file to write)");
  SplitData s = load_split(a, a.model == "attention");
  if (a.model == "attention") return train_attention(a, s);
  const std::vector<cost::RankGroup> groups = rank_groups(s.data, groups_of(s, false));
  int candidates = 0;
  for (const cost::RankGroup& g : groups) candidates += static_cast<int>(g.rows.size());
  std::fprintf(stderr, "costmodel: training xgb (rank:pairwise, %d rounds) on %d candidates of %zu task-target groups\n",
               a.rounds, candidates, groups.size());
  const auto start = std::chrono::steady_clock::now();
  cost::XgbOptions xo = xgb_options(a);
  tune::Progress line(!a.quiet, "costmodel: ");
  xo.on_round = [&](int round, int rounds) {
    line.show("boosting round " + std::to_string(round) + "/" + std::to_string(rounds) + ", " +
              tune::duration_text(since(start)), round == rounds);
  };
  cost::XgbModel model(cost::HardwareDesc{}, 0, xo);
  model.train(groups);
  line.done();
  model.save(a.model_file);
  print_trained("xgb", groups, candidates, start, a.model_file,
                [&](const cost::RankGroup& g) { return model.predict_rows(g.rows); });
  return 0;
}

int cmd_costmodel_eval(const CostModelArgs& a) {
  check_model(a.model);
  if (a.folds > 0) return eval_folds(a);
  TESSERA_CHECK(!a.model_file.empty(), "costmodel eval needs --model-file FILE (made by 'tessera costmodel train') "
                                       "or --folds K (cross-validation within task, a model trained per fold)");
  cost::XgbModel xgb(cost::HardwareDesc{}, 0, xgb_options(a));
  cost::AttentionModel attention(cost::HardwareDesc{}, attention_options(a, ""));
  if (a.model == "xgb") xgb.load(a.model_file);
  else attention.load(a.model_file);
  SplitData s = load_split(a, a.model == "attention");
  EvalTables t(a.split == "by-network");
  for (const auto& [key, members] : groups_of(s, true)) {
    std::vector<double> p;
    if (a.model == "xgb") {
      p = xgb.predict_rows(rows_of(s.data, members));
    } else {
      std::vector<cost::ProgramSample> programs;
      for (size_t i : members) programs.push_back(program_sample(s.data.samples[i]));
      p = attention.predict_samples(programs);
    }
    double weight = 0;
    if (t.network)
      if (auto w = s.data.weights.find(key.first); w != s.data.weights.end() && w->second.count(a.held_out))
        weight = w->second.at(a.held_out);
    t.add(s.data, key, members, p, weight);
  }
  TESSERA_CHECK(t.all.candidates > 0, "the split's test part is empty");
  std::printf("model %s, split %s%s%s, label %s: test part of %d candidates\n", a.model_file.c_str(), a.split.c_str(),
              a.held_out.empty() ? "" : " held out ", a.held_out.c_str(), a.label.c_str(), t.all.candidates);
  t.print();
  return 0;
}

int cmd_costmodel_dump(const CostModelArgs& a) {
  TESSERA_CHECK(!a.model_file.empty(), "costmodel dump needs --out FILE");
  const CostDataset d = load_cost_dataset(a.records, a.datasets, a.cache, tune::parse_cost_label(a.label), !a.quiet, true);
  std::ofstream f(a.model_file);
  TESSERA_CHECK(f, "cannot write ", a.model_file);
  auto names = [](const std::vector<cost::ColumnDoc>& cols) {
    nlohmann::json n = nlohmann::json::array();
    for (const cost::ColumnDoc& c : cols) n.push_back(c.name);
    return n;
  };
  f << nlohmann::json{{"value_columns", names(cost::value_feature_columns())},
                      {"hardware_columns", names(cost::hardware_feature_columns())},
                      {"program_columns", names(cost::program_feature_columns())}}
           .dump()
    << "\n";
  for (const CostSample& c : d.samples)
    f << nlohmann::json{{"task", c.task},         {"target", c.target},     {"schedule", c.schedule},
                        {"seconds", c.seconds},   {"values", c.values},     {"hardware", c.hardware},
                        {"program", c.row}}
             .dump()
      << "\n";
  TESSERA_CHECK(f.flush(), "cannot write ", a.model_file);
  std::printf("%zu samples (%d could not be rebuilt) written to %s\n", d.samples.size(), d.skipped,
              a.model_file.c_str());
  return 0;
}

int cmd_costmodel_columns() {
  std::printf("per-store (value) features, %d columns:\n", cost::kValueFeatureCount);
  const auto& v = cost::value_feature_columns();
  for (size_t i = 0; i < v.size(); ++i) std::printf("%4zu  %-28s %s\n", i, v[i].name.c_str(), v[i].doc.c_str());
  std::printf("\nprogram row of the xgb model, %zu columns:\n", cost::program_feature_columns().size());
  const auto& p = cost::program_feature_columns();
  for (size_t i = 0; i < p.size(); ++i) std::printf("%4zu  %-40s %s\n", i, p[i].name.c_str(), p[i].doc.c_str());
  return 0;
}

void CostModelCommands::add(CLI::App& app) {
  costmodel_ = app.add_subcommand("costmodel", "learned cost models on a dataset of measured schedules "
                                               "('tessera dataset collect'): train, eval, transfer, prune, dump, "
                                               "columns");
  costmodel_->require_subcommand(1);
  train_ = costmodel_->add_subcommand("train", "train a ranking model on the train part of a split; write it to a file");
  eval_ = costmodel_->add_subcommand("eval", "judge a model file on the test part of a split, or xgb by k-fold "
                                             "cross-validation within task (--folds): pairwise accuracy (pairs, "
                                             "bootstrap 95% interval, TenSet's per-task average), top-k recall, "
                                             "peak score@k (and network top-k score by network)");
  dump_ = costmodel_->add_subcommand("dump", "write every measured schedule's features (JSON lines: a header of "
                                             "column names, then the per-store matrix, hardware vector and program "
                                             "row of each, with its cost)");
  transfer_ = costmodel_->add_subcommand(
      "transfer", "the attention model moved to a held-out target: trained on the other targets, fine-tuned on a "
                  "share of the held-out target's records (drawn at random within each of its task groups), judged "
                  "on its test part beside models trained on all its training records");
  prune_ = costmodel_->add_subcommand(
      "prune", "prune the dataset (random, cluster: representatives in feature space, loss: drop what a first model "
               "already ranks best, twins: a schedule measured on targets of one ISA kept on a share of them) and "
               "write the kept records; with --eval, xgb's accuracy against the share kept");
  columns_ = costmodel_->add_subcommand("columns", "list the feature columns and what each one is");
  dump_->add_option("--out", args_.model_file, "the JSON-lines file to write")->required();
  CostModelArgs& o = args_;
  for (CLI::App* c : {train_, eval_, transfer_, prune_, dump_}) {
    c->add_option("--records", o.records, "records files (JSON lines; 'tessera dataset merge' writes one)")
        ->delimiter(',')
        ->required();
    c->add_option("--dataset", o.datasets, "collection directories (their tasks.json names each task's network)")
        ->delimiter(',')
        ->required();
    c->add_option("--cache", o.cache, "feature cache file: rows found there are not computed again");
    c->add_option("--label", o.label,
                  "a schedule's cost from its repeated measurements: min (default; the least disturbed run), "
                  "median, or ratio (the tuner's pooled cost: median ratio to the paired default's runs)")
        ->check(CLI::IsMember({"min", "median", "ratio"}));
    c->add_flag("-q,--quiet", o.quiet, "no progress lines");
  }
  for (CLI::App* c : {transfer_, prune_}) {
    c->add_option("--seed", o.seed, "seed of the split, the draws and the models (default 1)");
    c->add_option("--threads", o.threads, "XGBoost's and torch's threads (default 1)")->check(CLI::Range(1, 256));
    c->add_option("--rounds", o.rounds, "xgb's boosting rounds (default 200)")->check(CLI::Range(1, 100000));
  }
  for (CLI::App* c : {train_, transfer_})
    c->add_option("--epochs", o.epochs, "attention: training passes over the groups (default 40)")
        ->check(CLI::Range(1, 100000));
  transfer_->add_option("--held-out", o.held_out, "the target held out (avx2-t1, ...)")->required();
  transfer_->add_option("--fine-tune-share", o.fine_tune_shares,
                        "shares of the held-out target's records to fine-tune on (default 0,0.05,0.10)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  transfer_->add_option("--test-share", o.test_share,
                        "share of each held-out task group's records judged on (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  transfer_->add_option("--fine-tune-anchor", o.fine_tune_anchor,
                        "weight of the weights' squared distance from the source model while fine-tuning (default 0.01)")
      ->check(CLI::Range(0.0, 1e6));
  transfer_->add_option("--fine-tune-epochs", o.fine_tune_epochs,
                        "passes over the held-out target's few records while fine-tuning (default 10)")
      ->check(CLI::Range(1, 100000));
  transfer_->add_option("--out", o.model_file, "also write the model trained on the other targets to this file");
  transfer_->add_option("--source-model", o.source_model,
                        "start from this model trained on the other targets (the --out of an earlier run with this "
                        "--held-out) instead of "
                        "training one")
      ->check(CLI::ExistingFile);
  transfer_->add_option("--fine-tuned-out", o.fine_tuned_file,
                        "also write the model fine-tuned on the largest --fine-tune-share to this file (what "
                        "'tessera tune --cost-model attention --cost-model-file' starts from on the held-out target)");
  prune_->add_option("--method", o.methods, "random, cluster, loss or twins (--eval: a comma list; default cluster)")
      ->delimiter(',');
  prune_->add_option("--keep", o.keeps, "share of each task group kept (--eval: a comma list; default 0.5)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  prune_->add_option("--out", o.model_file, "the pruned records file to write (without --eval)");
  prune_->add_flag("--eval", o.prune_eval,
                   "no file: for each method and share, xgb trained on the pruned train part of --split, judged on "
                   "its test part");
  prune_->add_option("--split", o.split, "--eval: the split (default within-task)");
  prune_->add_option("--test-share", o.test_share, "--eval: the split's test share (default 0.1)")
      ->check(CLI::Range(0.0, 1.0));
  prune_->add_option("--held-out", o.held_out, "--eval, split by-target or by-network: what is held out");
  for (CLI::App* c : {train_, eval_}) {
    c->add_option("--split", o.split,
                  "none (all: default), within-task, by-task, by-target, by-network; train fits the train part, "
                  "eval judges the test part (give both the same split options)");
    c->add_option("--test-share", o.test_share,
                  "within-task: share of each task's candidates held out; by-task: share of the tasks (default 0.1)")
        ->check(CLI::Range(0.0, 1.0));
    c->add_option("--held-out", o.held_out, "by-target: the target held out (avx2-t1, ...); by-network: the network");
    c->add_option("--seed", o.seed, "seed of the split and the model (default 1)");
    c->add_option("--threads", o.threads, "XGBoost's threads (default 1)")->check(CLI::Range(1, 256));
  }
  train_->add_option("--model", args_.model, "the model: xgb (default) or attention");
  eval_->add_option("--model", args_.model, "the model file's kind: xgb (default) or attention");
  train_->add_option("--out", args_.model_file, "the model file to write")->required();
  train_->add_option("--rounds", args_.rounds, "boosting rounds (default 200)")->check(CLI::Range(1, 100000));
  eval_->add_option("--model-file", args_.model_file, "the model file ('tessera costmodel train --out')");
  eval_->add_option("--folds", args_.folds,
                    "instead of a model file: k-fold cross-validation within task, xgb trained on k-1 folds of "
                    "each task's candidates and judged on the last, every candidate judged once")
      ->check(CLI::Range(2, 100));
  eval_->add_option("--rounds", args_.rounds, "--folds: xgb's boosting rounds (default 200)")
      ->check(CLI::Range(1, 100000));
}

int CostModelCommands::run() {
  if (!costmodel_ || !*costmodel_) return -1;
  if (*train_) return cmd_costmodel_train(args_);
  if (*eval_) return cmd_costmodel_eval(args_);
  if (*transfer_) {
    if (transfer_->count("--test-share") == 0) args_.test_share = 0.5;
    return cmd_costmodel_transfer(args_);
  }
  if (*prune_) {
    if (prune_->count("--split") == 0) args_.split = "within-task";
    return cmd_costmodel_prune(args_);
  }
  if (*dump_) return cmd_costmodel_dump(args_);
  return cmd_costmodel_columns();
}

}  // namespace tessera::tools
