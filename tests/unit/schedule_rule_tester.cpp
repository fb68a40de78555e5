// The schedule-rule tester (see schedule_rule_tester.h).
#include "schedule_rule_tester.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "compile/task.h"
#include "opexpr/expr_registry.h"
#include "ops/compiled_test_util.h"
#include "schedule/schedule.h"

namespace tessera::testing {

struct RuleTester::Program {
  std::unique_ptr<Graph> graph;
  const Node* node = nullptr;
  std::vector<te::Tensor> outs;
  schedule::TargetInfo target;
};

RuleTester& RuleTester::input(Dims dims, bool constant, DType dtype) {
  inputs_.push_back(random_tensor(dtype, dims, rng_, -1, 1));
  constant_.push_back(constant);
  return *this;
}

RuleTester& RuleTester::value(Tensor t, bool constant) {
  inputs_.push_back(std::move(t));
  constant_.push_back(constant);
  return *this;
}

RuleTester& RuleTester::attr(const std::string& name, Attribute a) {
  attrs_[name] = std::move(a);
  return *this;
}

RuleTester& RuleTester::tolerance(double rtol, double atol) {
  rtol_ = rtol, atol_ = atol;
  return *this;
}

RuleTester& RuleTester::samples(int n) {
  samples_ = n;
  return *this;
}

RuleTester& RuleTester::max_values(int n) {
  max_values_ = n;
  return *this;
}

// The one-node graph, and the node's program as compile_node builds it (its one-node task).
RuleTester::Program RuleTester::build(Isa isa) const {
  Program p;
  p.graph = std::make_unique<Graph>();
  Graph& g = *p.graph;
  if (!domain_.empty()) g.extra_opsets[domain_] = 1;
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    ins.push_back(constant_[i] ? g.add_constant(name, inputs_[i])
                               : g.add_input(name, {inputs_[i].dtype(), inputs_[i].dims(), true}));
  }
  Node* n = g.add_node(op_, ins, {"out0"}, attrs_, "node");
  n->domain = domain_;
  g.add_output(n->outputs[0]);
  infer_graph(g);
  p.node = n;
  compile::Task task = compile::node_task(*n, g.opset, constant_);
  p.outs = task.outs;
  p.target = schedule::TargetInfo(Target::for_isa(isa));
  for (size_t k = 0; k < task.params.size(); ++k)
    if (task.constant[k]) p.target.constant_inputs.insert(task.params[k].name());
  return p;
}

std::vector<schedule::StageSpace> RuleTester::space(Isa isa, const std::string& rule) const {
  Program p = build(isa);
  std::vector<schedule::StageSpace> r;
  for (schedule::StageSpace& s : schedule::space_of(p.outs, p.target))
    if (rule.empty() || s.rule == rule) r.push_back(std::move(s));
  return r;
}

std::optional<schedule::Schedule> RuleTester::schedule(Isa isa, const schedule::SchedulePoint& point) const {
  Program p = build(isa);
  return schedule::schedule_at(p.outs, p.target, point);
}

std::optional<bool> RuleTester::check(Isa isa, const schedule::SchedulePoint& point) const {
  Program p = build(isa);
  std::optional<schedule::Schedule> sched = schedule::schedule_at(p.outs, p.target, point);
  if (!sched) return std::nullopt;
  const std::string what = op_ + " [" + std::string(isa_name(isa)) + "] at point {" + point.to_text() + "}";
  compile::NodeKernelOptions o;
  o.target = Target::for_isa(isa);
  for (bool c : constant_) o.constant_inputs.push_back(c);
  compile::NodeKernel nk;
  try {
    nk = compile::compile_node(*p.node, p.graph->opset, sched, o);
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": does not compile: " << e.what() << "\n" << schedule::to_text(*sched);
    return false;
  }
  codegen::JitOptions jo;
  jo.isa = isa;
  auto run = [&](const loop::Kernel& k, std::vector<Tensor>& a) { codegen::jit_compile(k, jo)->run(a); };
  std::vector<Tensor> args;
  for (int i : nk.param_inputs) args.push_back(inputs_[static_cast<size_t>(i)].clone());
  if (nk.prepack) {
    std::vector<Tensor> pargs;
    for (int i : nk.prepack_inputs) pargs.push_back(inputs_[static_cast<size_t>(i)].clone());
    for (const auto& b : nk.prepack->outputs) pargs.emplace_back(b.dtype(), b.dims());
    run(*nk.prepack, pargs);
    for (size_t i = nk.prepack_inputs.size(); i < pargs.size(); ++i) args.push_back(pargs[i]);
  }
  const size_t out_at = args.size();
  const TensorType& out_type = p.node->outputs[0]->type;
  args.emplace_back(out_type.dtype, out_type.dims);
  for (const auto& b : nk.scratch) args.push_back(garbage_tensor(b.dtype(), b.dims()));
  run(nk.kernel, args);
  std::vector<const Tensor*> ref_in;
  for (const Tensor& t : inputs_) ref_in.push_back(&t);
  const Tensor want = run_reference(*p.node, p.graph->opset, ref_in).at(0);
  const Tensor& got = args[out_at];
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get_double(i), w = want.get_double(i);
    if (!(std::fabs(g - w) <= atol_ + rtol_ * std::fabs(w))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", reference " << w << "\n"
                    << schedule::to_text(*sched);
      return false;
    }
  }
  return true;
}

