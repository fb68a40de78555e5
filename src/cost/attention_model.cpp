// The attention cost model on libtorch (see attention_model.h).
#include "cost/attention_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <sstream>

#include "cost/program_features.h"
#include "cost/value_features.h"
#include "support/error.h"

namespace tessera::cost {

namespace {

// The network: store rows and the hardware vector (both slog'd, then
// standardised by the buffers fitted at train()) embedded, joined, attended
// over, pooled and scored.
struct NetImpl : torch::nn::Module {
  NetImpl(int64_t in, int64_t hw, int64_t d, int64_t heads_) : heads(heads_) {
    store1 = register_module("store1", torch::nn::Linear(in, d));
    store2 = register_module("store2", torch::nn::Linear(d, d));
    hw1 = register_module("hw1", torch::nn::Linear(hw, d));
    hw2 = register_module("hw2", torch::nn::Linear(d, d));
    wq = register_module("wq", torch::nn::Linear(d, d));
    wk = register_module("wk", torch::nn::Linear(d, d));
    wv = register_module("wv", torch::nn::Linear(d, d));
    wo = register_module("wo", torch::nn::Linear(d, d));
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    ff1 = register_module("ff1", torch::nn::Linear(d, 2 * d));
    ff2 = register_module("ff2", torch::nn::Linear(2 * d, d));
    head1 = register_module("head1", torch::nn::Linear(3 * d + 1, d));
    head2 = register_module("head2", torch::nn::Linear(d, 1));
    in_mean = register_buffer("in_mean", torch::zeros({in}));
    in_std = register_buffer("in_std", torch::ones({in}));
    hw_mean = register_buffer("hw_mean", torch::zeros({hw}));
    hw_std = register_buffer("hw_std", torch::ones({hw}));
  }

  // x [B, S, F] store rows (padded), mask [B, S] 1 for a real store, hw [B, H]: a score per program.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& hwv) {
    const torch::Tensor e = store2(torch::relu(store1((x - in_mean) / in_std)));
    const torch::Tensor h = hw2(torch::relu(hw1((hwv - hw_mean) / hw_std)));
    torch::Tensor t = e + h.unsqueeze(1);  // every store token knows the machine
    const int64_t B = t.size(0), S = t.size(1), d = t.size(2), dh = d / heads;
    auto split = [&](const torch::Tensor& z) { return z.view({B, S, heads, dh}).transpose(1, 2); };
    const torch::Tensor q = split(wq(t)), k = split(wk(t)), v = split(wv(t));
    torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
    att = torch::softmax(att.masked_fill(mask.view({B, 1, 1, S}) == 0, -1e9), -1);  // padding is never attended to
    t = norm1(t + wo(torch::matmul(att, v).transpose(1, 2).reshape({B, S, d})));
    t = norm2(t + ff2(torch::relu(ff1(t))));
    const torch::Tensor m = mask.unsqueeze(2);
    const torch::Tensor count = mask.sum(1, true);
    const torch::Tensor mean = (t * m).sum(1) / count;
    const torch::Tensor max = t.masked_fill(m == 0, -1e9).amax(1);
    return head2(torch::relu(head1(torch::cat({mean, max, h, torch::log(count)}, 1)))).squeeze(1);
  }

