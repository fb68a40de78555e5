// DNNFusion's mathematical-property rewriting: for every rule of the table, a
// small graph holding its pattern (seeded random shapes, broadcast variants,
// inputs drawn from the rule's domain) is rewritten, the rule must fire and
// lower the FLOPs, and the outputs must match the reference interpreter's on
// the original graph. Also: the table is fully covered by these checks, the
// term parser, matches that must be left alone, idempotence, and the
// gpt2_tiny zoo model unchanged in value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "driver/driver.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "opt/rewrite_rules.h"
#include "support/error.h"
#include "zoo/zoo.h"

namespace tessera {
namespace {

using rewrite::Term;

// Where the leaves' values are drawn from: [-2, 2], +-[0.5, 2] or [0.5, 2].
enum class Range { Any, NonZero, Positive };

struct Case {
  const char* rule;   // the rule that must fire
  const char* graph;  // a term: upper-case leaves are graph inputs, lower-case ones constants
  // Leaf dims, comma-separated: n, m and k are random in [2, 5]; "" is a scalar.
  std::map<std::string, std::string> shapes;
  Range range = Range::Any;
  bool share = false;               // equal subterms become one node
  std::vector<int64_t> axes = {1};  // of every reduction; empty reduces all
  int64_t keepdims = 1;
  int64_t opset = 17;
};

// clang-format off
const Case kCases[] = {
  {"distribute_mul_add", "Add(Mul(X,Y), Mul(Z,X))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "n,m"}}},
  {"distribute_mul_add", "Add(Mul(Y,X), Mul(X,Z))", {{"X", "n,m"}, {"Y", "m"}, {"Z", "1,m"}}},
  {"distribute_mul_sub", "Sub(Mul(Y,X), Mul(X,Z))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "n,m"}}},
  {"distribute_mul_sub", "Sub(Mul(X,Y), Mul(Z,X))", {{"X", "n,1"}, {"Y", "n,m"}, {"Z", "m"}}},
  {"factor_add_self",    "Add(Mul(X,Y), X)",        {{"X", "n,m"}, {"Y", "m"}}},
  {"factor_add_self",    "Add(X, Mul(c,X))",        {{"X", "n,m,k"}, {"c", ""}}},
  {"factor_sub_self",    "Sub(Mul(Y,X), X)",        {{"X", "n,m"}, {"Y", "1,m"}}},
  {"factor_self_sub",    "Sub(X, Mul(X,c))",        {{"X", "n,m"}, {"c", ""}}},
  {"factor_self_sub",    "Sub(X, Mul(Y,X))",        {{"X", "k,n,m"}, {"Y", "n,1"}}},
  {"common_divisor_add", "Add(Div(X,Z), Div(Y,Z))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "n,m"}}, Range::NonZero},
  {"common_divisor_add", "Add(Div(X,Z), Div(Y,Z))", {{"X", "n,m"}, {"Y", "m"}, {"Z", "m"}}, Range::NonZero},
  {"common_divisor_sub", "Sub(Div(X,Z), Div(Y,Z))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "1,m"}}, Range::NonZero},
  {"assoc_mul",     "Mul(c1, Mul(X,c2))",   {{"X", "n,m"}, {"c1", ""}, {"c2", "m"}}},
  {"assoc_mul",     "Mul(Mul(X,Y), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "1,m"}}},
  {"assoc_add",     "Add(Add(X,c1), c2)",   {{"X", "n,m"}, {"c1", "m"}, {"c2", ""}}},
  {"assoc_add",     "Add(Y, Add(X,Z))",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "m"}}},
  {"assoc_add_sub", "Sub(Add(X,Y), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "m"}}},
  {"assoc_sub_add", "Add(Z, Sub(X,Y))",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "1,m"}}},
  {"assoc_sub_add", "Add(Sub(X,c1), c2)",   {{"X", "n,m"}, {"c1", ""}, {"c2", ""}}},
  {"assoc_sub_sub", "Sub(Sub(X,Y), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", ""}}},
  {"assoc_div_div", "Div(Div(X,c1), c2)",   {{"X", "n,m"}, {"c1", ""}, {"c2", "m"}}, Range::NonZero},
  {"assoc_div_div", "Div(Div(X,Y), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "1,m"}}, Range::NonZero},
  {"assoc_mul_div", "Mul(c2, Div(X,c1))",   {{"X", "n,m"}, {"c1", ""}, {"c2", ""}}, Range::NonZero},
  {"assoc_mul_div", "Mul(Div(X,Y), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", "m"}}, Range::NonZero},
  {"assoc_div_mul", "Div(Mul(Y,X), Z)",     {{"X", "n,m"}, {"Y", "m"}, {"Z", ""}}, Range::NonZero},
  {"neg_neg",      "Neg(Neg(X))",         {{"X", "n,m"}}},
  {"neg_neg",      "Exp(Neg(Neg(X)))",    {{"X", "n,m"}}},
  {"add_neg",      "Add(Neg(Y), X)",      {{"X", "n,m"}, {"Y", "n,m"}}},
  {"add_neg",      "Add(X, Neg(Y))",      {{"X", "n,1"}, {"Y", "m"}}},
  {"sub_neg",      "Sub(X, Neg(Y))",      {{"X", "n,m"}, {"Y", "m"}}},
  {"neg_sub",      "Neg(Sub(X,Y))",       {{"X", "n,m"}, {"Y", "1,m"}}},
  {"mul_neg_neg",  "Mul(Neg(X), Neg(Y))", {{"X", "n,m"}, {"Y", "m"}}},
  {"div_neg_neg",  "Div(Neg(X), Neg(Y))", {{"X", "n,m"}, {"Y", "n,m"}}, Range::NonZero},
  {"mul_neg_move", "Mul(Neg(X), c)",      {{"X", "n,m"}, {"c", "m"}}},
  {"mul_neg_move", "Mul(Y, Neg(X))",      {{"X", "n,m"}, {"Y", "m"}}},
  {"div_neg_move", "Div(Neg(X), Y)",      {{"X", "n,m"}, {"Y", "1,m"}}, Range::NonZero},
  {"neg_into_mul", "Neg(Mul(X,c))",       {{"X", "n,m"}, {"c", ""}}},
  {"neg_into_mul", "Neg(Mul(Y,X))",       {{"X", "n,m"}, {"Y", "n,1"}}},
  {"exp_mul",         "Mul(Exp(X), Exp(Y))", {{"X", "n,m"}, {"Y", "n,m"}}},
  {"exp_mul",         "Mul(Exp(Y), Exp(X))", {{"X", "n,m"}, {"Y", "m"}}},
  {"exp_div",         "Div(Exp(X), Exp(Y))", {{"X", "n,m"}, {"Y", "1,m"}}},
  {"exp_reduce_prod", "ReduceProd@r(Exp(X))", {{"X", "n,m,k"}}, Range::Any, false, {1}, 1, 11},
  {"exp_reduce_prod", "ReduceProd@r(Exp(X))", {{"X", "n,m,k"}}, Range::Any, false, {-1, 0}, 0, 13},
  {"exp_reduce_prod", "ReduceProd@r(Exp(X))", {{"X", "n,m"}}, Range::Any, false, {}, 0, 17},
  {"exp_reduce_prod", "ReduceProd@r(Exp(X))", {{"X", "n,m,k"}}, Range::Any, false, {2}, 1, 18},
  {"sqrt_cancel",       "Mul(Mul(X, Sqrt(Z)), Mul(Sqrt(Z), Y))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "n,m"}},
                        Range::Positive},
  {"sqrt_cancel",       "Mul(Mul(Sqrt(Z), Y), Mul(X, Sqrt(Z)))", {{"X", "n,m"}, {"Y", "m"}, {"Z", "n,1"}},
                        Range::Positive, true},
  {"sqrt_mul",          "Mul(Sqrt(X), Sqrt(Y))", {{"X", "n,m"}, {"Y", "m"}}, Range::Positive},
  {"sqrt_div",          "Div(Sqrt(X), Sqrt(Y))", {{"X", "n,m"}, {"Y", "n,m"}}, Range::Positive},
  {"sqrt_square",       "Sqrt(Square(X))",       {{"X", "n,m"}}},
  {"reciprocal_square", "Mul(Reciprocal(Mul(Y,X)), Reciprocal(X))", {{"X", "n,m"}, {"Y", "m"}}, Range::NonZero},
  {"reciprocal_square", "Mul(Reciprocal(X), Reciprocal(Mul(X,c)))", {{"X", "n,m"}, {"c", ""}}, Range::NonZero},
  {"div_reciprocal",    "Div(X, Reciprocal(Y))", {{"X", "n,m"}, {"Y", "m"}}, Range::NonZero},
  {"reduce_sum_mul_scalar", "ReduceSum@r(Mul(X,c))", {{"X", "n,m"}, {"c", ""}}, Range::Any, false, {0}, 0, 11},
  {"reduce_sum_mul_scalar", "ReduceSum@r(Mul(c,X))", {{"X", "n,m,k"}, {"c", "1,1"}}, Range::Any, false, {1, 2}, 1,
                            13},
  {"reduce_sum_div_scalar", "ReduceSum@r(Div(X,c))", {{"X", "n,m"}, {"c", "1,1"}}, Range::NonZero, false, {}, 1},
  {"reduce_sum_neg",        "ReduceSum@r(Neg(X))",   {{"X", "n,m"}}, Range::Any, false, {-1}, 1, 18},
};
// clang-format on

struct Built {
  std::unique_ptr<Graph> g;
  std::vector<Tensor> inputs;
};

// Builds the case's graph: output "y" is the term's value.
class CaseBuilder {
 public:
  CaseBuilder(const Case& c, uint32_t seed) : c_(c), rng_(seed) {
    for (const char* d : {"n", "m", "k"}) dims_[d] = std::uniform_int_distribution<int64_t>(2, 5)(rng_);
  }

