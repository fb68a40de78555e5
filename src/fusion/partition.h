// DNNFusion's fusion plan as a partition: the graph's nodes partitioned into
// blocks, each to become one kernel ("plan" alone means the runtime's
// compiled program, runtime/executor.h). Seeds are one-to-one ops, smallest output first
// (then, for chains without one, the other ops in the same order);
// a block grows to its predecessors, then to its successors, by the fusion
// table and its op rules (fusion_table.h): "fuse" joins, "break" stops, "profile" joins only
// when the fused kernel measured no slower than its parts (measurements kept
// in a ProfileDb). A node joins only when the blocks stay acyclic (every
// block can run as one step) and the block's live values fit the register
// budget.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_table.h"
#include "fusion/profile_db.h"
#include "ir/graph.h"
#include "support/target.h"

namespace tessera::fusion {

struct Block {
  std::vector<int> nodes;  // indices into the graph's nodes, ascending
  MappingType type = MappingType::OneToOne;
  int seed = -1;           // the seed node; -1 for a node no seed reached
};

// One profile cell the planner decided.
struct ProfileDecision {
  std::vector<int> candidate;  // the block with the new node
  int node = -1;               // the node considered
  ProfileEntry entry;
  bool cached = false;         // taken from the database, not measured now
};

struct Partition {
  std::vector<Block> blocks;        // in an order that runs every block after its inputs
  std::vector<int> block_of;        // per node: its block
  std::vector<ProfileDecision> profiled;
  int unmeasured = 0;               // profile cells decided "break" for lack of a measurement
  std::vector<int> concats_in_place;  // Concat nodes alone in their block, done in place (concat_in_place.h)
};

// Measures a candidate block (node indices) as one kernel against its parts
// (each a list of node indices, run as separate kernels); nullopt when it
// cannot be measured.
using ProfileFn = std::function<std::optional<ProfileEntry>(const std::vector<int>& fused,
                                                            const std::vector<std::vector<int>>& parts)>;

struct PartitionOptions {
  bool fuse = true;           // false: every node is a block of its own
  ProfileFn profile;          // null: profile cells are not fused
  ProfileDb* db = nullptr;    // consulted before measuring, filled after
  std::string target;         // ISA name, part of the database key
  Target machine;             // the kernels' machine (AVX-512 unless set)
  int max_live = 0;           // distinct live values a block's loop body may hold; 0: machine.register_budget()
  // Concats done in place (concat_in_place.h) are never fused: blocks of
  // their own, so each branch writes its slice of the root directly.
  bool concat_in_place = true;
};

// Why `n` cannot share a kernel with other nodes ("" when it can): ops
// without a tensor expression, with subgraphs, random or string outputs,
// value checks of integer inputs, or types that are not static.
std::string unfusable_reason(const Node& n, int64_t opset);

// The node's mapping type as the planner sees it (node_mapping_type).
MappingType partition_type(const Node& n);

// Partitions `g` (types inferred) into fused blocks: DNNFusion's fusion plan.
Partition partition_graph(const Graph& g, const PartitionOptions& opts = {});

// The database key of a candidate block: target, then per node its op,
// attributes and input/output types, with internal edges by position.
std::string profile_key(const Graph& g, const std::vector<int>& nodes, const std::string& target);

// Values produced inside the block and read outside it (or graph outputs), in node order.
std::vector<const Value*> block_outputs(const Graph& g, const Block& b);
// Values read by the block and produced outside it (graph inputs, constants,
// other blocks' outputs), in first-use order.
std::vector<const Value*> block_inputs(const Graph& g, const Block& b);

// Text for --dump-fusion: every block with its ops and mapping types (and
// the op rule that joined a node, if one did), the profile decisions, and
// the totals.
std::string print_fusion(const Graph& g, const Partition& p);

struct FusionStats {
  int ops = 0;                     // nodes before fusion
  int blocks = 0;                  // kernels after (in-place concats run none)
  int fused_blocks = 0;            // blocks of two or more nodes
  double intermediate_before = 0;  // bytes of every node output that is not a graph output
  double intermediate_after = 0;   // bytes of block outputs that are not graph outputs
};
FusionStats fusion_stats(const Graph& g, const Partition& p);

}  // namespace tessera::fusion
