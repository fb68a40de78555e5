// `tessera costmodel transfer` (see costmodel_command.h): the attention
// model trained on every target but one, fine-tuned on a share of the
// held-out target's records and judged on the rest of them, beside models
// trained on all of that target's training records. The held-out target's
// records are split within each of its task groups (test share of each
// group judged on; the rest is the training pool); a fine-tuning share f
// draws round(f × group size) records (at least two: one pair) at random
// from each group's pool, so every task of the target is seen a little.
// --fine-tuned-out writes the copy fine-tuned on the largest share: the
// transferred model the tuner starts from on the held-out target;
// --source-model starts from an earlier run's --out instead of training.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include <unistd.h>

#include "cost/dataset_split.h"
#include "cost/ranking_metrics.h"
#include "costmodel_command.h"
#include "costmodel_data.h"
#include "support/error.h"
#include "tune/progress.h"

namespace tessera::tools {

namespace {

using Groups = std::map<GroupKey, std::vector<size_t>>;

// Pairwise accuracy, peak score@5 and top-5 recall of scores (higher =
// faster) on the test groups.
struct Judged {
  double pairwise, peak5, recall5;
};

Judged judge(const CostDataset& d, const Groups& test, const std::function<std::vector<double>(const std::vector<size_t>&)>& score) {
  cost::CostGroups measured, predicted;
  for (const auto& [key, members] : test) {
    std::vector<double> m;
    for (size_t i : members) m.push_back(d.samples[i].seconds);
    measured.push_back(std::move(m));
    predicted.push_back(cost::costs_from_scores(score(members)));
  }
  return {cost::pairwise_accuracy(measured, predicted), cost::peak_score(measured, predicted, 5),
          cost::top_k_recall(measured, predicted, 5)};
}

void print_row(const std::string& name, size_t records, double share, const Judged& j) {
  std::printf("%-44s %8zu %7.3f %9.4f %8.4f %9.4f\n", name.c_str(), records, share, j.pairwise, j.peak5, j.recall5);
  std::fflush(stdout);
}

}  // namespace

int cmd_costmodel_transfer(const CostModelArgs& a) {
  const CostDataset d = load_cost_dataset(a.records, a.datasets, a.cache, tune::parse_cost_label(a.label), !a.quiet, true);
  std::set<std::string> targets;
  for (const CostSample& c : d.samples) targets.insert(c.target);
  std::string names;
  for (const std::string& t : targets) names += (names.empty() ? "" : ", ") + t;
  TESSERA_CHECK(targets.count(a.held_out), "--held-out '", a.held_out, "' is no target of the records (they have: ",
                names, ")");
  TESSERA_CHECK(targets.size() >= 2, "transfer needs records of two targets or more (they have: ", names, ")");
  const double largest =
      a.fine_tune_shares.empty() ? -1 : *std::max_element(a.fine_tune_shares.begin(), a.fine_tune_shares.end());
  TESSERA_CHECK(a.source_model.empty() || a.model_file.empty(),
                "--source-model reads the model trained on the other targets: there is none to write to --out");
  TESSERA_CHECK(a.fine_tuned_file.empty() || largest >= 0, "--fine-tuned-out needs a --fine-tune-share to fine-tune on");
  if (!a.fine_tuned_file.empty()) {  // checked before training, not after
    const std::filesystem::path dir = std::filesystem::path(a.fine_tuned_file).parent_path();
    TESSERA_CHECK(dir.empty() || std::filesystem::is_directory(dir), "--fine-tuned-out ", a.fine_tuned_file,
                  ": no directory ", dir.string());
  }

  // The held-out target's records split within each task group.
  std::vector<size_t> held;
  std::vector<cost::SplitItem> items;
  for (size_t i = 0; i < d.samples.size(); ++i)
    if (d.samples[i].target == a.held_out) {
      held.push_back(i);
      items.push_back({d.samples[i].task, d.samples[i].target, {}});
    }
  cost::SplitOptions so;
  so.split = cost::Split::WithinTask;
  so.test_share = a.test_share;
  so.seed = a.seed;
  const std::vector<bool> test_item = cost::test_items(items, so);
  std::vector<char> in_test(d.samples.size(), 0);
  for (size_t k = 0; k < held.size(); ++k) in_test[held[k]] = test_item[k];
  const Groups source = sample_groups(d, [&](size_t i) { return d.samples[i].target != a.held_out; });
  const Groups pool = sample_groups(d, [&](size_t i) { return d.samples[i].target == a.held_out && !in_test[i]; });
  const Groups test = sample_groups(d, [&](size_t i) { return d.samples[i].target == a.held_out && in_test[i]; });
  size_t source_n = 0, pool_n = 0, test_n = 0;
  for (const auto& [k, m] : source) source_n += m.size();
  for (const auto& [k, m] : pool) pool_n += m.size();
  for (const auto& [k, m] : test) test_n += m.size();
  const size_t held_n = held.size();
  std::fprintf(stderr,
               "costmodel: transfer to %s: %zu records of %zu groups on the other targets; %zu of %s (%zu to train "
               "from, %zu judged on)\n",
               a.held_out.c_str(), source_n, source.size(), held_n, a.held_out.c_str(), pool_n, test_n);
  TESSERA_CHECK(!test.empty() && !pool.empty(), "the held-out target's records split into an empty part (",
                pool_n, " to train from, ", test_n, " judged on): change --test-share");

  std::string path = a.source_model;
  if (path.empty()) {
    const auto start = std::chrono::steady_clock::now();
    cost::AttentionModel source_model(cost::HardwareDesc{}, attention_options(a, "training on the other targets"));
    source_model.train(sample_groups_of(d, source));
    path = a.model_file.empty() ? (std::filesystem::temp_directory_path() /
                                   ("tessera-transfer-" + std::to_string(::getpid()) + ".pt"))
                                      .string()
                                : a.model_file;
    source_model.save(path);
    std::fprintf(stderr, "costmodel: trained on the other targets in %s\n",
                 tune::duration_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
                     .c_str());
  }
  std::printf("transfer to %s: trained on %zu records of %zu other targets; judged on %zu of its %zu records "
              "(%zu task groups); label %s\n",
              a.held_out.c_str(), source_n, targets.size() - 1, test_n, held_n, test.size(), a.label.c_str());
  std::printf("%-44s %8s %7s %9s %8s %9s\n", "model", "records", "share", "pairwise", "peak@5", "recall@5");
  auto attention_score = [&](const cost::AttentionModel& m) {
    return [&](const std::vector<size_t>& members) {
      std::vector<cost::ProgramSample> programs;
      for (size_t i : members) programs.push_back(program_sample(d.samples[i]));
      return m.predict_samples(programs);
    };
  };
  bool written = false;
  for (double share : a.fine_tune_shares) {
    cost::AttentionModel m(cost::HardwareDesc{}, attention_options(a, "fine-tuning on " + std::to_string(share)));
    m.load(path);
    Groups tune_on;
    size_t used = 0;
    if (share > 0) {
      size_t gi = 0;
      for (const auto& [key, members] : pool) {
        const size_t whole = members.size() + (test.count(key) ? test.at(key).size() : 0);
        const size_t want = std::min(members.size(), std::max<size_t>(2, static_cast<size_t>(std::llround(share * whole))));
        std::vector<size_t> draw = members;
        std::mt19937_64 rng(a.seed * 1000003 + gi++);
        std::shuffle(draw.begin(), draw.end(), rng);
        draw.resize(want);
        used += want;
        tune_on[key] = std::move(draw);
      }
      m.update(sample_groups_of(d, tune_on));
    }
    char name[64];
    std::snprintf(name, sizeof name, "attention, fine-tuned on %g%%", share * 100);
    print_row(share > 0 ? name : "attention, other targets only (0%)", used,
              static_cast<double>(used) / static_cast<double>(held_n), judge(d, test, attention_score(m)));
    if (!a.fine_tuned_file.empty() && share == largest && !written) {
      m.save(a.fine_tuned_file);
      written = true;
      std::fprintf(stderr, "costmodel: the model fine-tuned on %g%% of %s written to %s\n", share * 100,
                   a.held_out.c_str(), a.fine_tuned_file.c_str());
    }
  }
  if (a.model_file.empty() && a.source_model.empty()) std::filesystem::remove(path);

  cost::AttentionModel own(cost::HardwareDesc{}, attention_options(a, "training on " + a.held_out + " alone"));
  own.train(sample_groups_of(d, pool));
  print_row("attention, all of " + a.held_out + "'s training records", pool_n,
            static_cast<double>(pool_n) / static_cast<double>(held_n), judge(d, test, attention_score(own)));
  cost::XgbModel xgb(cost::HardwareDesc{}, 0, xgb_options(a));
  xgb.train(rank_groups(d, pool));
  print_row("xgb, all of " + a.held_out + "'s training records", pool_n,
            static_cast<double>(pool_n) / static_cast<double>(held_n), judge(d, test, [&](const std::vector<size_t>& members) {
              std::vector<std::vector<float>> rows;
              for (size_t i : members) rows.push_back(d.samples[i].row);
              return xgb.predict_rows(rows);
            }));
  return 0;
}

}  // namespace tessera::tools
