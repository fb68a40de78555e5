// The 5x5 table of DNNFusion (Niu et al., PLDI 2021, Table 3), producer rows
// by consumer columns.
#include "fusion/fusion_table.h"

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

}  // namespace

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
