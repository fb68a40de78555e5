// Op classes of compute stages (see op_class.h).
#include "te/op_class.h"

#include <array>

#include "support/error.h"

namespace tessera::te {

namespace {

constexpr std::array<std::string_view, kOpClasses> kNames{
    "other", "elemwise", "reduce", "matmul", "conv", "conv2d_blocked", "depthwise_conv2d_blocked",
    "pool", "winograd_input", "winograd_output"};

}  // namespace

std::string_view op_class_name(OpClass c) { return kNames.at(static_cast<size_t>(c)); }

bool is_conv(OpClass c) { return c == OpClass::Conv || is_blocked_conv(c); }

bool is_blocked_conv(OpClass c) { return c == OpClass::ConvBlocked || c == OpClass::DepthwiseConvBlocked; }

StageTag::StageTag(std::string l) : label(std::move(l)) {
  bool names_class = label.find("conv") != std::string::npos;
  for (size_t c = 1; c < kNames.size(); ++c) names_class |= label == kNames[c];
  TESSERA_CHECK(!names_class, "tensor expression: the label '", label,
                "' names an op class; declare the class (te::OpClass) instead");
}

}  // namespace tessera::te
