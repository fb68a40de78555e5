// Compiles one node and compares the evaluator and the JIT with the reference.
#include <cstring>
#include <limits>
#include "ops/compiled_test_util.h"

#include <cmath>
#include <functional>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "loop/evaluate.h"
#include "loop/printer.h"

namespace tessera::testing {

namespace {

std::string describe_case(const OpCase& c) {
  std::string s = c.op + " (opset " + std::to_string(c.opset) + ") inputs:";
  for (const Tensor& t : c.inputs)
    s += t.defined() ? " " + std::string(dtype_name(t.dtype())) + "[" + dims_to_string(t.dims()) + "]" : " -";
  for (const auto& [k, a] : c.attrs) s += " " + k;
  return s;
}

// Compares outputs; returns false (after adding failures) on a mismatch.
bool compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, Tolerance tol, const std::string& what) {
  bool ok = true;
  // The reference returns every output; the node may use fewer.
  for (size_t o = 0; o < got.size() && o < want.size(); ++o) {
    if (got[o].dtype() != want[o].dtype() || got[o].dims() != want[o].dims()) {
      ADD_FAILURE() << what << ": output " << o << " type differs";
      return false;
    }
    int bad = 0;
    for (int64_t i = 0; i < want[o].numel() && bad < 4; ++i) {
      double g = got[o].get_double(i), w = want[o].get_double(i);
      bool same;
      if (is_float(want[o].dtype())) {
        same = (std::isnan(g) && std::isnan(w)) || (std::isinf(w) && g == w) ||
               std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      } else {
        same = got[o].get_int(i) == want[o].get_int(i);
      }
      if (!same) {
        ++bad;
        ok = false;
        ADD_FAILURE() << what << ": output " << o << " element " << i << ": got " << g << ", reference " << w;
      }
    }
  }
  return ok;
}

}  // namespace

void expect_compiled_matches(const OpCase& c, Tolerance tol) {
  std::string what = describe_case(c);
  auto g = build_op_graph(c);
  const Node& n = *g->nodes().front();
  std::vector<bool> constant;  // inputs known at compile time: graph constants
  for (Value* v : n.inputs) constant.push_back(v && v->constant);
  std::vector<TensorType> out_types;
  for (Value* v : n.outputs) out_types.push_back(v->type);
  std::vector<const Tensor*> ref_in;
  for (const Tensor& t : c.inputs) ref_in.push_back(t.defined() ? &t : nullptr);
  std::vector<Tensor> want = run_reference(n, c.opset, ref_in);

  // Inputs known at compile time are constants (their packing may be hoisted into a prepack kernel).
  auto compile_for = [&](Isa isa, compile::NodeKernel& nk) {
    compile::NodeKernelOptions o;
    o.target = Target::for_isa(isa);
    o.constant_inputs = constant;
    try {
      nk = compile::compile_node(n, c.opset, std::nullopt, o);
      return true;
    } catch (const Error& e) {
      ADD_FAILURE() << what << ": does not compile: " << e.what();
      return false;
    }
  };
  // Runs prepack (if any) and the kernel with `run`, returns the outputs.
  auto execute = [&](const compile::NodeKernel& nk, const std::function<void(const loop::Kernel&, std::vector<Tensor>&)>& run) {
    std::vector<Tensor> args;
    for (int p : nk.param_inputs) args.push_back(c.inputs[static_cast<size_t>(p)].clone());
    if (nk.prepack) {
      std::vector<Tensor> pargs;
      for (int p : nk.prepack_inputs) pargs.push_back(c.inputs[static_cast<size_t>(p)].clone());
      for (const auto& b : nk.prepack->outputs) pargs.emplace_back(b.dtype(), b.dims());
      run(*nk.prepack, pargs);
      for (size_t i = nk.prepack_inputs.size(); i < pargs.size(); ++i) args.push_back(pargs[i]);
    }
    size_t n_in = args.size();
    for (const auto& t : out_types) args.emplace_back(t.dtype, t.dims);
    // Scratch (whole intermediates the runtime places in its arena) starts
    // as garbage: a kernel must not rely on its contents.
    for (const auto& b : nk.scratch) args.push_back(garbage_tensor(b.dtype(), b.dims()));
    run(nk.kernel, args);
    return std::vector<Tensor>(args.begin() + static_cast<long>(n_in),
                               args.begin() + static_cast<long>(n_in + out_types.size()));
  };
  compile::NodeKernel nk;
  if (!compile_for(Isa::AVX512, nk)) return;
  auto evaluate = [](const loop::Kernel& k, std::vector<Tensor>& a) { loop::run_kernel(k, a); };
  if (!compare(execute(nk, evaluate), want, tol, what + " [evaluator]")) {
    ADD_FAILURE() << nk.expr_text << "\n" << loop::to_string(nk.kernel);
    return;
  }
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (!codegen::host_supports(isa)) continue;
    compile::NodeKernel ik;
    if (!compile_for(isa, ik)) return;
    codegen::JitOptions opts;
    opts.isa = isa;
    auto jit = [&](const loop::Kernel& k, std::vector<Tensor>& a) { codegen::jit_compile(k, opts)->run(a); };
    if (!compare(execute(ik, jit), want, tol, what + " [" + std::string(codegen::isa_name(isa)) + "]")) {
      ADD_FAILURE() << loop::to_string(ik.kernel);
      return;
    }
  }
}

Tensor garbage_tensor(DType d, const Dims& dims) {
  Tensor t(d, dims);
  if (d == DType::F32) {
    for (float& v : t.span<float>()) v = std::numeric_limits<float>::quiet_NaN();
  } else if (t.nbytes() > 0) {
    std::memset(t.raw(), 0x5a, t.nbytes());
  }
  return t;
}

Tensor random_tensor(DType d, const Dims& dims, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(numel_of(dims)));
  for (double& x : v) {
    x = u(rng);
    if (d == DType::Bool) x = x > (lo + hi) / 2 ? 1 : 0;
    else if (!is_float(d)) x = std::floor(x);
  }
  return Tensor::from<double>(dims, v).cast(d);
}

Dims random_dims(int rank, std::mt19937& rng, int64_t max_dim) {
  std::uniform_int_distribution<int64_t> u(1, max_dim);
  Dims d;
  for (int i = 0; i < rank; ++i) d.push_back(u(rng));
  return d;
}

}  // namespace tessera::testing
