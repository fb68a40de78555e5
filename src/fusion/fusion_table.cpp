// The 5x5 table of DNNFusion (Niu et al., PLDI 2021, Table 3), producer rows
// by consumer columns, and Tessera's op rules.
#include "fusion/fusion_table.h"

#include "ops/blocked_conv.h"

namespace tessera::fusion {

namespace {

using M = MappingType;
constexpr Decision F = Decision::Fuse, P = Decision::Profile, B = Decision::Break;

int index_of(MappingType t) {
  switch (t) {
    case M::OneToOne: return 0;
    case M::OneToMany: return 1;
    case M::ManyToMany: return 2;
    case M::Reorganize: return 3;
    case M::Shuffle: return 4;
  }
  return 0;
}

// Columns: consumer One-to-One, One-to-Many, Many-to-Many, Reorganize, Shuffle.
// One-to-One producers take the consumer's type (filled in by fusion_rule).
constexpr FusionRule kTable[5][5] = {
    /* One-to-One  */ {{M::OneToOne, F}, {M::OneToMany, F}, {M::ManyToMany, F}, {M::Reorganize, F}, {M::Shuffle, F}},
    /* One-to-Many */ {{M::OneToMany, F}, {M::OneToMany, P}, {M::OneToMany, B}, {M::OneToMany, P}, {M::OneToMany, P}},
    /* Many-to-Many*/ {{M::ManyToMany, F}, {M::ManyToMany, P}, {M::ManyToMany, B}, {M::ManyToMany, P}, {M::ManyToMany, P}},
    /* Reorganize  */ {{M::Reorganize, F}, {M::OneToMany, P}, {M::ManyToMany, P}, {M::Reorganize, F}, {M::Reorganize, F}},
    /* Shuffle     */ {{M::Shuffle, F}, {M::OneToMany, P}, {M::ManyToMany, P}, {M::Reorganize, F}, {M::Shuffle, F}},
};

// Op rules. The Winograd pass (opt/winograd.cpp) runs one 3x3 convolution as
// three many-to-many ops; by the table each would be a kernel of its own
// (many-to-many after many-to-many breaks), two more kernels a convolution
// than the direct form. But neither transform is a contraction to tile:
//  - the input transform reads 6x6 (or 4x4) windows of its input, which its
//    kernel copies into a padded buffer first anyway; in its producer's block
//    that copy reads the producer's result where the block computed it (an
//    activation applied as it is copied) instead of a separate kernel
//    reading it back from the arena;
//  - the output transform reads all the points of one tile of the product
//    and is the product's natural epilogue: the product's block writes M
//    into the kernel's scratch and the transform (with its bias, residual
//    add and activation) follows in the same kernel.
// So a Winograd convolution is one kernel again (product and output
// transform) plus a loop nest in its producer's kernel.
//
// A bias add after a MatMul (one-to-many: the bias is broadcast over rows)
// is a profile cell by the table; it is the product's epilogue, added to
// each register tile before the store, never slower than a pass of its own.
// Timing it would decide by noise (the two differ by less than a run's
// jitter), so alike products could end up one fused and one apart.
//
// A layer norm exported in pieces (ReduceMean, Sub, Pow, ReduceMean, Add,
// Sqrt, Div, Mul, Add) breaks in two by the table: x - mean(x) is
// one-to-many (the mean broadcast along the row) and the variance is a
// reduction after it. Both reductions run along the same last axis, so
// the block is one loop over rows with each row's sums computed inside it
// (schedule/row_schedule.h); the centring joins its mean and the variance.
// Its scale and shift by constants (gamma, beta: one-to-many, broadcast along
// the row) are profile cells by the table; applied where the normalized
// value is computed they save a pass over the rows each and recompute
// nothing, so, as with the bias add, timing them would decide by noise (the
// 64x512 rows of a small decoder measured fused and apart within a run's
// jitter, one layer's norm fused and the next one's not).
constexpr OpFusionRule kOpRules[] = {
    {"", "WinogradInput", EdgeCondition::None, Decision::Fuse, "input transform joins its producer"},
    {"WinogradGemm", "WinogradOutput", EdgeCondition::None, Decision::Fuse, "output transform joins its product"},
    {"MatMul", "Add", EdgeCondition::SameShape, Decision::Fuse, "bias add is the product's epilogue"},
    {"ReduceMean", "Sub", EdgeCondition::ConsumerCentres, Decision::Fuse, "layer norm: centring joins its mean"},
    {"Sub", "", EdgeCondition::ProducerCentres, Decision::Fuse, "layer norm: rows centred and scaled in one pass"},
    {"", "", EdgeCondition::ScalesNormalizedRows, Decision::Fuse, "layer norm: scale and shift join the rows"},
};

bool matches(std::string_view pattern, const Node& n) {
  return pattern.empty() || (n.op_type == pattern && (n.domain.empty() || n.domain == kBlockedDomain));
}

// n computes x - ReduceMean(x) with the mean over the last axis only (kept as 1).
bool centres_rows(const Node& n) {
  if (n.op_type != "Sub" || !n.domain.empty() || n.num_inputs() != 2 || !n.inputs[0] || !n.inputs[1]) return false;
  const Value* x = n.inputs[0];
  const Value* mean = n.inputs[1];
  const Node* r = mean->producer;
  if (!r || r->op_type != "ReduceMean" || !r->domain.empty() || r->num_inputs() < 1 || r->inputs[0] != x) return false;
  if (!x->type.fully_known() || !mean->type.fully_known() || x->type.rank() < 1) return false;
  Dims want = x->type.dims;
  want.back() = 1;
  return mean->type.dims == want && x->type.dims.back() > 1;
}

// n is x - mean(x) over the last axis divided by a value (the deviation).
bool normalizes_rows(const Node& n) {
  if (n.op_type != "Div" || !n.domain.empty() || n.num_inputs() != 2 || !n.inputs[0] || !n.inputs[0]->producer)
    return false;
  return centres_rows(*n.inputs[0]->producer);
}

// consumer is Mul or Add of producer's value and a constant, with the
// value's shape, and producer normalizes rows or is such a scale or shift
// of normalized rows (gamma then beta).
bool scales_normalized_rows(const Node& producer, const Node& consumer, int depth = 0) {
  if ((consumer.op_type != "Mul" && consumer.op_type != "Add") || !consumer.domain.empty() ||
      consumer.num_inputs() != 2 || producer.outputs.empty() || consumer.outputs.empty())
    return false;
  const Value* v = producer.outputs[0];
  const Value* other = consumer.inputs[0] == v ? consumer.inputs[1] : consumer.inputs[0];
  if (!v || !other || (consumer.inputs[0] != v && consumer.inputs[1] != v) || !other->is_constant() ||
      !consumer.outputs[0] || !v->type.fully_known() || consumer.outputs[0]->type.dims != v->type.dims)
    return false;
  if (normalizes_rows(producer)) return true;
  // The scale before the shift: producer is itself a scale of normalized rows.
  if (depth > 0 || producer.num_inputs() != 2) return false;
  for (const Value* in : producer.inputs)
    if (in && in->producer && scales_normalized_rows(*in->producer, producer, depth + 1)) return true;
  return false;
}

bool holds(EdgeCondition c, const Node& producer, const Node& consumer) {
  switch (c) {
    case EdgeCondition::None: return true;
    case EdgeCondition::SameShape:
      return !producer.outputs.empty() && !consumer.outputs.empty() && producer.outputs[0] && consumer.outputs[0] &&
             producer.outputs[0]->type.fully_known() &&
             producer.outputs[0]->type.dims == consumer.outputs[0]->type.dims;
    case EdgeCondition::ConsumerCentres: return centres_rows(consumer);
    case EdgeCondition::ProducerCentres: return centres_rows(producer);
    case EdgeCondition::ScalesNormalizedRows: return scales_normalized_rows(producer, consumer);
  }
  return false;
}

}  // namespace

std::span<const OpFusionRule> op_fusion_rules() { return kOpRules; }

const OpFusionRule* op_fusion_rule(const Node& producer, const Node& consumer) {
  for (const OpFusionRule& r : kOpRules)
    if (matches(r.producer, producer) && matches(r.consumer, consumer) && holds(r.condition, producer, consumer))
      return &r;
  return nullptr;
}

FusionRule edge_rule(const Node& producer, MappingType producer_type, const Node& consumer, MappingType consumer_type) {
  FusionRule rule = fusion_rule(producer_type, consumer_type);
  if (const OpFusionRule* r = op_fusion_rule(producer, consumer)) rule.decision = r->decision;
  return rule;
}

std::string_view decision_name(Decision d) {
  switch (d) {
    case Decision::Fuse: return "fuse";
    case Decision::Profile: return "profile";
    case Decision::Break: return "break";
  }
  return "?";
}

FusionRule fusion_rule(MappingType producer, MappingType consumer) {
  return kTable[index_of(producer)][index_of(consumer)];
}

}  // namespace tessera::fusion