  Built build() {
    b_.g = std::make_unique<Graph>();
    b_.g->opset = c_.opset;
    Value* y = value(rewrite::parse_term(c_.graph), "y");
    b_.g->add_output(y);
    infer_graph(*b_.g);
    return std::move(b_);
  }

 private:
  Dims shape(const std::string& leaf) {
    auto it = c_.shapes.find(leaf);
    if (it == c_.shapes.end()) throw std::runtime_error("no shape for leaf " + leaf);
    Dims d;
    std::string s = it->second;
    for (size_t b = 0; b < s.size();) {
      size_t e = std::min(s.find(',', b), s.size());
      std::string tok = s.substr(b, e - b);
      d.push_back(dims_.count(tok) ? dims_[tok] : std::stoll(tok));
      b = e + 1;
    }
    return d;
  }
  Tensor random(const Dims& d) {
    Tensor t(DType::F32, d);
    std::uniform_real_distribution<float> any(-2, 2), mag(0.5f, 2);
    for (float& v : t.span<float>()) {
      if (c_.range == Range::Any) v = any(rng_);
      else if (c_.range == Range::Positive) v = mag(rng_);
      else v = (rng_() & 1 ? -1 : 1) * mag(rng_);
    }
    return t;
  }
  Value* value(const Term& t, const std::string& name = "") {
    Graph& g = *b_.g;
    if (t.kind == Term::Kind::Literal) return g.add_constant(g.unique_name("lit"), Tensor::scalar<float>(float(t.number)));
    if (t.kind == Term::Kind::Var) {
      if (Value* v = g.find_value(t.name)) return v;
      Tensor x = random(shape(t.name));
      if (t.is_constant_var()) return g.add_constant(t.name, std::move(x));
      b_.inputs.push_back(std::move(x));
      return g.add_input(t.name, {DType::F32, b_.inputs.back().dims(), true});
    }
    const std::string key = rewrite::to_string(t);
    if (c_.share && shared_.count(key) && name.empty()) return shared_[key];
    std::vector<Value*> ins;
    for (const Term& a : t.args) ins.push_back(value(a));
    std::string op = t.name;
    if (op == "Square") {
      op = "Mul";
      ins.push_back(ins[0]);
    }
    AttrMap attrs;
    if (!t.label.empty()) {
      attrs["keepdims"] = Attribute::of_int(c_.keepdims);
      const bool as_input = c_.opset >= 18 || (op == "ReduceSum" && c_.opset >= 13);
      if (as_input && !c_.axes.empty())
        ins.push_back(g.add_constant(g.unique_name("axes"), Tensor::from<int64_t>({int64_t(c_.axes.size())}, c_.axes)));
      else if (!c_.axes.empty())
        attrs["axes"] = Attribute::of_ints(c_.axes);
    }
    Value* v = g.add_node(op, ins, {name.empty() ? g.unique_name(op) : name}, attrs)->outputs[0];
    return shared_[key] = v;
  }

