// A fused block as one kernel: its task, scheduled and lowered.
#include "compile/block_kernel.h"

#include "compile/task.h"
#include "support/error.h"

namespace tessera::compile {

BlockKernel compile_block(int64_t opset, const std::vector<const Node*>& nodes,
                          const std::function<const Tensor*(const Value*)>& input,
                          const std::vector<const Value*>& outputs, const std::optional<schedule::Schedule>& sched,
                          const BlockKernelOptions& options) {
  TaskInputs in;
  in.type = [&](const Value* v) -> TensorType {
    const Tensor* t = input(v);
    TESSERA_CHECK(t, describe_block(nodes), ": no tensor for block input '", v->name, "'");
    return TensorType{t->dtype(), t->dims(), true};
  };
  in.value = input;
  Task task = build_task(opset, nodes, in, outputs);
  BlockKernel bk;
  bk.params = task.param_values;
  bk.outputs = task.outputs;
  bk.output_types = task.output_types;
  bk.values_used = task.values_used;
  bk.expr_text = te::to_string(task.outs);
  try {
    LoweredProgram lp = lower_program(task.name, task.params, task.constant, task.outs, sched, options.target);
    bk.kernel = std::move(lp.kernel);
    bk.schedule = std::move(lp.schedule);
    for (int p : lp.prepack_params) bk.prepack_inputs.push_back(bk.params[static_cast<size_t>(p)]);
    bk.prepack = std::move(lp.prepack);
    bk.scratch = std::move(lp.scratch);
    bk.in_place = std::move(lp.in_place);
    bk.internal_bytes = lp.internal_bytes;
  } catch (const std::exception& e) {  // a refusal or a fault: either way named
    TESSERA_FAIL(task.describe(), ": lowering failed: ", e.what());
  }
  return bk;
}

}  // namespace tessera::compile
