// Program-level schedule directives: inline, cache_write, cache_read, rfactor.
#include "schedule/stage_graph.h"

#include <algorithm>

#include "loop/visitor.h"
#include "support/error.h"
#include "support/int_div.h"

namespace tessera::schedule {

using te::Stage;
using te::StageKind;
using te::StagePtr;
using te::Tensor;

namespace {

// Points reads of stages in `map` at their replacements.
class ReadRetargeter : public loop::IRMutator {
 public:
  explicit ReadRetargeter(const std::unordered_map<const Stage*, StagePtr>& m) : map_(m) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  loop::Expr visit(const loop::ProducerLoadNode* op, const loop::Expr& e) override {
    loop::Expr r = IRMutator::visit(op, e);
    auto* load = r.as<loop::ProducerLoadNode>();
    auto it = map_.find(static_cast<const Stage*>(load->producer.get()));
    if (it == map_.end()) return r;
    return loop::producer_load(it->second, load->value_index, load->type, load->indices);
  }

 private:
  const std::unordered_map<const Stage*, StagePtr>& map_;
};

StagePtr rebuild(const StagePtr& s, const std::unordered_map<const Stage*, StagePtr>& map) {
  if (s->kind == StageKind::Placeholder) return s;
  auto copy = std::make_shared<Stage>(*s);
  bool changed = false;
  if (s->kind == StageKind::Compute) {
    ReadRetargeter r(map);
    copy->body = r.mutate(s->body);
    changed = !copy->body.same_as(s->body);
  } else {
    for (Tensor& in : copy->extern_inputs) {
      auto it = map.find(&in.stage());
      if (it != map.end()) {
        in = Tensor(it->second, in.index());
        changed = true;
      }
    }
  }
  return changed ? copy : s;
}

}  // namespace

StagePtr find_stage(const std::vector<Tensor>& outputs, const std::string& name) {
  for (const StagePtr& s : te::stages_of(outputs))
    if (s->name == name) return s;
  return nullptr;
}

std::vector<Tensor> replace_stages(const std::vector<Tensor>& outputs,
                                   const std::unordered_map<const Stage*, StagePtr>& replace) {
  std::unordered_map<const Stage*, StagePtr> map;
  for (const StagePtr& s : te::stages_of(outputs)) {
    auto it = replace.find(s.get());
    // A replacement's own reads of other changed stages are retargeted too.
    StagePtr r = rebuild(it == replace.end() ? s : it->second, map);
    if (r != s) map[s.get()] = r;
  }
  std::vector<Tensor> result;
  for (const Tensor& t : outputs) {
    auto it = map.find(&t.stage());
    result.push_back(it == map.end() ? t : Tensor(it->second, t.index()));
  }
  return result;
}

namespace {

StagePtr require_stage(const std::vector<Tensor>& outputs, const std::string& name, const char* step) {
  StagePtr s = find_stage(outputs, name);
  TESSERA_CHECK(s, "schedule: ", step, ": no stage named '", name, "'");
  return s;
}

}  // namespace

std::vector<Tensor> inline_stage(const std::vector<Tensor>& outputs, const std::string& name) {
  StagePtr s = require_stage(outputs, name, "compute_inline");
  TESSERA_CHECK(s->kind == StageKind::Compute, "schedule: compute_inline: ", name, " is a ",
                te::stage_kind_name(s->kind), " stage");
  for (const Tensor& t : outputs)
    TESSERA_CHECK(&t.stage() != s.get(), "schedule: compute_inline: ", name, " is an output of the kernel");
  Tensor t(s, 0);
  std::unordered_map<const Stage*, StagePtr> map;
  for (const StagePtr& c : te::stages_of(outputs)) {
    if (c->kind == StageKind::Extern)
      for (const Tensor& in : c->extern_inputs)
        TESSERA_CHECK(&in.stage() != s.get(), "schedule: compute_inline: ", name, " is read by extern stage ",
                      c->name);
    if (c->kind != StageKind::Compute || c == s) continue;
    auto copy = std::make_shared<Stage>(*c);
    copy->body = te::inline_tensor(c->body, t);
    if (!copy->body.same_as(c->body)) map[c.get()] = copy;
  }
  return replace_stages(outputs, map);
}

std::vector<Tensor> cache_write(const std::vector<Tensor>& outputs, const std::string& name) {
  StagePtr s = require_stage(outputs, name, "cache_write");
  TESSERA_CHECK(s->kind == StageKind::Compute, "schedule: cache_write: ", name, " is a ",
                te::stage_kind_name(s->kind), " stage");
  auto local = std::make_shared<Stage>(*s);
  local->name = name + ".local";
  std::vector<std::string> axis_names;
  for (const auto& a : s->axes) axis_names.push_back(a.name());
  Tensor local_t(local, 0);
  Tensor copy = te::compute(
      s->shapes[0], [&](const te::Indices& i) { return local_t(std::vector<loop::Expr>(i.begin(), i.end())); }, name,
      te::StageTag(s->op_class, s->tag), axis_names);
  return replace_stages(outputs, {{s.get(), copy.stage_ptr()}});
}

std::vector<Tensor> cache_read(const std::vector<Tensor>& outputs, const std::string& stage,
                               const std::string& consumer) {
  StagePtr s = require_stage(outputs, stage, "cache_read");
  StagePtr c = require_stage(outputs, consumer, "cache_read");
  TESSERA_CHECK(s->num_outputs() == 1, "schedule: cache_read: ", stage, " has several outputs");
  TESSERA_CHECK(c->kind == StageKind::Compute, "schedule: cache_read: consumer ", consumer, " is not a compute stage");
  Tensor src(s, 0);
  Tensor copy = te::compute(
      src.shape(), [&](const te::Indices& i) { return src(std::vector<loop::Expr>(i.begin(), i.end())); },
      stage + "." + consumer, "cache_read");
  // Only the consumer reads the copy.
  auto consumer_copy = std::make_shared<Stage>(*c);
  std::unordered_map<const Stage*, StagePtr> one{{s.get(), copy.stage_ptr()}};
  ReadRetargeter r(one);
  consumer_copy->body = r.mutate(c->body);
  TESSERA_CHECK(!consumer_copy->body.same_as(c->body), "schedule: cache_read: ", consumer, " does not read ", stage);
  return replace_stages(outputs, {{c.get(), consumer_copy}});
}

std::vector<Tensor> rfactor(const std::vector<Tensor>& outputs, const std::string& name, const std::string& axis,
                            int64_t factor) {
  StagePtr s = require_stage(outputs, name, "rfactor");
  TESSERA_CHECK(s->kind == StageKind::Compute && te::is_top_reduce(*s) && s->num_outputs() == 1, "schedule: rfactor: ",
                name, " is not a compute stage whose formula is a reduction");
  TESSERA_CHECK(factor >= 1, "schedule: rfactor ", name, " ", axis, ": factor must be positive, got ", factor);
  const auto* red = s->body.as<loop::ReduceNode>();
  size_t k = red->axes.size();
  for (size_t a = 0; a < red->axes.size(); ++a)
    if (red->axes[a].var.name() == axis) k = a;
  TESSERA_CHECK(k < red->axes.size(), "schedule: rfactor: ", name, " has no reduction axis '", axis, "'");
  const loop::ReduceAxis& r = red->axes[k];
  const int64_t* n = loop::as_const_int(r.extent);
  TESSERA_CHECK(n, "schedule: rfactor ", name, " ", axis, ": the axis extent is not a constant");
  // Partial results per lane: a vector's worth (or a few) even for a short
  // axis, never more (an untrusted schedule could ask for a billion).
  TESSERA_CHECK(factor <= std::max<int64_t>(*n, 256), "schedule: rfactor ", name, " ", axis, " ", factor,
                ": more partial results than the axis has elements (", *n, ")");
  const int64_t outer = ceil_div(*n, factor);

  // S.rf[axes..., lane] = reduce over (other axes, r.o) of source[r := r.o*F + lane + min].
  std::vector<std::string> names;
  for (const auto& a : s->axes) names.push_back(a.name());
  names.push_back(axis + ".lane");
  Dims shape = s->shapes[0];
  shape.push_back(factor);
  Tensor rf = te::compute(shape, [&](const te::Indices& i) {
    loop::VarMap map;
    for (size_t d = 0; d < s->axes.size(); ++d) map[s->axes[d].node()] = i[d];
    loop::ReduceAxis ro{loop::Var(axis + ".o"), loop::int_imm(0), loop::int_imm(outer)};
    loop::Expr pos = loop::Expr(ro.var) * factor + i.back();
    map[r.var.node()] = pos + r.min;
    std::vector<loop::ReduceAxis> axes;
    for (size_t a = 0; a < red->axes.size(); ++a) axes.push_back(a == k ? ro : red->axes[a]);
    loop::Expr cond = red->condition.defined() ? loop::substitute(red->condition, map) : loop::Expr();
    if (outer * factor != *n) {
      loop::Expr inside = pos < *n;
      cond = cond.defined() ? (cond && inside) : inside;
    }
    return loop::reduce(red->op, loop::substitute(red->source, map), axes, cond);
  }, name + ".rf", "rfactor", names);
  // S = reduce over the lanes of S.rf, with S's init.
  Tensor combined = te::compute(s->shapes[0], [&](const te::Indices& i) {
    loop::ReduceAxis lane{loop::Var(axis + ".lanes"), loop::int_imm(0), loop::int_imm(factor)};
    std::vector<loop::Expr> idx(i.begin(), i.end());
    idx.push_back(lane.var);
    loop::VarMap map;  // the init may read S's own axes
    for (size_t d = 0; d < s->axes.size(); ++d) map[s->axes[d].node()] = i[d];
    loop::Expr init = red->init.defined() ? loop::substitute(red->init, map) : loop::Expr();
    return loop::reduce(red->op, rf(idx), {lane}, loop::Expr(), init);
  }, name, te::StageTag(s->op_class, s->tag), names.size() > 1 ? std::vector<std::string>(names.begin(), names.end() - 1) : std::vector<std::string>{});
  return replace_stages(outputs, {{s.get(), combined.stage_ptr()}});
}

}  // namespace tessera::schedule