namespace {

// At most `n` of `k`'s values besides its default: its neighbours, the
// ends, then others at random.
std::vector<int64_t> values_to_sweep(const schedule::Knob& k, size_t n, std::mt19937& rng) {
  std::vector<int64_t> pick;
  auto add = [&](int64_t v) {
    if (v != k.default_value && pick.size() < n && std::find(pick.begin(), pick.end(), v) == pick.end())
      pick.push_back(v);
  };
  auto at = std::find(k.values.begin(), k.values.end(), k.default_value);
  if (at != k.values.end()) {
    if (at != k.values.begin()) add(*(at - 1));
    if (at + 1 != k.values.end()) add(*(at + 1));
  }
  if (!k.values.empty()) add(k.values.front()), add(k.values.back());
  std::vector<int64_t> rest = k.values;
  std::shuffle(rest.begin(), rest.end(), rng);
  for (int64_t v : rest) add(v);
  return pick;
}

}  // namespace

int RuleTester::sweep(Isa isa, const std::string& rule) {
  if (!codegen::host_supports(isa)) return 0;
  expect_default_is_default(isa);
  Program p = build(isa);
  const std::vector<schedule::StageSpace> space = schedule::space_of(p.outs, p.target);
  int points = 0, knobs = 0;
  auto run = [&](const schedule::SchedulePoint& point) {
    std::optional<bool> ok = check(isa, point);
    if (ok) ++points;
    return ok.value_or(true);
  };
  for (const schedule::StageSpace& s : space) {
    if (s.rule == rule) knobs += static_cast<int>(s.knobs.size());
    for (const schedule::Knob& k : s.knobs) {
      EXPECT_NE(std::find(k.values.begin(), k.values.end(), k.default_value), k.values.end())
          << s.stage << " " << k.name << ": the default is not a candidate";
      for (int64_t v : values_to_sweep(k, static_cast<size_t>(max_values_), rng_)) {
        schedule::SchedulePoint point;
        point.stages[s.stage][k.name] = v;
        if (!run(point)) return points;
      }
    }
  }
  std::mt19937_64 rng64(rng_());
  for (const schedule::SchedulePoint& point : schedule::schedule_candidates(p.outs, p.target, samples_ + 1, rng64)) {
    EXPECT_EQ(schedule::SchedulePoint::parse(point.to_text()), point);
    if (!run(point)) return points;
  }
  if (!rule.empty()) {
    std::string rules;
    for (const schedule::StageSpace& s : space) rules += " " + s.stage + ": " + s.rule;
    EXPECT_GT(knobs, 0) << op_ << ": no stage scheduled by rule " << rule << " (" << rules << ")";
  }
  EXPECT_GT(points, 1) << op_ << ": no point besides the default is valid";
  if (std::getenv("TESSERA_TESTER_VERBOSE")) std::fprintf(stderr, "%s [%s]: %d points\n", op_.c_str(), std::string(isa_name(isa)).c_str(), points);
  return points;
}

void RuleTester::expect_default_is_default(Isa isa) const {
  Program p = build(isa);
  const std::string want = schedule::to_text(schedule::default_schedule(p.outs, p.target));
  std::optional<schedule::Schedule> at_default = schedule::schedule_at(p.outs, p.target, {});
  ASSERT_TRUE(at_default) << op_;
  EXPECT_EQ(schedule::to_text(*at_default), want) << op_;
  // Every knob set explicitly to its default: the same schedule.
  schedule::SchedulePoint explicit_defaults;
  for (const schedule::StageSpace& s : schedule::space_of(p.outs, p.target))
    for (const schedule::Knob& k : s.knobs) explicit_defaults.stages[s.stage][k.name] = k.default_value;
  std::optional<schedule::Schedule> at_explicit = schedule::schedule_at(p.outs, p.target, explicit_defaults);
  ASSERT_TRUE(at_explicit) << op_ << " {" << explicit_defaults.to_text() << "}";
  EXPECT_EQ(schedule::to_text(*at_explicit), want) << op_ << " {" << explicit_defaults.to_text() << "}";
}

}  // namespace tessera::testing
