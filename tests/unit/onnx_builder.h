// Builds small ONNX ModelProtos in tests, including deliberately broken ones.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace tessera::testing {

inline void add_tensor_value(onnx::ValueInfoProto* vi, const std::string& name, int elem,
                             const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
}

// y = Relu(x + w) with x f32[dims], w an initializer of ones.
inline onnx::ModelProto add_relu_model(std::vector<int64_t> dims = {2, 3}, int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("add_relu");
  add_tensor_value(g->add_input(), "x", onnx::TensorProto::FLOAT, dims);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(dims.back() < 0 ? 1 : dims.back());
  for (int64_t i = 0; i < w->dims(0); ++i) w->add_float_data(1.0f);
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add0");
  add->add_input("x");
  add->add_input("w");
  add->add_output("s");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu0");
  relu->add_input("s");
  relu->add_output("y");
  add_tensor_value(g->add_output(), "y", onnx::TensorProto::FLOAT, dims);
  return m;
}

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

}  // namespace tessera::testing