  const Case& c_;
  std::mt19937 rng_;
  std::map<std::string, int64_t> dims_;
  std::map<std::string, Value*> shared_;
  Built b_;
};

double total_flops(const Graph& g) {
  double f = 0;
  for (const auto& n : g.nodes()) f += node_flops(*n);
  return f;
}

// |got - want| <= 1e-5 (1 + |want|) element by element.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].dims(), want[k].dims());
    ASSERT_EQ(got[k].dtype(), want[k].dtype());
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      double w = want[k].get_double(i), a = got[k].get_double(i);
      ASSERT_NEAR(a, w, tol * (1 + std::fabs(w))) << "output " << k << " element " << i;
    }
  }
}

void check_case(const Case& c, uint32_t seed) {
  Built b = CaseBuilder(c, seed).build();
  const std::vector<Tensor> want = interpret(*b.g, b.inputs);
  const double before = total_flops(*b.g);
  std::vector<std::string> applied;
  EXPECT_GE(rewrite_math_properties(*b.g, &applied), 1);
  EXPECT_NE(std::find(applied.begin(), applied.end(), c.rule), applied.end())
      << "applied: " << ::testing::PrintToString(applied) << "\n" << print_graph(*b.g);
  EXPECT_LT(total_flops(*b.g), before);
  ASSERT_NO_THROW(verify_graph(*b.g));
  ASSERT_EQ(b.g->outputs().size(), 1u);
  EXPECT_EQ(b.g->outputs()[0]->name, "y");
  expect_close(interpret(*b.g, b.inputs), want);
  EXPECT_EQ(rewrite_math_properties(*b.g), 0) << "not idempotent:\n" << print_graph(*b.g);
}

