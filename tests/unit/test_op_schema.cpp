// Typed op schemas: every registered op's attribute specs are well-formed;
// import and the graph verifier reject attributes of the wrong kind and
// missing required ones, naming the node; the schema-aware reader returns the
// schema's defaults (per opset where ONNX changed them) and refuses names the
// op does not declare.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "frontend/onnx_import.h"
#include "ops/registry.h"
#include "ops/op_attrs.h"
#include "support/error.h"
#include "unit/onnx_builder.h"

namespace tessera {
namespace {

using testing::add_relu_model;
using testing::bytes_of;

std::string import_error(const onnx::ModelProto& m) {
  try {
    import_onnx_bytes(bytes_of(m), "/tmp");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// The message of the Error `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F f) {
  try {
    f();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(OpSchema, EverySchemaIsWellFormed) {
  for (const OpDef* d : op_registry().all()) {
    std::set<std::string> names;
    for (const AttrSpec& s : d->attributes) {
      SCOPED_TRACE(d->name + "." + s.name);
      EXPECT_FALSE(s.name.empty());
      EXPECT_TRUE(names.insert(s.name).second) << "declared twice";
      ASSERT_FALSE(s.rules.empty());
      EXPECT_EQ(s.rules.front().since_opset, 1);
      for (size_t i = 1; i < s.rules.size(); ++i) EXPECT_LT(s.rules[i - 1].since_opset, s.rules[i].since_opset);
      for (const AttrSpec::Rule& r : s.rules) {
        if (r.presence == AttrSpec::Presence::Defaulted) {
          EXPECT_EQ(r.value.kind, s.kind) << "default of another kind";
        }
      }
      for (Attribute::Kind k : s.other_kinds) EXPECT_NE(k, s.kind);
    }
    for (const Arity* a : {&d->inputs, &d->outputs}) {
      EXPECT_GE(a->min, 0) << d->name;
      EXPECT_TRUE(a->max < 0 || a->max >= a->min) << d->name;
    }
  }
}

// The Add + Relu model with the Relu ("relu0") made a LeakyRelu whose alpha
// has the given kind.
onnx::ModelProto leaky_relu_model(onnx::AttributeProto::AttributeType kind) {
  auto m = add_relu_model();
  auto* relu = m.mutable_graph()->mutable_node(1);
  relu->set_op_type("LeakyRelu");
  auto* a = relu->add_attribute();
  a->set_name("alpha");
  a->set_type(kind);
  if (kind == onnx::AttributeProto::STRING) a->set_s("0.1");
  if (kind == onnx::AttributeProto::INT) a->set_i(2);
  return m;
}

TEST(OpSchema, ImportRejectsAWrongKindNamingTheNode) {
  std::string err = import_error(leaky_relu_model(onnx::AttributeProto::STRING));
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("attribute 'alpha' of LeakyRelu must be a float, found a string"), std::string::npos) << err;
}

TEST(OpSchema, ImportKeepsTheWideningsExportersRelyOn) {
  // An int where a float is declared reads as that float.
  auto m = leaky_relu_model(onnx::AttributeProto::INT);
  ASSERT_EQ(import_error(m), "");
  auto g = import_onnx_bytes(bytes_of(m), "/tmp");
  const Node& n = *g->nodes().back();
  EXPECT_EQ(OpAttrs(n, g->opset).f("alpha"), 2.0f);
}

TEST(OpSchema, ImportRejectsAMissingRequiredAttribute) {
  auto m = add_relu_model({1, 4, 2, 2});
  m.mutable_graph()->mutable_node(1)->set_op_type("DepthToSpace");  // blocksize is required
  std::string err = import_error(m);
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("required attribute 'blocksize' of DepthToSpace is missing"), std::string::npos) << err;
}

TEST(OpSchema, VerifierRejectsBadAttributesOfGraphsBuiltInCpp) {
  Graph g;
  Value* x = g.add_input("x", TensorType{DType::F32, {2, 3}});
  Node* n = g.add_node("LeakyRelu", {x}, {"y"}, {{"alpha", Attribute::of_string("wide")}}, "leaky");
  g.add_output(n->outputs[0]);
  std::string err = error_of([&] { verify_schemas(g); });
  EXPECT_NE(err.find("LeakyRelu node 'leaky'"), std::string::npos) << err;
  EXPECT_NE(err.find("must be a float, found a string"), std::string::npos) << err;
  n->attrs = {{"beta", Attribute::of_float(1)}};
  err = error_of([&] { verify_schemas(g); });
  EXPECT_NE(err.find("attribute 'beta' is not supported"), std::string::npos) << err;
  n->attrs = {{"alpha", Attribute::of_float(0.2f)}};
  EXPECT_EQ(error_of([&] { verify_schemas(g); }), "");
  // A required attribute, checked at the graph's opset.
  Node* d = g.add_node("DepthToSpace", {x}, {"z"}, {}, "d2s");
  err = error_of([&] { verify_schemas(g); });
  EXPECT_NE(err.find("DepthToSpace node 'd2s'"), std::string::npos) << err;
  EXPECT_NE(err.find("required attribute 'blocksize'"), std::string::npos) << err;
  d->attrs["blocksize"] = Attribute::of_int(2);
  EXPECT_EQ(error_of([&] { verify_schemas(g); }), "");
}

TEST(OpSchema, ImportAndTheVerifierCheckInputAndOutputCounts) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_node(0)->mutable_input()->RemoveLast();  // Add(x)
  std::string err = import_error(m);
  EXPECT_NE(err.find("add0"), std::string::npos) << err;
  EXPECT_NE(err.find("Add takes 2 inputs, got 1"), std::string::npos) << err;
  m = add_relu_model();
  m.mutable_graph()->mutable_node(1)->add_input("s");  // Relu(s, s)
  err = import_error(m);
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu takes 1 input, got 2"), std::string::npos) << err;

  Graph g;
  Value* x = g.add_input("x", TensorType{DType::F32, {2}});
  Node* sum = g.add_node("Sum", {x, x, x}, {"s"}, {}, "sum");
  g.add_output(sum->outputs[0]);
  EXPECT_EQ(error_of([&] { verify_schemas(g); }), "");  // variadic
  Node* relu = g.add_node("Relu", {x, x}, {"r"}, {}, "relu");
  err = error_of([&] { verify_schemas(g); });
  EXPECT_NE(err.find("Relu node 'relu': Relu takes 1 input, got 2"), std::string::npos) << err;
  g.set_input(relu, 1, nullptr);
  relu->inputs.pop_back();
  EXPECT_EQ(error_of([&] { verify_schemas(g); }), "");
}

TEST(OpSchema, ReaderReturnsSchemaDefaults) {
  Node n;
  n.op_type = "Gemm";
  n.name = "g";
  OpAttrs a(n, 13);
  EXPECT_EQ(a.f("alpha"), 1.0f);
  EXPECT_EQ(a.f("beta"), 1.0f);
  EXPECT_EQ(a.i("transA"), 0);
  EXPECT_FALSE(a.has("transA"));
  n.attrs["transA"] = Attribute::of_int(1);
  n.attrs["alpha"] = Attribute::of_float(0.5f);
  EXPECT_TRUE(a.has("transA"));
  EXPECT_EQ(a.i("transA"), 1);
  EXPECT_EQ(a.f("alpha"), 0.5f);
  Node p;
  p.op_type = "AveragePool";
  EXPECT_EQ(OpAttrs(p, 13).s("auto_pad"), "NOTSET");
  EXPECT_EQ(OpAttrs(p, 13).ints("pads"), std::vector<int64_t>{});
}

TEST(OpSchema, ReaderDefaultsFollowTheOpset) {
  Node s;
  s.op_type = "Softmax";
  EXPECT_EQ(OpAttrs(s, 11).i("axis"), 1);
  EXPECT_EQ(OpAttrs(s, 13).i("axis"), -1);
  // Without an opset, a default that changed between opsets cannot be read.
  EXPECT_NE(error_of([&] { OpAttrs(s, kAnyOpset).i("axis"); }).find("depends on the opset"), std::string::npos);
  Node c;
  c.op_type = "Concat";
  c.name = "cat";
  EXPECT_EQ(OpAttrs(c, 3).i("axis"), 1);
  std::string err = error_of([&] { OpAttrs(c, 13).i("axis"); });
  EXPECT_NE(err.find("Concat node 'cat': required attribute 'axis' is missing"), std::string::npos) << err;
  // The importer's check follows the same rule.
  const OpDef& concat = *op_registry().find("Concat");
  EXPECT_EQ(error_of([&] { check_attributes(concat, {}, 3, "cat"); }), "");
  EXPECT_NE(error_of([&] { check_attributes(concat, {}, 4, "cat"); }).find("required attribute 'axis'"),
            std::string::npos);
}

TEST(OpSchema, ReaderRefusesUndeclaredNamesAndWrongKinds) {
  Node n;
  n.op_type = "Relu";
  n.name = "r";
  std::string err = error_of([&] { OpAttrs(n, 13).f("alpha"); });
  EXPECT_NE(err.find("internal error"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu node 'r'"), std::string::npos) << err;
  Node g;
  g.op_type = "Gemm";
  g.name = "g";
  g.attrs["transB"] = Attribute::of_string("yes");
  err = error_of([&] { OpAttrs(g, 13).i("transB"); });
  EXPECT_NE(err.find("Gemm node 'g': attribute 'transB' must be an int, found a string"), std::string::npos) << err;
  // Reading a declared attribute as another kind is a bug in the reader.
  EXPECT_NE(error_of([&] { OpAttrs(g, 13).s("alpha"); }).find("internal error"), std::string::npos);
}

}  // namespace
}  // namespace tessera
