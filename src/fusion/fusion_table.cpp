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
constexpr OpFusionRule kOpRules[] = {
    {"", "WinogradInput", EdgeCondition::None, Decision::Fuse, "input transform joins its producer"},
    {"WinogradGemm", "WinogradOutput", EdgeCondition::None, Decision::Fuse, "output transform joins its product"},
    {"MatMul", "Add", EdgeCondition::SameShape, Decision::Fuse, "bias add is the product's epilogue"},
    {"ReduceMean", "Sub", EdgeCondition::ConsumerCentres, Decision::Fuse, "layer norm: centring joins its mean"},
    {"Sub", "", EdgeCondition::ProducerCentres, Decision::Fuse, "layer norm: rows centred and scaled in one pass"},
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

bool holds(EdgeCondition c, const Node& producer, const Node& consumer) {
  switch (c) {
    case EdgeCondition::None: return true;
    case EdgeCondition::SameShape:
      return !producer.outputs.empty() && !consumer.outputs.empty() && producer.outputs[0] && consumer.outputs[0] &&
             producer.outputs[0]->type.fully_known() &&
             producer.outputs[0]->type.dims == consumer.outputs[0]->type.dims;
    case EdgeCondition::ConsumerCentres: return centres_rows(consumer);
    case EdgeCondition::ProducerCentres: return centres_rows(producer);
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