  int64_t heads;
  torch::nn::Linear store1{nullptr}, store2{nullptr}, hw1{nullptr}, hw2{nullptr}, wq{nullptr}, wk{nullptr},
      wv{nullptr}, wo{nullptr}, ff1{nullptr}, ff2{nullptr}, head1{nullptr}, head2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::Tensor in_mean, in_std, hw_mean, hw_std;
};
TORCH_MODULE(Net);

// The feature layout a model file is made for: its value and hardware columns' names.
std::string layout() {
  std::string s;
  for (const ColumnDoc& c : value_feature_columns()) s += c.name + ",";
  s += ";";
  for (const ColumnDoc& c : hardware_feature_columns()) s += c.name + ",";
  return s;
}

int64_t hardware_width() { return static_cast<int64_t>(hardware_feature_columns().size()); }

// Torch's intra-op threads set for a scope, given back at its end.
struct TorchThreads {
  int before;
  explicit TorchThreads(int n) : before(torch::get_num_threads()) { torch::set_num_threads(std::max(1, n)); }
  ~TorchThreads() { torch::set_num_threads(before); }
};

// A program's rows slog'd, flat (n rows of kValueFeatureCount), and its hardware vector slog'd.
struct Prepared {
  std::vector<float> x;
  int64_t n = 0;
  std::vector<float> hw;
};

Prepared prepare(const ProgramSample& p) {
  Prepared out;
  TESSERA_CHECK(static_cast<int64_t>(p.hardware.size()) == hardware_width(), "attention model: a hardware vector of ",
                p.hardware.size(), " values, expected ", hardware_width());
  for (const std::vector<double>& r : p.values) {
    TESSERA_CHECK(r.size() == static_cast<size_t>(kValueFeatureCount), "attention model: a store row of ", r.size(),
                  " values, expected ", kValueFeatureCount);
    for (double v : r) out.x.push_back(static_cast<float>(slog(v)));
  }
  out.n = static_cast<int64_t>(p.values.size());
  if (out.n == 0) {  // a program without stores: one row of zeros
    out.x.assign(kValueFeatureCount, 0.0f);
    out.n = 1;
  }
  for (double v : p.hardware) out.hw.push_back(static_cast<float>(slog(v)));
  return out;
}

struct Batch {
  torch::Tensor x, mask, hw;
};

Batch batch_of(const std::vector<const Prepared*>& ps) {
  const int64_t B = static_cast<int64_t>(ps.size()), F = kValueFeatureCount, H = hardware_width();
  int64_t S = 1;
  for (const Prepared* p : ps) S = std::max(S, p->n);
  std::vector<float> x(static_cast<size_t>(B * S * F), 0.0f), mask(static_cast<size_t>(B * S), 0.0f), hw;
  hw.reserve(static_cast<size_t>(B * H));
  for (int64_t b = 0; b < B; ++b) {
    std::copy(ps[b]->x.begin(), ps[b]->x.end(), x.begin() + b * S * F);
    std::fill_n(mask.begin() + b * S, ps[b]->n, 1.0f);
    hw.insert(hw.end(), ps[b]->hw.begin(), ps[b]->hw.end());
  }
  auto tensor = [](std::vector<float>& v, std::vector<int64_t> shape) {
    return torch::from_blob(v.data(), shape, torch::kFloat).clone();
  };
  return {tensor(x, {B, S, F}), tensor(mask, {B, S}), tensor(hw, {B, H})};
}

// A group teaches the ranking something when two of its costs differ.
bool teaches(const SampleGroup& g) {
  if (g.programs.size() < 2) return false;
  return std::any_of(g.seconds.begin(), g.seconds.end(), [&](double s) { return s != g.seconds.front(); });
}

// The teaching groups, prepared, with each program's label (the group's best cost over its own).
struct PreparedGroups {
  std::vector<std::vector<Prepared>> programs;
  std::vector<std::vector<float>> labels;
};

PreparedGroups prepare_groups(const std::vector<SampleGroup>& groups) {
  PreparedGroups out;
  for (const SampleGroup& g : groups) {
    TESSERA_CHECK(g.programs.size() == g.seconds.size(), "attention model: a group of ", g.programs.size(),
                  " programs has ", g.seconds.size(), " costs");
    if (!teaches(g)) continue;
    const double best = *std::min_element(g.seconds.begin(), g.seconds.end());
    out.programs.emplace_back();
    out.labels.emplace_back();
    for (size_t i = 0; i < g.programs.size(); ++i) {
      TESSERA_CHECK(g.seconds[i] > 0 && std::isfinite(g.seconds[i]),
                    "attention model: a measured cost must be positive, got ", g.seconds[i]);
      out.programs.back().push_back(prepare(g.programs[i]));
      out.labels.back().push_back(static_cast<float>(best / g.seconds[i]));
    }
  }
  return out;
}

std::string serialize(const Net& net) {
  torch::serialize::OutputArchive a;
  net->save(a);
  a.write("tessera_layout", c10::IValue(layout()));
  a.write("tessera_dims", torch::tensor({static_cast<int64_t>(kValueFeatureCount), hardware_width(),
                                         net->store1->options.out_features(), net->heads},
                                        torch::kLong));
  std::ostringstream os;
  a.save_to(os);
  return os.str();
}

// The network of a serialized model; `what` names its source in errors.
Net deserialize(const std::string& bytes, const std::string& what) {
  torch::serialize::InputArchive a;
  c10::IValue lay;
  torch::Tensor dims;
  try {
    std::istringstream is(bytes);
    a.load_from(is);
    a.read("tessera_layout", lay);
    a.read("tessera_dims", dims);
  } catch (const c10::Error& e) {
    TESSERA_FAIL("model file ", what, " is not an attention model: ", e.what_without_backtrace());
  }
  if (!lay.isString() || lay.toStringRef() != layout() || dims.numel() != 4)
    TESSERA_FAIL("model file ", what,
                 " was made for another feature layout (an older or newer tessera): train it again "
                 "(tessera costmodel train --model attention)");
  Net net(dims[0].item<int64_t>(), dims[1].item<int64_t>(), dims[2].item<int64_t>(), dims[3].item<int64_t>());
  try {
    net->load(a);
  } catch (const c10::Error& e) {
    TESSERA_FAIL("model file ", what, " is not an attention model: ", e.what_without_backtrace());
  }
  return net;
}

}  // namespace

