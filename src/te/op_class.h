// The op class a compute stage declares: what schedule rules key on
// (schedule/schedule_rule.h), instead of reading names. The class says what
// the stage is (a matrix product, a blocked convolution, a pool); its label
// is free text for printing ("conv1d_transpose", "softmax").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::te {

enum class OpClass : uint8_t {
  Other,                 // nothing a rule distinguishes: injective, softmax, norms, gathers ...
  Elementwise,           // one output element from inputs at (about) its position
  Reduce,                // a reduction op (ReduceSum, ArgMax's key, attention's dot products)
  MatMul,                // a matrix product [.., M, K] x [.., K, N]
  Conv,                  // a direct convolution over N, C, spatial (depthwise, grouped, transposed)
  ConvBlocked,           // a channel-blocked convolution [N, Kb, H, W, kc] (also Winograd's products)
  DepthwiseConvBlocked,  // a blocked depthwise convolution: each output block reads its own input block
  Pool,                  // a window reduction (max, average, Lp) or its finishing stage
  WinogradInput,         // Winograd's input transform [points, cb, tiles, lanes]
  WinogradOutput,        // Winograd's output transform [n, kb, h, w, kc]
};
inline constexpr int kOpClasses = 10;

// "other", "elemwise", "reduce", "matmul", "conv", "conv2d_blocked",
// "depthwise_conv2d_blocked", "pool", "winograd_input", "winograd_output".
std::string_view op_class_name(OpClass c);
// Convolutions of any layout (Conv, ConvBlocked, DepthwiseConvBlocked).
bool is_conv(OpClass c);
// Blocked convolutions (ConvBlocked, DepthwiseConvBlocked).
bool is_blocked_conv(OpClass c);

// What te::compute is told about a stage: its class and label. A label
// alone declares class Other, and must not be a class's name (nor contain
// "conv"): a stage that is a class declares the class.
struct StageTag {
  OpClass op_class = OpClass::Other;
  std::string label;

  StageTag() = default;
  StageTag(OpClass c) : op_class(c), label(op_class_name(c)) {}  // NOLINT: implicit by design
  StageTag(OpClass c, std::string l) : op_class(c), label(std::move(l)) {}
  StageTag(const char* l) : StageTag(std::string(l)) {}  // NOLINT
  StageTag(std::string l);                                 // NOLINT
};

}  // namespace tessera::te
