// A task: what one kernel computes. A fusion block of graph nodes (a single
// node is a one-node block) becomes one tensor-expression program for the
// concrete types of the values it reads, keyed by a hash of that program, so
// that blocks computing the same thing (the repeated layers of a network)
// share one schedule and one compiled kernel, and a schedule found for a task
// (an artifact, the tuner's records) is found again by its key.
//
// Each node's expression is built on the expressions of the nodes before it
// in the block: reads of a value the block computes become reads of its
// producing stage, so elementwise, reorganize and shuffle ops turn into index
// formulas inlined where they are read. The program's inputs are the values
// the block reads from outside; its outputs the values it computes that are
// read outside (or are graph outputs).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "te/tensor_expr.h"

namespace tessera::compile {

struct Task {
  std::vector<const Node*> nodes;          // in graph order
  std::vector<te::Tensor> params;          // the program's inputs (placeholders), in first-read order
  std::vector<const Value*> param_values;  // per param: the value outside the block it reads
  std::vector<bool> constant;              // per param: a graph constant (weights: may be packed once)
  std::vector<te::Tensor> outs;            // the program's outputs
  std::vector<const Value*> outputs;       // per output: the value it computes (null: an absent output)
  std::vector<TensorType> output_types;
  std::vector<const Value*> values_used;   // values read from outside whose values the program bakes in
  uint64_t baked = 0;                      // a hash of those values
  std::string name;                        // the kernel's name (from the first node)
  uint64_t key = 0;                        // task_key(): equal for blocks computing the same program

  // "Conv 'c1' + Relu 'r1' (+2 more)": the block named in messages.
  std::string describe() const;
  std::string name_base() const;  // the first node's name, usable as a kernel name
};

// What a task knows of a value it reads from outside the block: its type,
// and on request its value (null when it cannot be known before running).
struct TaskInputs {
  std::function<TensorType(const Value*)> type;
  std::function<const Tensor*(const Value*)> value;
  // Which inputs are constants (weights: their packing may be hoisted into a
  // prepack kernel); null: the graph's constants.
  std::function<bool(const Value*)> constant;
};

// Builds the task computing `outputs` from `nodes` (in graph order; no
// outputs: every output of the last node, absent ones too, by position — a
// single node's kernel computes them all). Throws a
// tessera::Error naming the node when an op has no expression, a type is not
// static, or the expressions disagree with inference.
Task build_task(int64_t opset, const std::vector<const Node*>& nodes, const TaskInputs& inputs,
                const std::vector<const Value*>& outputs);

// The one-node task of `n`, a node of a graph with inferred types: inputs
// read at their graph types, graph constants' values known; constant[i]
// marks node input i as weights (none when empty). What the per-op tests and
// the schedule-rule tester compile.
Task node_task(const Node& n, int64_t opset, const std::vector<bool>& constant = {});

// The key of a task: a hash of everything its program is made of — the
// nodes' op types, domains and attributes, their wiring inside the block,
// the types of the values read (and which are constants), the values baked
// in, which values are outputs, the opset — and not of node or value names.
uint64_t task_key(int64_t opset, const Task& task);

// When an output shape depends on values computed from the inputs, the
// values are asked for in widening rounds, so that no large tensor is
// computed for nothing: round 0, the small integer tensors among `open`
// (a Reshape's shape, Slice bounds); 1, small tensors of any type (Resize
// scales); 2, all. Returns the inputs of the round.
constexpr int kValueRounds = 3;
std::vector<int> value_round(const std::vector<TensorType>& types, const std::vector<int>& open, int round);

// "Conv 'c1' + Relu 'r1' (+2 more)".
std::string describe_block(const std::vector<const Node*>& nodes);

// The key as 16 hex digits (artifacts and records).
std::string key_text(uint64_t key);

}  // namespace tessera::compile
