// The model commands' options (see model_options.h).
#include "model_options.h"

#include <filesystem>

#include "frontend/onnx_import.h"
#include "support/error.h"
#include "support/name_table.h"

namespace tessera::tools {

PassOptions Common::pass_options() const {
  PassOptions o;
  for (const auto& [flag, off] : no_pass_flag)
    if (off) o.disable_flag(flag);
  o.dump_after.insert(dump_after.begin(), dump_after.end());
  o.verify_each = verify_each;
  check_pass_names(o);
  return o;
}

LoadOptions Common::load_options() const {
  LoadOptions o;
  o.passes = pass_options();
  for (const auto& s : shapes) {
    auto eq = s.rfind('=');
    TESSERA_CHECK(eq != std::string::npos && eq > 0, "--shape expects NAME=DIMS, got '", s, "'");
    o.input_shapes[s.substr(0, eq)] = parse_dims(s.substr(eq + 1));
  }
  return o;
}

bool Exec::compiled() const {
  check_one_of(backend, {"compiled", "reference"}, "--backend");
  bool dumps = dump_ir || dump_llvm || dump_asm || !kernel.empty();
  TESSERA_CHECK(backend == "compiled" || !dumps, "--dump-ir, --dump-llvm, --dump-asm and --kernel need --backend compiled");
  return backend == "compiled";
}

CompileOptions Exec::compile_options(const Common& c) const {
  CompileOptions o;
  o.isa = isa;
  o.threads = threads;
  o.input_shapes = c.load_options().input_shapes;
  o.dump_ir = dump_ir;
  o.dump_llvm = dump_llvm;
  o.dump_asm = dump_asm;
  o.dump_kernel = kernel;
  o.verbose = verbose;
  o.fusion = !no_fusion;
  o.concat_in_place = !no_concat_in_place;
  o.records = records;
  PassOptions passes = c.pass_options();
  o.disabled_passes.assign(passes.disabled.begin(), passes.disabled.end());
  o.dump_after.assign(passes.dump_after.begin(), passes.dump_after.end());
  o.verify_each = passes.verify_each;
  o.pet = pet && passes.enabled("pet");
  o.pet_budget_seconds = pet_budget;
  o.pet_mutants = pet_mutants;
  o.dump_pet = dump_pet;
  return o;
}

CompiledModel open_compiled(const Common& c, const Exec& e) {
  if (CompiledModel::is_artifact(c.model) || std::filesystem::path(c.model).extension() == ".tsr") {
    TESSERA_CHECK(c.shapes.empty(), "--shape cannot change a compiled artifact's shapes; give it to 'tessera compile'");
    return CompiledModel::load(c.model, e.compile_options(c));
  }
  return CompiledModel::compile(c.model, e.compile_options(c));
}

}  // namespace tessera::tools
