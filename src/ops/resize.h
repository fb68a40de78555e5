// Resize / Upsample facts shared by the reference kernel (resize.cpp) and the
// tensor expression (expr_tensor_resize.cpp): the checked attributes, the
// output plan, the linear / cubic tap window and the per-axis taps.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ops/registry.h"

namespace tessera {

enum class ResizeMode { Nearest, Linear, Cubic };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::Nearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  std::string keep_aspect = "stretch";
  std::vector<int64_t> axes;  // normalized; all axes when the attribute is absent
  bool legacy = false;        // Upsample / Resize-10: asymmetric, "simple" nearest rounding
};

// Reads and checks the attributes of a Resize / Upsample node whose input has `rank` dims.
ResizeAttrs read_resize_attrs(const Node& n, int64_t opset, int64_t rank);

// Output dims and, per dim, the scale and ROI used by the coordinate transform.
struct ResizePlan {
  Dims out;
  std::vector<double> scale;
  std::vector<double> roi_start, roi_end;
};

// The plan for input dims `xd` from the node's scales / sizes / roi; `input(i)`
// gives input i, or nullptr when it is absent or empty.
ResizePlan resize_plan_from_inputs(const Node& n, int64_t opset, const ResizeAttrs& a, const Dims& xd,
                                   const std::function<const Tensor*(int)>& input);

// Linear / cubic taps i in [start, end) around floor(x), weighed at (i - r) * arg_scale.
struct ResizeWindow {
  int64_t start, end;
  double arg_scale;  // min(scale, 1) with antialias, else 1
};
ResizeWindow resize_tap_window(const ResizeAttrs& a, double scale);

// Per-axis interpolation: for each output index, (input index, weight) taps,
// or the extrapolation flag; identity when every output o reads input o with weight 1.
struct ResizeAxisTaps {
  std::vector<std::vector<std::pair<int64_t, double>>> taps;
  std::vector<char> extrap;
  bool identity = true;
};
ResizeAxisTaps resize_axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double rs, double re);

}  // namespace tessera
