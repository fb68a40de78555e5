// Graph -> ONNX ModelProto. Constants become initializers; every value with a
// known type gets a value_info so the exported model carries its shapes.
#include "frontend/onnx_export.h"

#include <onnx/onnx_pb.h>

#include "frontend/onnx_tensor.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera {

namespace {

// `names`: the dynamic dimensions' names (Graph::dim_names), or none.
void type_to_proto(const TensorType& t, onnx::TypeProto& tp, const std::vector<std::string>* names = nullptr) {
  auto* tt = tp.mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.rank_known) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < t.dims.size(); ++i) {
    auto* dim = shape->add_dim();
    if (t.dims[i] >= 0)
      dim->set_dim_value(t.dims[i]);
    else if (names && names->size() == t.dims.size() && !(*names)[i].empty())
      dim->set_dim_param((*names)[i]);
  }
}

const std::vector<std::string>* dim_names_of(const Graph& g, const Value* v) {
  auto it = g.dim_names.find(v->name);
  return it == g.dim_names.end() ? nullptr : &it->second;
}

void graph_to_proto(const Graph& g, onnx::GraphProto& gp);

void attr_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto& p) {
  using K = Attribute::Kind;
  p.set_name(name);
  switch (a.kind) {
    case K::Float: p.set_type(onnx::AttributeProto::FLOAT); p.set_f(a.f); break;
    case K::Int: p.set_type(onnx::AttributeProto::INT); p.set_i(a.i); break;
    case K::String: p.set_type(onnx::AttributeProto::STRING); p.set_s(a.s); break;
    case K::Tensor: p.set_type(onnx::AttributeProto::TENSOR); tensor_to_proto(a.t, "", *p.mutable_t()); break;
    case K::Graph: p.set_type(onnx::AttributeProto::GRAPH); graph_to_proto(*a.g, *p.mutable_g()); break;
    case K::Floats:
      p.set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) p.add_floats(f);
      break;
    case K::Ints:
      p.set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) p.add_ints(i);
      break;
    case K::Strings:
      p.set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : a.strings) p.add_strings(s);
      break;
    case K::Tensors:
      p.set_type(onnx::AttributeProto::TENSORS);
      for (const auto& t : a.tensors) tensor_to_proto(t, "", *p.add_tensors());
      break;
    case K::Graphs:
      p.set_type(onnx::AttributeProto::GRAPHS);
      for (const auto& sg : a.graphs) graph_to_proto(*sg, *p.add_graphs());
      break;
  }
}

void graph_to_proto(const Graph& g, onnx::GraphProto& gp) {
  gp.set_name(g.name.empty() ? "tessera" : g.name);
  for (const auto& v : g.values())
    if (v->constant) tensor_to_proto(*v->constant, v->name, *gp.add_initializer());
  for (const Value* v : g.inputs()) {
    auto* vi = gp.add_input();
    vi->set_name(v->name);
    type_to_proto(v->type, *vi->mutable_type(), dim_names_of(g, v));
  }
  for (const auto& n : g.nodes()) {
    auto* np = gp.add_node();
    np->set_name(n->name);
    np->set_op_type(n->op_type);
    if (!n->domain.empty()) np->set_domain(n->domain);
    for (const Value* v : n->inputs) np->add_input(v ? v->name : "");
    for (const Value* v : n->outputs) np->add_output(v ? v->name : "");
    for (const auto& [k, a] : n->attrs) attr_to_proto(k, a, *np->add_attribute());
    for (const Value* v : n->outputs) {
      if (!v || v->type.dtype == DType::Undefined) continue;
      auto* vi = gp.add_value_info();
      vi->set_name(v->name);
      type_to_proto(v->type, *vi->mutable_type());
    }
  }
  for (const Value* v : g.outputs()) {
    auto* vi = gp.add_output();
    vi->set_name(v->name);
    type_to_proto(v->type, *vi->mutable_type(), dim_names_of(g, v));
  }
}

}  // namespace

std::string export_onnx_bytes(const Graph& g) {
  onnx::ModelProto mp;
  mp.set_ir_version(std::max<int64_t>(g.ir_version, 7));
  mp.set_producer_name("tessera");
  mp.set_producer_version(TESSERA_VERSION);
  auto* op = mp.add_opset_import();
  op->set_domain("");
  op->set_version(g.opset);
  for (const auto& [d, v] : g.extra_opsets) {
    auto* o = mp.add_opset_import();
    o->set_domain(d);
    o->set_version(v);
  }
  graph_to_proto(g, *mp.mutable_graph());
  std::string bytes;
  TESSERA_CHECK(mp.SerializeToString(&bytes), "cannot serialize the model (is it larger than 2 GiB?)");
  return bytes;
}

void export_onnx_file(const Graph& g, const std::string& path) { write_file(path, export_onnx_bytes(g)); }

}  // namespace tessera
