// Training the attention network (see attention_fit.h).
#include "attention/attention_fit.h"

#include <cmath>
#include <map>
#include <numeric>
#include <random>

namespace tessera::attention {

std::vector<ProgramView> views_of(const tessera_attention_programs& p) {
  std::vector<ProgramView> out;
  out.reserve(static_cast<size_t>(p.count));
  const float* rows = p.rows;
  for (int64_t i = 0; i < p.count; ++i) {
    out.push_back({rows, p.row_counts[i], p.hardware + i * p.hardware_width});
    rows += p.row_counts[i] * p.features;
  }
  return out;
}

Groups groups_of(const tessera_attention_programs& p) {
  Groups out;
  out.features = p.features;
  out.hardware_width = p.hardware_width;
  std::map<int64_t, size_t> index;
  const std::vector<ProgramView> views = views_of(p);
  for (int64_t i = 0; i < p.count; ++i) {
    auto [it, fresh] = index.emplace(p.groups[i], out.programs.size());
    if (fresh) {
      out.programs.emplace_back();
      out.labels.emplace_back();
    }
    out.programs[it->second].push_back(views[static_cast<size_t>(i)]);
    out.labels[it->second].push_back(p.labels[i]);
  }
  return out;
}

void fit_scaling(Net& net, const Groups& groups) {
  const int64_t F = groups.features, H = groups.hardware_width;
  std::vector<double> sx(F, 0), sxx(F, 0), sh(H, 0), shh(H, 0);
  double rows = 0, programs = 0;
  for (const std::vector<ProgramView>& g : groups.programs)
    for (const ProgramView& p : g) {
      for (int64_t i = 0; i < p.n * F; ++i) {
        const double v = p.rows[i];
        sx[i % F] += v;
        sxx[i % F] += v * v;
      }
      rows += static_cast<double>(p.n);
      for (int64_t c = 0; c < H; ++c) {
        sh[c] += p.hw[c];
        shh[c] += static_cast<double>(p.hw[c]) * p.hw[c];
      }
      programs += 1;
    }
  auto stats = [](const std::vector<double>& s, const std::vector<double>& ss, double n, torch::Tensor& mean,
                  torch::Tensor& sd) {
    std::vector<float> m(s.size()), d(s.size());
    for (size_t c = 0; c < s.size(); ++c) {
      m[c] = static_cast<float>(s[c] / n);
      const double var = ss[c] / n - (s[c] / n) * (s[c] / n);
      d[c] = var > 1e-8 ? static_cast<float>(std::sqrt(var)) : 1.0f;
    }
    torch::NoGradGuard no_grad;
    mean.copy_(torch::tensor(m));
    sd.copy_(torch::tensor(d));
  };
  stats(sx, sxx, rows, net->in_mean, net->in_std);
  stats(sh, shh, programs, net->hw_mean, net->hw_std);
}

void fit(Net& net, const Groups& groups, const tessera_attention_options& o) {
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(o.lr));
  std::vector<torch::Tensor> start;  // the weights fine-tuning starts from
  if (o.anchor > 0)
    for (const torch::Tensor& p : net->parameters()) start.push_back(p.detach().clone());
  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(groups.programs.size());
  std::iota(order.begin(), order.end(), 0);
  net->train();
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int steps = 0;
    std::vector<const ProgramView*> batch;
    std::vector<float> labels;
    std::vector<int64_t> group;
    auto step = [&] {
      if (batch.empty()) return;
      const Batch b = batch_of(batch, groups.features, groups.hardware_width);
      const torch::Tensor s = net->forward(b.x, b.mask, b.hw);
      const torch::Tensor y = torch::tensor(labels);
      const torch::Tensor gid = torch::tensor(group);
      const torch::Tensor pairs =
          (gid.unsqueeze(1) == gid.unsqueeze(0)).logical_and(y.unsqueeze(1) > y.unsqueeze(0)).to(torch::kFloat);
      const torch::Tensor n = pairs.sum();
      if (n.item<float>() > 0) {
        torch::Tensor loss = (torch::softplus(-(s.unsqueeze(1) - s.unsqueeze(0))) * pairs).sum() / n;
        if (o.anchor > 0) {
          const std::vector<torch::Tensor> params = net->parameters();
          for (size_t k = 0; k < params.size(); ++k) loss = loss + o.anchor * (params[k] - start[k]).pow(2).sum();
        }
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss_sum += loss.item<double>();
        ++steps;
      }
      batch.clear();
      labels.clear();
      group.clear();
    };
    std::vector<size_t> pick;
    for (size_t g : order) {
      const std::vector<ProgramView>& progs = groups.programs[g];
      pick.resize(progs.size());
      std::iota(pick.begin(), pick.end(), 0);
      if (progs.size() > static_cast<size_t>(o.group_batch)) {
        std::shuffle(pick.begin(), pick.end(), rng);
        pick.resize(static_cast<size_t>(o.group_batch));
      }
      for (size_t i : pick) {
        batch.push_back(&progs[i]);
        labels.push_back(groups.labels[g][i]);
        group.push_back(static_cast<int64_t>(g));
      }
      if (batch.size() >= static_cast<size_t>(o.batch)) step();
    }
    step();
    if (o.on_epoch) o.on_epoch(o.on_epoch_context, epoch + 1, o.epochs, steps ? loss_sum / steps : 0.0);
  }
  net->eval();
}

}  // namespace tessera::attention
