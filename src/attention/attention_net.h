// The attention model's network (libtessera_attention.so; see
// cost/attention_model.h for the model): store rows and the hardware vector,
// both standardised by buffers fitted at training, embedded and joined, one
// self-attention block over the stores, mean/max/count pooling and a score;
// the batches it reads and its weights as bytes.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::attention {

struct NetImpl : torch::nn::Module {
  NetImpl(int64_t in, int64_t hw, int64_t d, int64_t heads);
  // x [B, S, F] store rows (padded), mask [B, S] 1 for a real store, hw [B, H]: a score per program.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& hwv);

  int64_t heads;
  torch::nn::Linear store1{nullptr}, store2{nullptr}, hw1{nullptr}, hw2{nullptr}, wq{nullptr}, wk{nullptr},
      wv{nullptr}, wo{nullptr}, ff1{nullptr}, ff2{nullptr}, head1{nullptr}, head2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::Tensor in_mean, in_std, hw_mean, hw_std;
};
TORCH_MODULE(Net);

// One program of the caller's arrays: n rows of F values, its hardware vector.
struct ProgramView {
  const float* rows = nullptr;
  int64_t n = 0;
  const float* hw = nullptr;
};

struct Batch {
  torch::Tensor x, mask, hw;
};
// The programs padded to the longest (mask 0 on the padding).
Batch batch_of(const std::vector<const ProgramView*>& ps, int64_t features, int64_t hardware_width);

// The weights with the caller's feature layout and the network's dimensions.
std::string serialize(const Net& net, const std::string& layout);

// What deserialize() found.
enum class LoadResult { ok, not_a_model, other_layout };
// The network of serialized bytes made for `layout` with these widths; `why` gets torch's message on not_a_model.
LoadResult deserialize(const std::string& bytes, const std::string& layout, int64_t features, int64_t hardware_width,
                       Net& net, std::string& why);

}  // namespace tessera::attention
