#include "pet/seed_pairs.h"

#include <functional>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera::pet {

GraphBuilder::GraphBuilder() : g_(std::make_unique<Graph>()) {}

Value* GraphBuilder::input(const Dims& dims) { return g_->add_input(g_->unique_name("in"), TensorType{DType::F32, dims}); }

Value* GraphBuilder::ints(const std::vector<int64_t>& v) {
  return g_->add_int64s("c", v);
}

Value* GraphBuilder::floats(const Dims& dims, std::vector<float> v) {
  return g_->add_constant(g_->unique_name("f"), Tensor::from<float>(dims, v));
}

Value* GraphBuilder::op(const std::string& type, std::vector<Value*> inputs, AttrMap attrs) {
  return ops(type, std::move(inputs), 1, std::move(attrs))[0];
}

std::vector<Value*> GraphBuilder::ops(const std::string& type, std::vector<Value*> inputs, int outputs, AttrMap attrs) {
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) names.push_back(g_->unique_name("v"));
  Node* n = g_->add_node(type, std::move(inputs), names, std::move(attrs), g_->unique_name(type));
  return n->outputs;
}

std::unique_ptr<Graph> GraphBuilder::finish(const std::vector<Value*>& outputs) {
  for (Value* v : outputs) g_->add_output(v);
  infer_graph(*g_);
  return std::move(g_);
}

namespace {

using Build = std::function<std::vector<Value*>(GraphBuilder&, const std::vector<Value*>&)>;

SeedPair make(const std::string& family, Verdict expected, const std::vector<Dims>& inputs, const Build& original,
              const Build& mutant) {
  auto build = [&](const Build& f) {
    GraphBuilder b;
    std::vector<Value*> in;
    for (const Dims& d : inputs) in.push_back(b.input(d));
    return b.finish(f(b, in));
  };
  return SeedPair{family, expected, build(original), build(mutant)};
}

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute one(int64_t v) { return Attribute::of_int(v); }

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // uniform in [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// The two images of a batch side by side along W, one convolution, split back:
// wrong in the seam columns (each image's edge reads the other image).
std::vector<Value*> side_by_side(GraphBuilder& b, Value* x, Value* w, int64_t C, int64_t M, int64_t H, int64_t W) {
  Value* t = b.op("Transpose", {x}, {{"perm", ints({1, 2, 0, 3})}});
  Value* r = b.op("Reshape", {t, b.ints({1, C, H, 2 * W})});
  Value* c = b.op("Conv", {r, w}, {{"pads", ints({1, 1, 1, 1})}});
  Value* r2 = b.op("Reshape", {c, b.ints({M, H, 2, W})});
  return {b.op("Transpose", {r2}, {{"perm", ints({2, 0, 1, 3})}})};
}

// out = mutant * keep + original * fix, with 0/1 masks: a hand-made correction.
Value* corrected(GraphBuilder& b, Value* mut, Value* orig, const Dims& d, const std::vector<float>& fix) {
  std::vector<float> keep(fix.size());
  for (size_t i = 0; i < fix.size(); ++i) keep[i] = 1 - fix[i];
  Value* k = b.graph().add_constant(b.graph().unique_name("keep_mask"), Tensor::from<float>(d, keep));
  Value* f = b.graph().add_constant(b.graph().unique_name("fix_mask"), Tensor::from<float>(d, fix));
  return b.op("Add", {b.op("Mul", {mut, k}), b.op("Mul", {orig, f})});
}

}  // namespace

const std::vector<std::string>& seed_families() {
  static const std::vector<std::string> f = {
      "D2H", "conv1x1-to-matmul", "merge-parallel-conv", "merge-parallel-conv-padded", "avgpool-to-reducemean",
      "stride-to-unit", "group-to-conv", "merge-batched-matmul", "gemm-to-matmul", "pad-conv", "convtranspose-to-conv",
      "dfs-S2D-D2S", "avgpool-to-depthwise", "N2W", "avgpool-border-to-depthwise", "dilated-centre", "avgpool-exclude-pad", "N2W-corrected", "dilated-centre-corrected"};
  return f;
}

