// ONNX import: well-formed models, opset/IR checks, shape fixing, and every
// kind of malformed input producing a clear Error (never a crash).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "interp/interpreter.h"
#include "support/error.h"
#include "support/file_util.h"
#include "unit/onnx_builder.h"

namespace tessera {
namespace {

using testing::add_relu_model;
using testing::bytes_of;

// Imports and returns the error message ("" when import succeeded).
std::string import_error(const std::string& bytes, const ImportOptions& o = {}) {
  try {
    import_onnx_bytes(bytes, "/tmp", o);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(OnnxImport, ImportsInfersAndRuns) {
  auto g = import_onnx_bytes(bytes_of(add_relu_model()), "/tmp");
  EXPECT_EQ(g->opset, 13);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->type.to_string(), "f32[2x3]");
  EXPECT_EQ(g->outputs()[0]->type.to_string(), "f32[2x3]");
  EXPECT_TRUE(g->find_value("w")->is_constant());
  auto out = interpret(*g, {Tensor::from<float>({2, 3}, {-3, -1, 0, 1, 2, -0.5f})});
  std::vector<float> want = {0, 0, 1, 2, 3, 0.5f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data<float>()[i], want[static_cast<size_t>(i)]);
}

TEST(OnnxImport, OldStyleInputsThatAreInitializersBecomeConstants) {
  auto m = add_relu_model();
  testing::add_tensor_value(m.mutable_graph()->add_input(), "w", onnx::TensorProto::FLOAT, {3});
  auto g = import_onnx_bytes(bytes_of(m), "/tmp");
  EXPECT_EQ(g->inputs().size(), 1u);
  EXPECT_TRUE(g->find_value("w")->is_constant());
}

TEST(OnnxImport, DynamicDimensionFixedAtLoad) {
  auto m = add_relu_model({-1, 3});
  auto g = import_onnx_bytes(bytes_of(m), "/tmp");
  EXPECT_EQ(g->inputs()[0]->type.to_string(), "f32[?x3]");
  ImportOptions o;
  o.input_shapes["x"] = {4, 3};
  auto fixed = import_onnx_bytes(bytes_of(m), "/tmp", o);
  EXPECT_EQ(fixed->inputs()[0]->type.to_string(), "f32[4x3]");
  EXPECT_EQ(fixed->outputs()[0]->type.to_string(), "f32[4x3]");
  o.input_shapes["x"] = {4, 5};  // disagrees with the static dim
  EXPECT_NE(import_error(bytes_of(m), o).find("disagrees"), std::string::npos);
  o.input_shapes.clear();
  o.input_shapes["nope"] = {1};
  EXPECT_NE(import_error(bytes_of(m), o).find("not a graph input"), std::string::npos);
  EXPECT_EQ(parse_dims("1x3x224x224"), (Dims{1, 3, 224, 224}));
  EXPECT_THROW(parse_dims("1x-3"), Error);
  EXPECT_THROW(parse_dims(""), Error);
}

TEST(OnnxImport, UnsupportedOpNamesNodeOpAndOpset) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("FancyNewOp");
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("FancyNewOp"), std::string::npos) << err;
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("opset 13"), std::string::npos) << err;
}

TEST(OnnxImport, UnknownAttributeIsAnError) {
  auto m = add_relu_model();
  auto* a = m.mutable_graph()->mutable_node(1)->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.1f);
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("attribute 'alpha' is not supported"), std::string::npos) << err;
  // An op without any attribute says so.
  m = add_relu_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Sin");  // Sin has no attributes at any opset
  a = m.mutable_graph()->mutable_node(1)->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  err = import_error(bytes_of(m));
  EXPECT_NE(err.find("attribute 'axis' is not supported (the op takes no attributes)"), std::string::npos) << err;
}

TEST(OnnxImport, UnsupportedCustomDomain) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_node(1)->set_domain("com.example");
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("com.example"), std::string::npos) << err;
}

TEST(OnnxImport, OpsetAndIrVersionLimits) {
  EXPECT_NE(import_error(bytes_of(add_relu_model({2, 3}, 99))).find("opset 99"), std::string::npos);
  auto m = add_relu_model();
  m.set_ir_version(2);
  EXPECT_NE(import_error(bytes_of(m)).find("IR version 2"), std::string::npos);
  m = add_relu_model();
  m.clear_opset_import();
  EXPECT_NE(import_error(bytes_of(m)).find("opset"), std::string::npos);
}

