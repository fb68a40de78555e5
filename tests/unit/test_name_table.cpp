// Enum name tables (src/support/name_table.h): names and values round-trip
// through the table, and a name the table lacks is an error naming what was
// given, what kind of name it is, and every name available, in table order;
// the tables that use it (cost labels, dataset splits, pruning methods) and
// string options checked with check_one_of (PET mutant kinds, --cost-model)
// say the same.
#include <gtest/gtest.h>

#include <string>

#include "cost/dataset_prune.h"
#include "cost/dataset_split.h"
#include "error_message.h"
#include "support/name_table.h"
#include "tessera/runtime.h"
#include "tune/record.h"
#include "tune/tuner.h"

namespace tessera {
namespace {

using testing::error_of;

enum class Fruit { Apple, Pear, Plum, Quince };
constexpr Named<Fruit> kFruits[] = {{Fruit::Apple, "apple"}, {Fruit::Pear, "pear"}, {Fruit::Plum, "plum"}};

TEST(NameTable, NamesAndValuesRoundTrip) {
  for (Fruit f : {Fruit::Apple, Fruit::Pear, Fruit::Plum}) {
    const std::string_view name = table_name(kFruits, f);
    EXPECT_NE(name, "?");
    EXPECT_EQ(table_parse(kFruits, name, "fruit"), f) << name;
  }
  EXPECT_EQ(table_name(kFruits, Fruit::Pear), "pear");
  EXPECT_EQ(table_name(kFruits, Fruit::Quince), "?");  // left out of the table
  EXPECT_EQ(table_names(kFruits), "apple, pear, plum");
}

TEST(NameTable, UnknownNameListsTheTable) {
  EXPECT_EQ(error_of([] { table_parse(kFruits, "banana", "fruit"); }),
            "unknown fruit 'banana' (available: apple, pear, plum)");
  // Names match whole and exactly.
  EXPECT_NE(error_of([] { table_parse(kFruits, "Apple", "fruit"); }), "");
  EXPECT_NE(error_of([] { table_parse(kFruits, "appl", "fruit"); }), "");
  EXPECT_NE(error_of([] { table_parse(kFruits, "", "fruit"); }), "");
}

TEST(NameTable, CheckOneOfListsTheChoices) {
  EXPECT_EQ(error_of([] { check_one_of("b", {"a", "b", "c"}, "--letter"); }), "");
  EXPECT_EQ(error_of([] { check_one_of("d", {"a", "b", "c"}, "--letter"); }),
            "unknown --letter 'd' (available: a, b, c)");
}

TEST(NameTable, ProjectTablesNameWhatWasGivenAndWhatIsAvailable) {
  EXPECT_EQ(error_of([] { tune::parse_cost_label("mean"); }),
            "unknown cost label 'mean' (available: min, median, ratio)");
  EXPECT_EQ(error_of([] { cost::parse_split("random"); }),
            "unknown split 'random' (available: none, within-task, by-task, by-target, by-network)");
  EXPECT_EQ(error_of([] { cost::parse_prune_method("kmeans"); }),
            "unknown pruning method 'kmeans' (available: random, cluster, loss, twins)");
  for (cost::Split s : {cost::Split::None, cost::Split::WithinTask, cost::Split::ByTask, cost::Split::ByTarget,
                        cost::Split::ByNetwork})
    EXPECT_EQ(cost::parse_split(cost::split_name(s)), s) << cost::split_name(s);
  for (cost::PruneMethod m : {cost::PruneMethod::Random, cost::PruneMethod::Cluster, cost::PruneMethod::Loss})
    EXPECT_EQ(cost::parse_prune_method(cost::prune_method_name(m)), m) << cost::prune_method_name(m);
}

// String options checked with check_one_of fail before any model is loaded.
TEST(NameTable, StringOptionsListTheirChoices) {
  CompileOptions c;
  c.pet_mutants = "some";
  EXPECT_EQ(error_of([&] { CompiledModel::compile("zoo:squeezenet1_1", c); }),
            "unknown PET mutant kind 'some' (available: all, equivalent, partial)");
  tune::TuneOptions t;
  t.cost_model = "gbm";
  EXPECT_EQ(error_of([&] { tune::tune_model(t); }), "unknown --cost-model 'gbm' (available: none, static, xgb, attention)");
}

}  // namespace
}  // namespace tessera
