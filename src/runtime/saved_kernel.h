// A task's compiled kernel as an artifact keeps it: the machine code of its
// kernel and weight-packing kernel (relocatable object files, as the JIT made
// them) and what the plan binds it by (its parameters, packed constants,
// scratch buffers, in-place inputs), so that loading links the code and
// lowers and optimizes nothing.
//
// The description is a few lines of text ("param f32 1x64x56x56 x0"); the
// objects are bytes. Both come from a file: parse_saved_kernel and
// check_saved_kernel report anything malformed as a tessera::Error, and link
// only ever sees a checked object. Linked code runs as is: an artifact is as
// trusted as a shared library.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/task_kernel.h"

namespace tessera::runtime {

// What a task's error says when its saved kernel did not link (the loader
// then fails, naming the artifact, instead of compiling afresh).
inline constexpr const char* kLinkFailed = "linking its saved machine code failed";

struct SavedKernel {
  std::string name, symbol, object;                          // the kernel
  std::string prepack_name, prepack_symbol, prepack_object;  // the packing kernel (empty: none saved)
  std::vector<loop::Buffer> params;          // the kernel's parameters, in calling order
  std::vector<loop::Buffer> prepack_kernel_params;  // the packing kernel's, in calling order
  std::vector<loop::Buffer> packed, scratch;
  std::vector<int> prepack_params;
  std::vector<bool> in_place;
  std::vector<bool> reads;  // per param: the kernel reads it (else only packing does); empty: all
  int64_t internal_bytes = 0;
  std::string schedule;  // the schedule the code was lowered with (schedule::to_text)
};

// The description of `k` (its objects are JitKernel::object()).
std::string saved_kernel_text(const TaskKernel& k);
// Reads a description; `what` (the artifact and task) leads every error.
SavedKernel parse_saved_kernel(const std::string& text, const std::string& what);
// Checks the objects' structure and entry symbols (codegen/llvm/object_check.h);
// throws a tessera::Error naming `what` and the kernel when one is malformed.
void check_saved_kernel(const SavedKernel& k, const std::string& what);

// Links the saved kernel (its packing kernel too when with_prepack and one
// is saved) for `isa`: a TaskKernel as build_kernels makes, without lowering
// or optimizing anything.
std::shared_ptr<TaskKernel> link_saved_kernel(const SavedKernel& k, codegen::Isa isa, bool with_prepack);

}  // namespace tessera::runtime