TEST(OnnxImport, MissingInitializerNamesTheInput) {
  auto m = add_relu_model();
  m.mutable_graph()->clear_initializer();
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("'w' is not defined"), std::string::npos) << err;
  EXPECT_NE(err.find("add0"), std::string::npos) << err;
}

TEST(OnnxImport, CyclicGraphIsAnError) {
  auto m = add_relu_model();
  // add0 reads relu0's output and relu0 reads add0's: a cycle.
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("cycle"), std::string::npos) << err;
}

TEST(OnnxImport, DuplicateOutputNameIsAnError) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_node(1)->set_output(0, "s");
  EXPECT_NE(import_error(bytes_of(m)).find("'s'"), std::string::npos);
}

// A node without outputs (or with only absent ones) is malformed, named with
// its op; folding used to write its missing first output (a fuzzer's crash).
TEST(OnnxImport, NodeWithoutOutputsIsAnError) {
  for (bool absent : {false, true}) {
    auto m = add_relu_model();
    auto* node = m.mutable_graph()->mutable_node(0);
    node->clear_output();
    if (absent) node->add_output("");
    std::string err = import_error(bytes_of(m));
    EXPECT_NE(err.find("op 'Add' has no outputs"), std::string::npos) << err;
  }
}

TEST(OnnxImport, BadInitializerDims) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, -4);
  EXPECT_NE(import_error(bytes_of(m)).find("invalid dimension -4"), std::string::npos);
  m = add_relu_model();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 50);
  EXPECT_NE(import_error(bytes_of(m)).find("invalid dimension"), std::string::npos);
  // Huge but in-range dims with too little data: rejected before allocating.
  m = add_relu_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->set_dims(0, int64_t{1} << 38);
  EXPECT_NE(import_error(bytes_of(m)).find("values for shape"), std::string::npos);
  m = add_relu_model();
  w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_raw_data(std::string(5, '\0'));
  EXPECT_NE(import_error(bytes_of(m)).find("bytes of data"), std::string::npos);
}

TEST(OnnxImport, NegativeInputDimsAreErrors) {
  auto m = add_relu_model();
  auto* d = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
  d->set_dim_value(-7);
  EXPECT_NE(import_error(bytes_of(m)).find("invalid dimension -7"), std::string::npos);
}

TEST(OnnxImport, InconsistentDeclaredShapeIsAnError) {
  auto m = add_relu_model();
  auto* d = m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
  d->set_dim_value(4);  // Relu of a 2x3 tensor cannot be 2x4
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("relu0"), std::string::npos) << err;
  EXPECT_NE(err.find("f32[2x4]"), std::string::npos) << err;
}

TEST(OnnxImport, UnsupportedElementTypeIsNamed) {
  auto m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(17);  // float8
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("FLOAT8E4M3FN"), std::string::npos) << err;
}

TEST(OnnxImport, SequenceTypedInputIsNamed) {
  auto m = add_relu_model();
  auto* t = m.mutable_graph()->mutable_input(0)->mutable_type();
  t->Clear();
  t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
  std::string err = import_error(bytes_of(m));
  EXPECT_NE(err.find("sequence"), std::string::npos) << err;
}

TEST(OnnxImport, EmptyAndRandomBytesAreErrors) {
  EXPECT_NE(import_error("").find("empty"), std::string::npos);
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::string junk(static_cast<size_t>(rng() % 512 + 1), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    EXPECT_NO_FATAL_FAILURE(import_error(junk));  // Error or (rarely) a valid empty model; never a crash
  }
  EXPECT_NE(import_error("this is not a model").find("malformed"), std::string::npos);
}

TEST(OnnxImport, EveryTruncationIsHandled) {
  std::string full = bytes_of(add_relu_model());
  int errors = 0;
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::string err = import_error(full.substr(0, cut));
    if (!err.empty()) ++errors;
  }
  // Nearly every prefix is malformed; none may crash (reaching here proves it).
  EXPECT_GT(errors, static_cast<int>(full.size()) * 9 / 10);
}

