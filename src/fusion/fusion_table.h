// DNNFusion's fusion table: for a producer of one mapping type feeding a
// consumer of another, the mapping type of the fused result and whether to
// fuse, break, or decide by measuring (profile). Beside it, a short list of
// op rules: edges between particular ops whose decision the mapping types
// do not capture (one convolution lowered as several ops, whose parts belong
// in the blocks around them). Both are data (fusion_table.cpp); the planner
// only looks them up.
#pragma once

#include <span>
#include <string_view>

#include "ir/graph.h"
#include "ops/registry.h"

namespace tessera::fusion {

enum class Decision { Fuse, Profile, Break };
std::string_view decision_name(Decision d);  // "fuse", "profile", "break"

struct FusionRule {
  MappingType result = MappingType::OneToOne;  // type of the fused pair (meaningless on Break)
  Decision decision = Decision::Break;
};

// The cell for producer -> consumer.
FusionRule fusion_rule(MappingType producer, MappingType consumer);

// What an op rule asks of its edge besides the op types.
enum class EdgeCondition {
  None,
  // The consumer's output has the producer's shape (an epilogue at the
  // producer's own positions: a bias add, not a broadcast of the product).
  SameShape,
  // The consumer computes x - ReduceMean(x) over the last axis only (a
  // layer norm's centring), the producer being that mean.
  ConsumerCentres,
  // The producer computes x - ReduceMean(x) over the last axis only.
  ProducerCentres,
  // The consumer multiplies or adds a constant to the producer's value,
  // keeping its shape, and the producer is a layer norm's normalized rows
  // (x - mean(x) divided by the deviation) or already such a scale or shift
  // of them: the norm's gamma and beta.
  ScalesNormalizedRows,
};

// An exception to the table for the edge from a node of op `producer` to a
// node of op `consumer` (op types in Tessera's domain or the ONNX one; ""
// matches any op) meeting `condition`: its decision replaces the cell's,
// whose result type is kept.
struct OpFusionRule {
  std::string_view producer;
  std::string_view consumer;
  EdgeCondition condition = EdgeCondition::None;
  Decision decision = Decision::Fuse;
  std::string_view why;  // shown by --dump-fusion
};
std::span<const OpFusionRule> op_fusion_rules();

// The op rule for the edge producer -> consumer, null when none applies.
const OpFusionRule* op_fusion_rule(const Node& producer, const Node& consumer);

// The decision for joining across the edge producer -> consumer, where the
// producer's side of the edge has mapping type `producer_type` (a block's
// type, or the node's) and the consumer's `consumer_type`: the op rule's
// when there is one, the table's otherwise.
FusionRule edge_rule(const Node& producer, MappingType producer_type, const Node& consumer, MappingType consumer_type);

// Every mapping type, in the order of the table's rows and columns.
inline constexpr MappingType kMappingTypes[] = {MappingType::OneToOne, MappingType::OneToMany,
                                                MappingType::ManyToMany, MappingType::Reorganize,
                                                MappingType::Shuffle};

}  // namespace tessera::fusion
