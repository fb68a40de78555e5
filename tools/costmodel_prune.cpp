// `tessera costmodel prune` (see costmodel_command.h and cost/dataset_prune.h):
// the kept records written to a file, or, with --eval, xgb trained on the
// pruned train part of a split and judged on its (unpruned) test part, for
// every method and share asked, beside the whole train part.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <tuple>

#include "cost/dataset_prune.h"
#include "cost/dataset_split.h"
#include "cost/ranking_metrics.h"
#include "costmodel_command.h"
#include "costmodel_data.h"
#include "support/error.h"
#include "support/target.h"
#include "tune/record.h"

namespace tessera::tools {

namespace {

using Groups = std::map<GroupKey, std::vector<size_t>>;

cost::PruneOptions prune_options(const CostModelArgs& a, const std::string& method, double keep) {
  cost::PruneOptions o;
  o.method = cost::parse_prune_method(method);
  o.keep = keep;
  o.seed = a.seed;
  o.xgb = xgb_options(a);
  return o;
}

// The twins method's view of the groups: a family is a task on the targets
// of one ISA (the dataset's targets of one ISA differ in threads only: they
// measure the same schedules, lowered alike), a program its schedule text.
std::vector<cost::PruneTwins> prune_twins(const CostDataset& d, const Groups& groups) {
  std::map<std::string, std::string> isa;  // target name -> ISA
  for (const auto& [text, name] : d.target_names) isa[name] = std::string(isa_name(Target::parse(text).isa));
  std::vector<cost::PruneTwins> out;
  for (const auto& [key, members] : groups) {
    auto it = isa.find(key.second);
    cost::PruneTwins t{key.first + " " + (it == isa.end() ? key.second : it->second), {}};
    for (size_t i : members) t.programs.push_back(d.samples[i].schedule);
    out.push_back(std::move(t));
  }
  return out;
}

// The kept records of the record files written to a.model_file.
int write_pruned(const CostModelArgs& a, const CostDataset& d) {
  TESSERA_CHECK(a.methods.size() == 1 && a.keeps.size() == 1,
                "costmodel prune writes one file: give one --method and one --keep (or --eval to compare several)");
  TESSERA_CHECK(!a.model_file.empty(), "costmodel prune needs --out FILE (the pruned records file) or --eval");
  TESSERA_CHECK(a.keeps[0] > 0, "--keep must be above 0");
  const Groups groups = sample_groups(d, [](size_t) { return true; });
  const std::vector<std::vector<bool>> kept =
      cost::prune(rank_groups(d, groups), prune_options(a, a.methods[0], a.keeps[0]), prune_twins(d, groups));
  std::set<std::tuple<std::string, std::string, std::string>> keys;  // task, target name, schedule
  size_t gi = 0, small = 0;
  for (const auto& [key, members] : groups) {
    for (size_t k = 0; k < members.size(); ++k)
      if (kept[gi][k]) keys.insert({d.samples[members[k]].task, d.samples[members[k]].target, d.samples[members[k]].schedule});
    const auto k = static_cast<size_t>(std::count(kept[gi].begin(), kept[gi].end(), true));
    small += k == std::min<size_t>(members.size(), 2) && k > static_cast<size_t>(std::ceil(a.keeps[0] * members.size() - 1e-9));
    ++gi;
  }
  std::ofstream out(a.model_file);
  TESSERA_CHECK(out, "cannot write ", a.model_file);
  size_t lines = 0, dropped = 0;
  for (const std::string& path : a.records) {
    tune::RecordFile rf(path);
    for (const tune::Record& r : rf.records()) {
      auto name = d.target_names.find(r.target);
      if (name != d.target_names.end() && keys.count({r.task_key, name->second, r.schedule})) {
        out << tune::to_json(r) << "\n";
        ++lines;
      } else {
        ++dropped;
      }
    }
  }
  TESSERA_CHECK(out.flush(), "cannot write ", a.model_file);
  std::printf("pruned by %s to %.3f: kept %zu of %zu measured schedules (%.3f) in %zu task groups, none dropped whole "
              "(%zu groups kept two, their one pair, above the share); %zu records written to %s, %zu left out\n",
              a.methods[0].c_str(), a.keeps[0], keys.size(), d.samples.size(),
              static_cast<double>(keys.size()) / static_cast<double>(d.samples.size()), groups.size(), small, lines,
              a.model_file.c_str(), dropped);
  return 0;
}

}  // namespace

int cmd_costmodel_prune(const CostModelArgs& a) {
  const CostDataset d = load_cost_dataset(a.records, a.datasets, a.cache, tune::parse_cost_label(a.label), !a.quiet);
  if (!a.prune_eval) return write_pruned(a, d);
  cost::SplitOptions so;
  so.split = cost::parse_split(a.split);
  TESSERA_CHECK(so.split != cost::Split::None, "costmodel prune --eval needs a split with a test part (--split)");
  so.test_share = a.test_share;
  so.held_out = a.held_out;
  so.seed = a.seed;
  const std::vector<bool> test = cost::test_items(split_items(d), so);
  const Groups train = sample_groups(d, [&](size_t i) { return !test[i]; });
  const Groups judged = sample_groups(d, [&](size_t i) { return test[i]; });
  const std::vector<cost::RankGroup> train_groups = rank_groups(d, train), test_groups = rank_groups(d, judged);
  const std::vector<cost::PruneTwins> twins = prune_twins(d, train);
  size_t train_n = 0;
  for (const cost::RankGroup& g : train_groups) train_n += g.rows.size();
  std::printf("pruning the train part of split %s (%zu records, %zu task groups); xgb judged on %zu test groups; label %s\n",
              a.split.c_str(), train_n, train_groups.size(), test_groups.size(), a.label.c_str());
  std::printf("%-8s %6s %8s %7s %9s %8s\n", "method", "keep", "records", "kept", "pairwise", "peak@5");
  auto run = [&](const std::string& method, double keep, const std::vector<cost::RankGroup>& groups) {
    size_t n = 0;
    for (const cost::RankGroup& g : groups) n += g.rows.size();
    cost::XgbModel m(cost::HardwareDesc{}, 0, xgb_options(a));
    m.train(groups);
    cost::CostGroups measured, predicted;
    for (const cost::RankGroup& g : test_groups) {
      measured.push_back(g.seconds);
      predicted.push_back(cost::costs_from_scores(m.predict_rows(g.rows)));
    }
    std::printf("%-8s %6.3f %8zu %7.3f %9.4f %8.4f\n", method.c_str(), keep, n,
                static_cast<double>(n) / static_cast<double>(train_n), cost::pairwise_accuracy(measured, predicted),
                cost::peak_score(measured, predicted, 5));
    std::fflush(stdout);
  };
  run("all", 1, train_groups);
  for (const std::string& method : a.methods)
    for (double keep : a.keeps) {
      if (keep >= 1) continue;
      TESSERA_CHECK(keep > 0, "--keep must be above 0");
      const std::vector<std::vector<bool>> kept = cost::prune(train_groups, prune_options(a, method, keep), twins);
      std::vector<cost::RankGroup> pruned;
      for (size_t gi = 0; gi < train_groups.size(); ++gi) {
        cost::RankGroup g;
        for (size_t k = 0; k < kept[gi].size(); ++k)
          if (kept[gi][k]) {
            g.rows.push_back(train_groups[gi].rows[k]);
            g.seconds.push_back(train_groups[gi].seconds[k]);
          }
        pruned.push_back(std::move(g));
      }
      run(method, keep, pruned);
    }
  return 0;
}

}  // namespace tessera::tools