TEST(OnnxImport, ExternalDataIsReadRelativeToTheModel) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // w = [1, 2, 3] stored at offset 8 of weights.bin.
  std::string blob(8, 'x');
  float w[3] = {1, 2, 3};
  blob.append(reinterpret_cast<const char*>(w), sizeof w);
  write_file((dir / "weights.bin").string(), blob);
  auto m = add_relu_model();
  auto* init = m.mutable_graph()->mutable_initializer(0);
  init->clear_float_data();
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "8");
  kv("length", "12");
  write_file((dir / "m.onnx").string(), bytes_of(m));
  auto g = import_onnx_file((dir / "m.onnx").string());
  const Tensor& t = *g->find_value("w")->constant;
  EXPECT_EQ(t.data<float>()[0], 1.0f);
  EXPECT_EQ(t.data<float>()[2], 3.0f);
  // A range past the end of the file, and a path escaping the folder, are errors.
  init->mutable_external_data(1)->set_value("16");
  write_file((dir / "m.onnx").string(), bytes_of(m));
  EXPECT_THROW(import_onnx_file((dir / "m.onnx").string()), Error);
  init->mutable_external_data(1)->set_value("8");
  init->mutable_external_data(0)->set_value("../weights.bin");
  write_file((dir / "m.onnx").string(), bytes_of(m));
  EXPECT_THROW(import_onnx_file((dir / "m.onnx").string()), Error);
  fs::remove_all(dir);
}

// Hostile external-data fields: each is an error naming the tensor and the
// field, never a silent read of zeros (offset + length used to overflow) or a
// bare "stoll" from the number parser.
TEST(OnnxImport, ExternalDataFieldsAreCheckedWithoutOverflow) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera_ext_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_file((dir / "weights.bin").string(), std::string(64, '\0'));
  struct Case {
    std::string offset, length, error;
  };
  const std::vector<Case> cases = {
      {"9223372036854775803", "16", "tensor 'w': external data at offset 9223372036854775803 of length 16 exceeds file"},
      {"8", "9223372036854775807", "of length 9223372036854775807 exceeds file"},
      {"abc", "12", "tensor 'w': external data offset 'abc' is not a non-negative integer"},
      {"8", "-4", "tensor 'w': external data length '-4' is not a non-negative integer"},
      {"99999999999999999999", "12", "external data offset '99999999999999999999' is not a non-negative integer"},
      {"8", "", "external data length '' is not a non-negative integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.offset + " " + c.length);
    auto m = add_relu_model();
    auto* init = m.mutable_graph()->mutable_initializer(0);
    init->clear_float_data();
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<const char*, std::string>{"location", "weights.bin"}, {"offset", c.offset},
                        {"length", c.length}}) {
      auto* e = init->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    write_file((dir / "m.onnx").string(), bytes_of(m));
    try {
      import_onnx_file((dir / "m.onnx").string());
      ADD_FAILURE() << "imported";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(OnnxImport, MissingFileIsAnError) {
  try {
    import_onnx_file("/nonexistent/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.onnx"), std::string::npos);
  }
}

TEST(OnnxImport, WrongInputsAtRunTimeAreNamed) {
  auto g = import_onnx_bytes(bytes_of(add_relu_model()), "/tmp");
  try {
    interpret(*g, {Tensor(DType::F32, {3, 3})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' must have shape f32[2x3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(interpret(*g, {Tensor(DType::I32, {2, 3})}), Error);
  EXPECT_THROW(interpret(*g, {}), Error);
}

TEST(OnnxExport, RoundTripKeepsGraphAndOutputs) {
  auto g = import_onnx_bytes(bytes_of(add_relu_model()), "/tmp");
  auto again = import_onnx_bytes(export_onnx_bytes(*g), "/tmp");
  EXPECT_EQ(structural_hash(*g), structural_hash(*again));
  EXPECT_EQ(print_graph(*g), print_graph(*again));
  Tensor x = Tensor::from<float>({2, 3}, {-3, -1, 0, 1, 2, -0.5f});
  auto a = interpret(*g, {x});
  auto b = interpret(*again, {x});
  EXPECT_EQ(std::memcmp(a[0].raw(), b[0].raw(), a[0].nbytes()), 0);
}

}  // namespace
}  // namespace tessera