TEST(MathRewrite, EveryCaseFiresItsRuleAndMatchesTheInterpreter) {
  for (const Case& c : kCases)
    for (uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(std::string(c.rule) + ": " + c.graph + " seed " + std::to_string(seed));
      check_case(c, seed);
    }
}

// A new rule must come with a numeric check.
TEST(MathRewrite, EveryRuleOfTheTableHasANumericCheck) {
  std::vector<std::string> unchecked;
  for (const auto& r : rewrite::rules())
    if (std::none_of(std::begin(kCases), std::end(kCases), [&](const Case& c) { return r.name == c.rule; }))
      unchecked.push_back(r.name);
  EXPECT_TRUE(unchecked.empty()) << "rules without a case: " << ::testing::PrintToString(unchecked);
  // Each case's inputs lie in its rule's domain.
  for (const Case& c : kCases) {
    auto r = std::find_if(rewrite::rules().begin(), rewrite::rules().end(), [&](const auto& r) { return r.name == c.rule; });
    ASSERT_NE(r, rewrite::rules().end()) << c.rule << " is not a rule";
    if (r->domain.find('>') != std::string::npos) {
      EXPECT_EQ(c.range, Range::Positive) << c.rule;
    } else if (!r->domain.empty()) {
      EXPECT_NE(c.range, Range::Any) << c.rule;
    }
  }
}

TEST(MathRewrite, TermsParseAndPrint) {
  EXPECT_EQ(rewrite::to_string(rewrite::parse_term("Add( Mul(A,c1),-0.5 )")), "Add(Mul(A, c1), -0.5)");
  EXPECT_EQ(rewrite::to_string(rewrite::parse_term("ReduceSum@r(Square(X))")), "ReduceSum@r(Square(X))");
  Term t = rewrite::parse_term("Mul(c, B)");
  EXPECT_TRUE(t.args[0].is_constant_var());
  EXPECT_FALSE(t.args[1].is_constant_var());
  for (const char* bad : {"Add(A,", "Add(A)", "Foo(A,B)", "ReduceSum(A)", "Mul@r(A,B)", "Add(A,B) C", "(A)"})
    EXPECT_THROW(rewrite::parse_term(bad), Error) << bad;
  for (const auto& r : rewrite::rules()) {
    EXPECT_EQ(rewrite::to_string(r.pattern), rewrite::to_string(rewrite::parse_term(r.pattern_text))) << r.name;
  }
}

Built distributive(uint32_t seed, DType dtype = DType::F32) {
  Case c{"distribute_mul_add", "Add(Mul(X,Y), Mul(X,Z))", {{"X", "n,m"}, {"Y", "n,m"}, {"Z", "n,m"}}};
  Built b = CaseBuilder(c, seed).build();
  if (dtype != DType::F32) {
    for (const auto& v : b.g->values()) v->type.dtype = dtype;
    for (Tensor& t : b.inputs) t = t.cast(dtype);
  }
  return b;
}

