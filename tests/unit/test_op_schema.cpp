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
#include "unit/error_message.h"
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

using testing::error_of;

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
    // Every op declares its inputs and outputs (ONNX's ops from ONNX's
    // schemas), well-formed.
    ASSERT_FALSE(d->signatures.empty()) << d->domain << "::" << d->name << " declares no signature";
    for (size_t i = 0; i < d->signatures.size(); ++i) {
      const Signature& s = d->signatures[i];
      EXPECT_NO_THROW(signature_counts(s.inputs)) << d->name;
      EXPECT_NO_THROW(signature_counts(s.outputs)) << d->name;
      if (i) {
        EXPECT_LT(d->signatures[i - 1].since_opset, s.since_opset) << d->name;
      }
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

// A model of one node `op` at `opset` reading the names `ins` (graph inputs
// x, a, b, c: f32[2, 3]; '' is an omitted input) and writing `outs`.
onnx::ModelProto one_node_model(const std::string& op, int64_t opset, const std::vector<std::string>& ins,
                                const std::vector<std::string>& outs) {
  auto m = add_relu_model({2, 3}, opset);
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_input();
  g->clear_output();
  g->clear_initializer();
  for (const char* name : {"x", "a", "b", "c"}) testing::add_tensor_value(g->add_input(), name, onnx::TensorProto::FLOAT, {2, 3});
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n0");
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  testing::add_tensor_value(g->add_output(), outs.at(0), onnx::TensorProto::FLOAT, {-1, -1});
  return m;
}

TEST(OpSchema, AnOmittedRequiredInputIsAnImportErrorNamingTheNode) {
  // Add(x, '') used to pass import and crash compiling the node.
  std::string err = import_error(one_node_model("Add", 13, {"x", ""}, {"y"}));
  EXPECT_NE(err.find("Add node 'n0' (opset 13): input 1 of Add is required but the node names it ''"),
            std::string::npos)
      << err;
  err = import_error(one_node_model("Add", 13, {"x", "x", "x"}, {"y"}));
  EXPECT_NE(err.find("n0"), std::string::npos) << err;
  EXPECT_NE(err.find("Add takes 2 inputs, got 3"), std::string::npos) << err;
  // '' among variadic inputs: no kernel can take an absent summand.
  err = import_error(one_node_model("Sum", 13, {"x", "", "a"}, {"y"}));
  EXPECT_NE(err.find("input 1 of Sum is required"), std::string::npos) << err;
  // A required output named '' too.
  err = import_error(one_node_model("Relu", 13, {"x"}, {"y", "z"}));
  EXPECT_NE(err.find("Relu takes 1 output, got 2"), std::string::npos) << err;

  // The verifier applies the same rule to graphs built in C++.
  Graph g;
  Value* x = g.add_input("x", TensorType{DType::F32, {2}});
  Node* add = g.add_node("Add", {x, nullptr}, {"s"}, {}, "add");
  g.add_output(add->outputs[0]);
  err = error_of([&] { verify_schemas(g); });
  EXPECT_NE(err.find("Add node 'add': input 1 of Add is required"), std::string::npos) << err;
}

TEST(OpSchema, CountsFollowTheOpset) {
  struct Case {
    std::string op;
    int64_t opset;
    std::vector<std::string> ins, outs;
    std::string error;  // "" = imports
  };
  const std::vector<Case> cases = {
      // Clip's bounds became optional inputs at opset 11 (attributes before).
      {"Clip", 6, {"x", "a", "b"}, {"y"}, "Clip at opset 6 takes 1 input, got 3"},
      {"Clip", 11, {"x", "", "b"}, {"y"}, ""},
      {"Clip", 11, {"x", "a", "b", "c"}, {"y"}, "Clip at opset 11 takes 1 to 3 inputs, got 4"},
      // Squeeze's axes became an input at opset 13.
      {"Squeeze", 11, {"x", "a"}, {"y"}, "Squeeze at opset 11 takes 1 input, got 2"},
      {"Squeeze", 13, {"x", ""}, {"y"}, ""},
      // Unsqueeze's axes input is required from 13.
      {"Unsqueeze", 13, {"x"}, {"y"}, "Unsqueeze at opset 13 takes 2 inputs, got 1"},
      {"Unsqueeze", 13, {"x", ""}, {"y"}, "input 1 of Unsqueeze is required"},
      // Slice: starts and ends required from opset 10, axes and steps optional.
      {"Slice", 10, {"x", "a"}, {"y"}, "Slice at opset 10 takes 3 to 5 inputs, got 2"},
      {"Slice", 10, {"x", "a", "b", "", "c"}, {"y"}, ""},
      // Pad gained `axes` at opset 18.
      {"Pad", 13, {"x", "a", "b", "c"}, {"y"}, "Pad at opset 13 takes 2 to 3 inputs, got 4"},
      {"Pad", 18, {"x", "a", "", "c"}, {"y"}, ""},
      // Resize's roi and scales are required at opset 11, optional from 13.
      {"Resize", 11, {"x", "", "a"}, {"y"}, "input 1 of Resize is required"},
      {"Resize", 13, {"x", "", "a"}, {"y"}, ""},
      // ReduceMax's axes became an input at opset 18.
      {"ReduceMax", 13, {"x", "a"}, {"y"}, "ReduceMax at opset 13 takes 1 input, got 2"},
      {"ReduceMax", 18, {"x", "a"}, {"y"}, ""},
      // Split's sizes: an input at opset 13, an attribute at 11; outputs variadic.
      {"Split", 11, {"x", "a"}, {"y", "z"}, "Split at opset 11 takes 1 input, got 2"},
      {"Split", 13, {"x", "a"}, {"y", "z"}, ""},
      {"Split", 13, {"x"}, {"y", ""}, "output 1 of Split is required"},
      // Dropout: ratio and training_mode inputs from 12; the mask output is optional.
      {"Dropout", 10, {"x", "a"}, {"y"}, "Dropout at opset 10 takes 1 input, got 2"},
      {"Dropout", 13, {"x", "", ""}, {"y", ""}, ""},
      {"Dropout", 13, {"x"}, {"y", "m", "k"}, "Dropout at opset 13 takes 1 to 2 outputs, got 3"},
      // BatchNormalization's training outputs: four optional before 14, two after.
      {"BatchNormalization", 9, {"x", "a", "b", "c", "c"}, {"y", "", "", "", ""}, ""},
      {"BatchNormalization", 15, {"x", "a", "b", "c", "c"}, {"y", "m", "v", "s"},
       "BatchNormalization at opset 15 takes 1 to 3 outputs, got 4"},
      {"BatchNormalization", 15, {"x", "a", "b", "c"}, {"y"}, "BatchNormalization at opset 15 takes 5 inputs, got 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " at opset " + std::to_string(c.opset));
    std::string err = import_error(one_node_model(c.op, c.opset, c.ins, c.outs));
    if (c.error.empty()) {
      // Counts pass; a later check (shapes, attributes) may still object, but
      // not about the counts.
      EXPECT_EQ(err.find(" takes "), std::string::npos) << err;
      EXPECT_EQ(err.find("is required but"), std::string::npos) << err;
    } else {
      EXPECT_NE(err.find(c.error), std::string::npos) << err;
      EXPECT_NE(err.find("node 'n0'"), std::string::npos) << err;
    }
  }
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
