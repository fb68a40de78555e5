// DNNFusion's fusion table: for a producer of one mapping type feeding a
// consumer of another, the mapping type of the fused result and whether to
// fuse, break, or decide by measuring (profile). The table is data
// (fusion_table.cpp); the planner only looks it up.
#pragma once

#include <string_view>

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

// Every mapping type, in the order of the table's rows and columns.
inline constexpr MappingType kMappingTypes[] = {MappingType::OneToOne, MappingType::OneToMany,
                                                MappingType::ManyToMany, MappingType::Reorganize,
                                                MappingType::Shuffle};

}  // namespace tessera::fusion
