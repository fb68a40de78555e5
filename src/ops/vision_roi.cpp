// RoiAlign (opset 10; coordinate_transformation_mode from 16): average or max
// of bilinear samples over a regular grid in each output bin, following the
// ONNX reference / Detectron rules (samples beyond [-1, size] read 0, samples
// are clamped to the image, max mode takes the largest weighted corner).
#include <algorithm>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"

namespace tessera {
namespace {

void infer_roi_align(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  const TensorType& rois = c.in(1);
  const TensorType& bi = c.in(2);
  TESSERA_CHECK(is_float(x.dtype), n.describe(), ": X must be a float tensor");
  TESSERA_CHECK(x.rank() == 4, n.describe(), ": X must be 4-D, got rank ", x.rank());
  TESSERA_CHECK(rois.rank() == 2 && (rois.dims[1] < 0 || rois.dims[1] == 4), n.describe(), ": rois must be [num_rois, 4]");
  TESSERA_CHECK(bi.rank() == 1, n.describe(), ": batch_indices must be 1-D");
  TESSERA_CHECK(bi.dtype == DType::I64 || bi.dtype == DType::I32, n.describe(), ": batch_indices must be integer");
  int64_t R = rois.dims[0] >= 0 ? rois.dims[0] : bi.dims[0];
  c.out(0) = TensorType{x.dtype, {R, x.dims[1], op_attrs(c).i("output_height"), op_attrs(c).i("output_width")}};
}

std::vector<Tensor> run_roi_align(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& X = c.in(0);
  const Tensor& Rt = c.in(1);
  const Tensor& Bt = c.in(2);
  TESSERA_CHECK(X.rank() == 4, n.describe(), ": X must be 4-D");
  TESSERA_CHECK(Rt.rank() == 2 && Rt.dim(1) == 4, n.describe(), ": rois must be [num_rois, 4]");
  TESSERA_CHECK(Bt.rank() == 1 && Bt.dim(0) == Rt.dim(0), n.describe(), ": batch_indices must have one entry per roi");
  const std::string mode = op_attrs(c).s("mode");
  TESSERA_CHECK(mode == "avg" || mode == "max", n.describe(), ": unsupported mode '", mode, "'");
  const std::string ctm =
      c.opset >= 16 ? op_attrs(c).s("coordinate_transformation_mode") : "output_half_pixel";
  TESSERA_CHECK(ctm == "half_pixel" || ctm == "output_half_pixel", n.describe(),
                ": unsupported coordinate_transformation_mode '", ctm, "'");
  const int64_t OH = op_attrs(c).i("output_height"), OW = op_attrs(c).i("output_width");
  const int64_t sr = op_attrs(c).i("sampling_ratio");
  const double ss = op_attrs(c).f("spatial_scale");
  TESSERA_CHECK(OH > 0 && OW > 0 && sr >= 0, n.describe(), ": output sizes must be positive and sampling_ratio >= 0");
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = Rt.dim(0);
  std::vector<double> x = float_values(X, "RoiAlign"), rois = float_values(Rt, "RoiAlign");
  std::vector<int64_t> bidx = Bt.to_int_vector();
  std::vector<double> y(static_cast<size_t>(R * C * OH * OW));
  const double off = ctm == "half_pixel" ? 0.5 : 0.0;
  struct Sample {
    int64_t p[4];
    double w[4];
  };
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = bidx[static_cast<size_t>(r)];
    TESSERA_CHECK(b >= 0 && b < N, n.describe(), ": batch index ", b, " is outside [0, ", N, ")");
    const double* roi = &rois[static_cast<size_t>(r * 4)];
    for (int k = 0; k < 4; ++k)
      TESSERA_CHECK(std::isfinite(roi[k]), n.describe(), ": roi ", r, " has a non-finite coordinate");
    double sw = roi[0] * ss - off, sh = roi[1] * ss - off, ew = roi[2] * ss - off, eh = roi[3] * ss - off;
    double rw = ew - sw, rh = eh - sh;
    if (ctm == "output_half_pixel") {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(OH), bw = rw / static_cast<double>(OW);
    auto grid = [&](double extent, int64_t bins) {
      return sr > 0 ? sr : static_cast<int64_t>(std::clamp(std::ceil(extent / static_cast<double>(bins)), 0.0, 1e7));
    };
    const int64_t gh = grid(rh, OH), gw = grid(rw, OW);
    TESSERA_CHECK(static_cast<double>(gh) * static_cast<double>(gw) <= 1e7, n.describe(), ": roi ", r,
                  " needs ", gh, "x", gw, " samples per bin; pass a sampling_ratio");
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw) {
        std::vector<Sample> samples;
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double yy = sh + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
            double xx = sw + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W))) {
              yy = std::max(yy, 0.0);
              xx = std::max(xx, 0.0);
              int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
              if (yl >= H - 1) {
                yh = yl = H - 1;
                yy = static_cast<double>(yl);
              } else {
                yh = yl + 1;
              }
              if (xl >= W - 1) {
                xh = xl = W - 1;
                xx = static_cast<double>(xl);
              } else {
                xh = xl + 1;
              }
              double ly = yy - static_cast<double>(yl), lx = xx - static_cast<double>(xl), hy = 1 - ly, hx = 1 - lx;
              s = {{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            samples.push_back(s);
          }
        for (int64_t ch = 0; ch < C; ++ch) {
          const double* img = &x[static_cast<size_t>((b * C + ch) * H * W)];
          double acc = 0;
          bool first = true;
          for (const Sample& s : samples) {
            if (mode == "avg") {
              for (int k = 0; k < 4; ++k) acc += s.w[k] * img[s.p[k]];
            } else {
              double v = std::max({s.w[0] * img[s.p[0]], s.w[1] * img[s.p[1]], s.w[2] * img[s.p[2]], s.w[3] * img[s.p[3]]});
              acc = first ? v : std::max(acc, v);
              first = false;
            }
          }
          y[static_cast<size_t>(((r * C + ch) * OH + ph) * OW + pw)] = mode == "avg" ? acc / count : acc;
        }
      }
  }
  return {float_tensor(X.dtype(), {R, C, OH, OW}, y, "RoiAlign")};
}

}  // namespace

void register_roi_align_ops(OpRegistry& r) {
  r.add({.name = "RoiAlign", .min_opset = 10, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_roi_align, .reference = run_roi_align,
         .flops = [](const Node& n, const std::vector<const TensorType*>&, const std::vector<TensorType>& outs) {
           double s = static_cast<double>(std::max<int64_t>(OpAttrs(n, kAnyOpset).i("sampling_ratio"), 1));
           return outs.empty() ? 0.0 : 8.0 * s * s * static_cast<double>(numel_of(outs[0].dims));
         },
         .attributes = {string_attr("coordinate_transformation_mode", "half_pixel"), string_attr("mode", "avg"),
                        int_attr("output_height", 1), int_attr("output_width", 1), int_attr("sampling_ratio", 0),
                        float_attr("spatial_scale", 1.0f)}});
}

}  // namespace tessera