SeedPair seed_pair(const std::string& family, std::mt19937_64& rng) {
  const int64_t C = pick(rng, 1, 3), M = pick(rng, 1, 3);
  const int64_t H = 2 * pick(rng, 2, 4), W = 2 * pick(rng, 2, 4);  // even: the phase families need it
  const Attribute pad1 = ints({1, 1, 1, 1});
  using V = std::vector<Value*>;
  if (family == "D2H")
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {in[0], in[1]}, {{"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* r = b.op("Reshape", {in[0], b.ints({1, C, H / 2, 2, W / 2, 2})});
          Value* t = b.op("Transpose", {r}, {{"perm", ints({3, 5, 0, 1, 2, 4})}});
          Value* c = b.op("Conv", {b.op("Reshape", {t, b.ints({4, C, H / 2, W / 2})}), in[1]}, {{"pads", pad1}});
          Value* r3 = b.op("Reshape", {c, b.ints({2, 2, 1, M, H / 2, W / 2})});
          Value* t2 = b.op("Transpose", {r3}, {{"perm", ints({2, 3, 4, 0, 5, 1})}});
          return V{b.op("Reshape", {t2, b.ints({1, M, H, W})})};
        });
  if (family == "conv1x1-to-matmul")
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {M, C, 1, 1}, {M}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("Conv", {in[0], in[1], in[2]})}; },
        [&](GraphBuilder& b, const V& in) {
          Value* y = b.op("MatMul", {b.op("Reshape", {in[1], b.ints({M, C})}), b.op("Reshape", {in[0], b.ints({C, H * W})})});
          Value* z = b.op("Add", {y, b.op("Reshape", {in[2], b.ints({M, 1})})});
          return V{b.op("Reshape", {z, b.ints({1, M, H, W})})};
        });
  if (family == "merge-parallel-conv" || family == "merge-parallel-conv-padded") {
    const bool padded = family == "merge-parallel-conv-padded";
    const int64_t M2 = pick(rng, 1, 3), k2 = padded ? 1 : 3;
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {M, C, 3, 3}, {M2, C, k2, k2}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {in[0], in[1]}, {{"pads", pad1}}),
                   b.op("Conv", {in[0], in[2]}, {{"pads", padded ? ints({0, 0, 0, 0}) : pad1}})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* w2 = padded ? b.op("Pad", {in[2], b.ints({0, 0, 1, 1, 0, 0, 1, 1})}) : in[2];
          Value* y = b.op("Conv", {in[0], b.op("Concat", {in[1], w2}, {{"axis", one(0)}})}, {{"pads", pad1}});
          return b.ops("Split", {y, b.ints({M, M2})}, 2, {{"axis", one(1)}});
        });
  }
  if (family == "avgpool-to-reducemean")
    return make(family, Verdict::Equivalent, {{1, C, H, W}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("AveragePool", {in[0]}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* s = b.op("SpaceToDepth", {in[0]}, {{"blocksize", one(2)}});
          Value* r = b.op("Reshape", {s, b.ints({1, 4, C, H / 2, W / 2})});
          return V{b.op("ReduceMean", {r}, {{"axes", ints({1})}, {"keepdims", one(0)}})};
        });
  if (family == "stride-to-unit")
    return make(family, Verdict::Equivalent, {{1, C, H + 1, W}, {M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {in[0], in[1]}, {{"pads", pad1}, {"strides", ints({2, 2})}})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* y = b.op("Conv", {in[0], in[1]}, {{"pads", pad1}});
          return V{b.op("Slice", {y, b.ints({0, 0}), b.ints({H + 1, W}), b.ints({2, 3}), b.ints({2, 2})})};
        });
  if (family == "group-to-conv")
    return make(family, Verdict::Equivalent, {{1, 2 * C, H, W}, {2 * M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {in[0], in[1]}, {{"pads", pad1}, {"group", one(2)}})};
        },
        [&](GraphBuilder& b, const V& in) {
          V xs = b.ops("Split", {in[0], b.ints({C, C})}, 2, {{"axis", one(1)}});
          Value* w1 = b.op("Slice", {in[1], b.ints({0}), b.ints({M}), b.ints({0})});
          Value* w2 = b.op("Slice", {in[1], b.ints({M}), b.ints({2 * M}), b.ints({0})});
          return V{b.op("Concat", {b.op("Conv", {xs[0], w1}, {{"pads", pad1}}), b.op("Conv", {xs[1], w2}, {{"pads", pad1}})},
                        {{"axis", one(1)}})};
        });
  if (family == "merge-batched-matmul") {
    const int64_t M2 = pick(rng, 1, 4), K = pick(rng, 2, 6), N = pick(rng, 1, 5);
    return make(family, Verdict::Equivalent, {{M, K}, {M2, K}, {K, N}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("MatMul", {in[0], in[2]}), b.op("MatMul", {in[1], in[2]})}; },
        [&](GraphBuilder& b, const V& in) {
          Value* y = b.op("MatMul", {b.op("Concat", {in[0], in[1]}, {{"axis", one(0)}}), in[2]});
          return b.ops("Split", {y, b.ints({M, M2})}, 2, {{"axis", one(0)}});
        });
  }
  if (family == "gemm-to-matmul") {
    const int64_t K = pick(rng, 2, 6), N = pick(rng, 1, 5);
    return make(family, Verdict::Equivalent, {{M, K}, {N, K}, {N}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("Gemm", {in[0], in[1], in[2]}, {{"transB", one(1)}})}; },
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Add", {b.op("MatMul", {in[0], b.op("Transpose", {in[1]})}), in[2]})};
        });
  }
  if (family == "pad-conv")
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("Conv", {in[0], in[1]}, {{"pads", ints({1, 2, 1, 0})}})}; },
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {b.op("Pad", {in[0], b.ints({0, 0, 1, 2, 0, 0, 1, 0})}), in[1]})};
        });
  if (family == "convtranspose-to-conv")
    // A unit-stride ConvTranspose is a Conv with the kernel flipped and its
    // channel dims swapped, padded by k - 1 - p.
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {C, M, 3, 3}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("ConvTranspose", {in[0], in[1]}, {{"pads", pad1}})}; },
        [&](GraphBuilder& b, const V& in) {
          Value* f = b.op("Slice", {in[1], b.ints({-1, -1}), b.ints({-100, -100}), b.ints({2, 3}), b.ints({-1, -1})});
          Value* w = b.op("Transpose", {f}, {{"perm", ints({1, 0, 2, 3})}});
          return V{b.op("Conv", {in[0], w}, {{"pads", pad1}})};
        });
  if (family == "dfs-S2D-D2S")
    return make(family, Verdict::Equivalent, {{1, C, H, W}, {M, C, 1, 1}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("Conv", {in[0], in[1]})}; },
        [&](GraphBuilder& b, const V& in) {
          Value* s = b.op("SpaceToDepth", {in[0]}, {{"blocksize", one(2)}});
          return V{b.op("Conv", {b.op("DepthToSpace", {s}, {{"blocksize", one(2)}}), in[1]})};
        });
  if (family == "N2W" || family == "N2W-corrected") {
    const bool fix = family == "N2W-corrected";
    return make(family, fix ? Verdict::Equivalent : Verdict::Partial, {{2, C, H, W}, {M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) { return V{b.op("Conv", {in[0], in[1]}, {{"pads", pad1}})}; },
        [&](GraphBuilder& b, const V& in) {
          V y = side_by_side(b, in[0], in[1], C, M, H, W);
          if (!fix) return y;
          std::vector<float> mask(static_cast<size_t>(2 * M * H * W), 0.0f);
          for (int64_t n = 0; n < 2; ++n)
            for (int64_t m = 0; m < M; ++m)
              for (int64_t h = 0; h < H; ++h) mask[static_cast<size_t>(((n * M + m) * H + h) * W + (n ? 0 : W - 1))] = 1;
          Value* orig = b.op("Conv", {in[0], in[1]}, {{"pads", pad1}});
          return V{corrected(b, y[0], orig, {2, M, H, W}, mask)};
        });
  }
  if (family == "dilated-centre" || family == "dilated-centre-corrected") {
    const bool fix = family == "dilated-centre-corrected";
    const int64_t d = pick(rng, 2, 5), S = H + 2;  // a dilated 3x3 conv vs the 1x1 conv of its centre tap
    const Attribute pads = ints({d, d, d, d});
    return make(family, fix ? Verdict::Equivalent : Verdict::Partial, {{1, C, S, S}, {M, C, 3, 3}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("Conv", {in[0], in[1]}, {{"dilations", ints({d, d})}, {"pads", pads}})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* wc = b.op("Slice", {in[1], b.ints({1, 1}), b.ints({2, 2}), b.ints({2, 3})});
          Value* y = b.op("Conv", {in[0], wc});
          if (!fix) return V{y};
          // Only where every off-centre tap reads padding is the centre tap alone right.
          auto ok = [&](int64_t i) { return i < d && i + d >= S; };
          std::vector<float> mask;
          for (int64_t m = 0; m < M; ++m)
            for (int64_t h = 0; h < S; ++h)
              for (int64_t w = 0; w < S; ++w) mask.push_back(ok(h) && ok(w) ? 0.0f : 1.0f);
          Value* orig = b.op("Conv", {in[0], in[1]}, {{"dilations", ints({d, d})}, {"pads", pads}});
          return V{corrected(b, y, orig, {1, M, S, S}, mask)};
        });
  }
  if (family == "avgpool-to-depthwise" || family == "avgpool-border-to-depthwise") {
    // 9 x AveragePool 3x3 is a depthwise conv with weights 1 (a uniform
    // constant): everywhere when the pool counts the padding, and only inside
    // (a partial mutant) when it does not.
    const bool border = family == "avgpool-border-to-depthwise";
    return make(family, border ? Verdict::Partial : Verdict::Equivalent, {{1, C, H, W}},
        [&](GraphBuilder& b, const V& in) {
          Value* p = b.op("AveragePool", {in[0]}, {{"kernel_shape", ints({3, 3})}, {"pads", pad1},
                                                   {"count_include_pad", one(border ? 0 : 1)}});
          return V{b.op("Mul", {p, b.floats({1}, {9.0f})})};
        },
        [&](GraphBuilder& b, const V& in) {
          Value* ones = b.floats({C, 1, 3, 3}, std::vector<float>(static_cast<size_t>(C * 9), 1.0f));
          return V{b.op("Conv", {in[0], ones}, {{"pads", pad1}, {"group", one(C)}})};
        });
  }
  if (family == "avgpool-exclude-pad")
    return make(family, Verdict::Partial, {{1, C, H, W}},
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("AveragePool", {in[0]}, {{"kernel_shape", ints({3, 3})}, {"pads", pad1}})};
        },
        [&](GraphBuilder& b, const V& in) {
          return V{b.op("AveragePool", {in[0]}, {{"kernel_shape", ints({3, 3})}, {"pads", pad1}, {"count_include_pad", one(1)}})};
        });
  TESSERA_FAIL("pet: no seed family '", family, "'");
}

}  // namespace tessera::pet
