// Miscellaneous ops: NonMaxSuppression here; control flow (control_flow.cpp)
// and random generators (random.cpp) are registered from here too.
#include <algorithm>
#include <cmath>

#include "ops/misc_ops.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

namespace {

// ---------------------------------------------------------------- NonMaxSuppression

struct Box {
  float x_min, y_min, x_max, y_max;
};

// Boxes as [y1, x1, y2, x2] (any two opposite corners) or, with
// center_point_box, [x_center, y_center, width, height].
Box decode_box(const float* b, bool center) {
  if (center) {
    float hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// True when the boxes overlap with intersection-over-union above the threshold.
bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  float inter = (ix_max - ix_min) * (iy_max - iy_min);
  float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

void infer_nms(InferContext& c) {
  const TensorType& boxes = c.in(0);
  const TensorType& scores = c.in(1);
  TESSERA_CHECK(boxes.dtype == DType::F32 && scores.dtype == DType::F32, c.node.describe(),
                ": boxes and scores must be float32");
  TESSERA_CHECK(boxes.rank() == 3 && scores.rank() == 3, c.node.describe(),
                ": boxes must be [batch, boxes, 4] and scores [batch, classes, boxes], got ", boxes.to_string(),
                " and ", scores.to_string());
  TESSERA_CHECK(boxes.dims[2] < 0 || boxes.dims[2] == 4, c.node.describe(), ": boxes must have 4 coordinates, got ",
                boxes.to_string());
  int64_t cpb = op_attrs(c).i("center_point_box");
  TESSERA_CHECK(cpb == 0 || cpb == 1, c.node.describe(), ": center_point_box must be 0 or 1, got ", cpb);
  c.out(0) = {DType::I64, {-1, 3}, true};
}

std::vector<Tensor> nms_kernel(const KernelContext& c) {
  const Tensor& boxes = c.in(0);
  const Tensor& scores = c.in(1);
  TESSERA_CHECK(boxes.dtype() == DType::F32 && scores.dtype() == DType::F32, c.node.describe(),
                ": boxes and scores must be float32");
  TESSERA_CHECK(boxes.rank() == 3 && boxes.dim(2) == 4 && scores.rank() == 3, c.node.describe(),
                ": boxes must be [batch, boxes, 4] and scores [batch, classes, boxes], got ",
                dims_to_string(boxes.dims()), " and ", dims_to_string(scores.dims()));
  int64_t nb = boxes.dim(0), n = boxes.dim(1), nc = scores.dim(1);
  TESSERA_CHECK(scores.dim(0) == nb && scores.dim(2) == n, c.node.describe(), ": scores ",
                dims_to_string(scores.dims()), " do not match boxes ", dims_to_string(boxes.dims()));
  int64_t cpb = op_attrs(c).i("center_point_box");
  TESSERA_CHECK(cpb == 0 || cpb == 1, c.node.describe(), ": center_point_box must be 0 or 1, got ", cpb);
  auto scalar = [&](int i, const char* what) -> const Tensor* {
    if (!c.has_input(i)) return nullptr;
    const Tensor& t = c.in(i);
    if (t.numel() == 0) return nullptr;
    TESSERA_CHECK(t.numel() == 1, c.node.describe(), ": ", what, " must hold one value, got shape ",
                  dims_to_string(t.dims()));
    return &t;
  };
  int64_t max_out = 0;
  float iou_thr = 0;
  bool has_score_thr = false;
  float score_thr = 0;
  if (const Tensor* t = scalar(2, "max_output_boxes_per_class")) max_out = t->get_int(0);
  if (const Tensor* t = scalar(3, "iou_threshold")) iou_thr = static_cast<float>(t->get_double(0));
  if (const Tensor* t = scalar(4, "score_threshold")) {
    has_score_thr = true;
    score_thr = static_cast<float>(t->get_double(0));
  }
  TESSERA_CHECK(iou_thr >= 0 && iou_thr <= 1, c.node.describe(), ": iou_threshold must be in [0, 1], got ", iou_thr);
  const float* pb = boxes.data<float>();
  const float* ps = scores.data<float>();
  std::vector<int64_t> sel;  // triples
  std::vector<Box> decoded(static_cast<size_t>(n));
  for (int64_t b = 0; b < nb && max_out > 0; ++b) {
    for (int64_t i = 0; i < n; ++i) decoded[static_cast<size_t>(i)] = decode_box(pb + (b * n + i) * 4, cpb == 1);
    for (int64_t cl = 0; cl < nc; ++cl) {
      const float* s = ps + (b * nc + cl) * n;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < n; ++i)
        if (!has_score_thr || s[i] > score_thr) cand.push_back(i);
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool drop = false;
        for (int64_t k : kept)
          if (suppresses(decoded[static_cast<size_t>(i)], decoded[static_cast<size_t>(k)], iou_thr)) {
            drop = true;
            break;
          }
        if (drop) continue;
        kept.push_back(i);
        sel.insert(sel.end(), {b, cl, i});
      }
    }
  }
  return {Tensor::from<int64_t>({static_cast<int64_t>(sel.size() / 3), 3}, sel)};
}

}  // namespace

void register_misc_ops(OpRegistry& r) {
  r.add({.name = "NonMaxSuppression",
         .min_opset = 10,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = infer_nms,
         .reference = nms_kernel,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           // Worst case: every candidate compared with every kept box.
           double n = static_cast<double>(ins[0]->dims[1]);
           double classes = static_cast<double>(ins[1]->dims[1]);
           double batch = static_cast<double>(ins[0]->dims[0]);
           return batch * classes * n * n;
         },
         .attributes = {int_attr("center_point_box", 0)}});
  register_control_flow_ops(r);
  register_random_ops(r);
}

}  // namespace tessera