TEST(MathRewrite, LeavesAnInteriorValueWithAnotherConsumer) {
  for (bool as_output : {false, true}) {
    Built b = distributive(4);
    Value* xy = b.g->nodes()[0]->outputs[0];
    ASSERT_EQ(xy->producer->op_type, "Mul");
    if (as_output) b.g->add_output(xy);
    else b.g->add_output(b.g->add_node("Relu", {xy}, {"r"})->outputs[0]);
    infer_graph(*b.g);
    const uint64_t h = structural_hash(*b.g);
    EXPECT_EQ(rewrite_math_properties(*b.g), 0);
    EXPECT_EQ(structural_hash(*b.g), h);
  }
}

TEST(MathRewrite, LeavesABroadcastThatChangesTheResult) {
  // A one-element factor of higher rank than X changes the reduced axes'
  // meaning: the rewritten shape differs, so the match is skipped.
  Case wide{"", "ReduceSum@r(Mul(X,c))", {{"X", "n,m"}, {"c", "1,1,1"}}, Range::Any, false, {1}, 1};
  // A factor that is not one element cannot leave the sum.
  Case vec{"", "ReduceSum@r(Mul(X,c))", {{"X", "n,m"}, {"c", "m"}}, Range::Any, false, {1}, 0};
  // Same FLOPs either way: x + x*y with y as large as x.
  Case full{"", "Add(X, Mul(X,Y))", {{"X", "n,m"}, {"Y", "n,m"}}};
  for (const Case& c : {wide, vec, full}) {
    SCOPED_TRACE(c.graph);
    Built b = CaseBuilder(c, 5).build();
    const uint64_t h = structural_hash(*b.g);
    EXPECT_EQ(rewrite_math_properties(*b.g), 0);
    EXPECT_EQ(structural_hash(*b.g), h);
  }
}

TEST(MathRewrite, LeavesIntegersAndOldOpsetsAlone) {
  Built ints = distributive(6, DType::I32);
  EXPECT_EQ(rewrite_math_properties(*ints.g), 0);
  Built old = distributive(6);
  old.g->opset = 6;
  EXPECT_EQ(rewrite_math_properties(*old.g), 0);
  Built f64 = distributive(6, DType::F64);
  const std::vector<Tensor> want = interpret(*f64.g, f64.inputs);
  EXPECT_EQ(rewrite_math_properties(*f64.g), 1);
  expect_close(interpret(*f64.g, f64.inputs), want, 1e-12);
}

// Several rules in one graph, applied largest gain first, then nothing more.
TEST(MathRewrite, ChainsRulesAndIsIdempotent) {
  // Neg moves into c1 (saves a Neg), then X distributes (saves a Mul).
  Case c{"", "Add(Mul(Neg(X), c1), Mul(X, Mul(c2, Y)))", {{"X", "n,m"}, {"Y", "n,m"}, {"c1", ""}, {"c2", ""}}};
  Built b = CaseBuilder(c, 7).build();
  const std::vector<Tensor> want = interpret(*b.g, b.inputs);
  const double before = total_flops(*b.g);
  std::vector<std::string> applied;
  EXPECT_GE(rewrite_math_properties(*b.g, &applied), 2) << ::testing::PrintToString(applied);
  EXPECT_LT(total_flops(*b.g), before);
  expect_close(interpret(*b.g, b.inputs), want);
  EXPECT_EQ(rewrite_math_properties(*b.g), 0);
}

TEST(MathRewrite, LoadModelRunsThePassUnlessTurnedOff) {
  // BERT's embeddings add two constants to the word lookup: they are summed once.
  LoadOptions off;
  off.passes.disable("math-rewrite");
  auto plain = load_model("zoo:bert_base", off);
  auto rewritten = load_model("zoo:bert_base");
  EXPECT_LT(rewritten->nodes().size(), plain->nodes().size());
  EXPECT_EQ(rewrite_math_properties(*plain), 1);
  EXPECT_EQ(plain->nodes().size(), rewritten->nodes().size());
}

// The pass on a real model changes no output beyond rounding.
TEST(MathRewrite, Gpt2TinyKeepsItsOutputs) {
  auto g = build_zoo_model("gpt2_tiny");
  fold_constants(*g);
  const std::vector<Tensor> ins = random_inputs(*g, 3);
  const std::vector<Tensor> want = interpret(*g, ins);
  std::vector<std::string> applied;
  rewrite_math_properties(*g, &applied);
  std::printf("gpt2_tiny: %zu rewrite(s) %s\n", applied.size(), ::testing::PrintToString(applied).c_str());
  ASSERT_NO_THROW(verify_graph(*g));
  expect_close(interpret(*g, ins), want, 1e-4);
}

}  // namespace
}  // namespace tessera
