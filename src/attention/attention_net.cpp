// The attention model's network, batches and weight files (see attention_net.h).
#include "attention/attention_net.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tessera::attention {

NetImpl::NetImpl(int64_t in, int64_t hw, int64_t d, int64_t heads_) : heads(heads_) {
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

torch::Tensor NetImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& hwv) {
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

Batch batch_of(const std::vector<const ProgramView*>& ps, int64_t F, int64_t H) {
  const int64_t B = static_cast<int64_t>(ps.size());
  int64_t S = 1;
  for (const ProgramView* p : ps) S = std::max(S, p->n);
  torch::Tensor x = torch::zeros({B, S, F}), mask = torch::zeros({B, S}), hw = torch::empty({B, H});
  float* xp = x.data_ptr<float>();
  float* mp = mask.data_ptr<float>();
  float* hp = hw.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) {
    std::copy_n(ps[b]->rows, ps[b]->n * F, xp + b * S * F);
    std::fill_n(mp + b * S, ps[b]->n, 1.0f);
    std::copy_n(ps[b]->hw, H, hp + b * H);
  }
  return {x, mask, hw};
}

std::string serialize(const Net& net, const std::string& layout) {
  torch::serialize::OutputArchive a;
  net->save(a);
  a.write("tessera_layout", c10::IValue(layout));
  a.write("tessera_dims", torch::tensor({net->store1->options.in_features(), net->hw1->options.in_features(),
                                         net->store1->options.out_features(), net->heads},
                                        torch::kLong));
  std::ostringstream os;
  a.save_to(os);
  return os.str();
}

LoadResult deserialize(const std::string& bytes, const std::string& layout, int64_t features, int64_t hardware_width,
                       Net& net, std::string& why) {
  torch::serialize::InputArchive a;
  c10::IValue lay;
  torch::Tensor dims;
  try {
    std::istringstream is(bytes);
    a.load_from(is);
    a.read("tessera_layout", lay);
    a.read("tessera_dims", dims);
  } catch (const c10::Error& e) {
    why = e.what_without_backtrace();
    return LoadResult::not_a_model;
  }
  if (!lay.isString() || lay.toStringRef() != layout || dims.numel() != 4 || dims[0].item<int64_t>() != features ||
      dims[1].item<int64_t>() != hardware_width)
    return LoadResult::other_layout;
  const int64_t d = dims[2].item<int64_t>(), heads = dims[3].item<int64_t>();
  if (d <= 0 || heads <= 0 || d % heads != 0) {
    why = "its width and heads do not fit";
    return LoadResult::not_a_model;
  }
  Net loaded(features, hardware_width, d, heads);
  try {
    loaded->load(a);
  } catch (const c10::Error& e) {
    why = e.what_without_backtrace();
    return LoadResult::not_a_model;
  }
  net = loaded;
  return LoadResult::ok;
}

}  // namespace tessera::attention