struct AttentionModel::State {
  Net net{nullptr};
  std::string base;  // the weights train() or load() left, for update() to start from
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

bool AttentionModel::trained() const { return state_ && !state_->net.is_empty(); }

ProgramSample AttentionModel::sample_of(const Candidate& candidate, const HardwareDesc& hw) {
  ProgramSample s;
  s.values = value_features(*candidate.kernel, hw).rows;
  s.hardware = hardware_features(hw);
  return s;
}

std::vector<double> AttentionModel::predict_samples(const std::vector<ProgramSample>& programs) const {
  std::vector<double> out(programs.size(), 0.0);
  if (!trained() || programs.empty()) return out;
  TorchThreads threads(options_.threads);
  torch::NoGradGuard no_grad;
  state_->net->eval();
  constexpr size_t kChunk = 512;
  for (size_t at = 0; at < programs.size(); at += kChunk) {
    const size_t end = std::min(programs.size(), at + kChunk);
    std::vector<Prepared> ps;
    for (size_t i = at; i < end; ++i) ps.push_back(prepare(programs[i]));
    std::vector<const Prepared*> ptrs;
    for (const Prepared& p : ps) ptrs.push_back(&p);
    const Batch b = batch_of(ptrs);
    const torch::Tensor s = state_->net->forward(b.x, b.mask, b.hw).contiguous();
    const float* v = s.data_ptr<float>();
    for (size_t i = at; i < end; ++i) out[i] = v[i - at];
  }
  return out;
}

std::vector<double> AttentionModel::predict(const std::vector<Candidate>& candidates) const {
  std::vector<ProgramSample> samples;
  samples.reserve(candidates.size());
  for (const Candidate& c : candidates) samples.push_back(sample_of(c, hw_));
  std::vector<double> score = predict_samples(samples);
  for (double& s : score) s = -s;
  return score;
}

namespace {

// Standardisation of the network's inputs fitted to the training programs
// (a column that does not vary is left unscaled).
void fit_scaling(Net& net, const PreparedGroups& pg) {
  const int64_t F = kValueFeatureCount, H = hardware_width();
  std::vector<double> sx(F, 0), sxx(F, 0), sh(H, 0), shh(H, 0);
  double rows = 0, programs = 0;
  for (const std::vector<Prepared>& g : pg.programs)
    for (const Prepared& p : g) {
      for (int64_t r = 0; r < p.n; ++r)
        for (int64_t c = 0; c < F; ++c) {
          const double v = p.x[static_cast<size_t>(r * F + c)];
          sx[c] += v;
          sxx[c] += v * v;
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

// Passes of Adam over the groups: each step a batch of whole groups (up to
// group_batch programs drawn from each), RankNet's loss over the pairs of a
// group with different labels.
void fit(Net& net, const PreparedGroups& pg, const AttentionOptions& o, int epochs, double lr, double anchor = 0) {
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(lr));
  std::vector<torch::Tensor> start;  // the weights fine-tuning starts from
  if (anchor > 0)
    for (const torch::Tensor& p : net->parameters()) start.push_back(p.detach().clone());
  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(pg.programs.size());
  std::iota(order.begin(), order.end(), 0);
  net->train();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int steps = 0;
    std::vector<const Prepared*> batch;
    std::vector<float> labels;
    std::vector<int64_t> group;
    auto step = [&] {
      if (batch.empty()) return;
      const Batch b = batch_of(batch);
      const torch::Tensor s = net->forward(b.x, b.mask, b.hw);
      const torch::Tensor y = torch::tensor(labels);
      const torch::Tensor gid = torch::tensor(group);
      const torch::Tensor pairs =
          (gid.unsqueeze(1) == gid.unsqueeze(0)).logical_and(y.unsqueeze(1) > y.unsqueeze(0)).to(torch::kFloat);
      const torch::Tensor n = pairs.sum();
      if (n.item<float>() > 0) {
        torch::Tensor loss = (torch::softplus(-(s.unsqueeze(1) - s.unsqueeze(0))) * pairs).sum() / n;
        if (anchor > 0) {
          const std::vector<torch::Tensor> params = net->parameters();
          for (size_t k = 0; k < params.size(); ++k) loss = loss + anchor * (params[k] - start[k]).pow(2).sum();
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
      const std::vector<Prepared>& progs = pg.programs[g];
      pick.resize(progs.size());
      std::iota(pick.begin(), pick.end(), 0);
      if (progs.size() > static_cast<size_t>(o.group_batch)) {
        std::shuffle(pick.begin(), pick.end(), rng);
        pick.resize(static_cast<size_t>(o.group_batch));
      }
      for (size_t i : pick) {
        batch.push_back(&progs[i]);
        labels.push_back(pg.labels[g][i]);
        group.push_back(static_cast<int64_t>(g));
      }
      if (batch.size() >= static_cast<size_t>(o.batch)) step();
    }
    step();
    if (o.on_epoch) o.on_epoch(epoch + 1, epochs, steps ? loss_sum / steps : 0.0);
  }
  net->eval();
}

}  // namespace

void AttentionModel::train(const std::vector<SampleGroup>& groups) {
  const PreparedGroups pg = prepare_groups(groups);
  TESSERA_CHECK(!pg.programs.empty(), "attention model: nothing to train on: no group has two programs of different cost");
  TorchThreads threads(options_.threads);
  torch::manual_seed(options_.seed);
  Net net(kValueFeatureCount, hardware_width(), options_.dim, options_.heads);
  fit_scaling(net, pg);
  fit(net, pg, options_, options_.epochs, options_.lr);
  state_->net = net;
  state_->base = serialize(net);
}

void AttentionModel::update(const std::vector<SampleGroup>& groups) {
  if (!std::any_of(groups.begin(), groups.end(), teaches)) return;
  if (!trained()) {
    train(groups);
    return;
  }
  const PreparedGroups pg = prepare_groups(groups);
  TorchThreads threads(options_.threads);
  Net net = deserialize(state_->base, "(the model's base weights)");
  fit(net, pg, options_, options_.fine_tune_epochs, options_.fine_tune_lr, options_.fine_tune_anchor);
  state_->net = net;
}

void AttentionModel::save(const std::string& path) const {
  TESSERA_CHECK(trained(), "attention model: cannot save ", path, ": the model is not trained");
  const std::string bytes = serialize(state_->net);
  std::ofstream f(path, std::ios::binary);
  TESSERA_CHECK(f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) && f.flush(),
                "cannot write the model file ", path);
}

void AttentionModel::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  TESSERA_CHECK(f, "cannot read the model file ", path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  state_->net = deserialize(bytes, path);
  state_->net->eval();
  state_->base = std::move(bytes);
}

}  // namespace tessera::cost
