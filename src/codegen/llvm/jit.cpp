// The LLVM JIT: target selection, the O3 pipeline, object emission, linking
// with ORC LLJIT, assembly text and the process-wide kernel cache.
#include "codegen/llvm/jit.h"
#include "codegen/llvm/object_check.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Compression.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <future>
#include <iostream>
#include <mutex>
#include <unordered_map>

#include "codegen/llvm/codegen.h"
#include "loop/printer.h"
#include "support/error.h"
#include "support/hash.h"

namespace tessera::codegen {

using loop::Buffer;

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

template <class T>
T unwrap(llvm::Expected<T> v, std::string_view what) {
  if (!v) TESSERA_FAIL("LLVM JIT: ", what, ": ", llvm::toString(v.takeError()));
  return std::move(*v);
}

// The target machine description for an ISA: the host's own CPU and features
// for Host, a fixed CPU otherwise (so forcing AVX2 on an AVX-512 host gives
// code without zmm registers).
llvm::orc::JITTargetMachineBuilder target_builder(Isa isa) {
  init_llvm();
  llvm::orc::JITTargetMachineBuilder jtmb =
      isa == Isa::Host ? unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host")
                       : llvm::orc::JITTargetMachineBuilder(llvm::Triple(llvm::sys::getProcessTriple()));
  Isa tune = isa;
  // A host CPU LLVM 14 does not know is "generic": keep the host's features
  // but tune for the model of its ISA.
  if (isa == Isa::Host && (jtmb.getCPU().empty() || jtmb.getCPU() == "generic")) tune = host_isa();
  if (tune == Isa::AVX512) jtmb.setCPU("skylake-avx512");
  else if (tune == Isa::AVX2) jtmb.setCPU("haswell");
  else if (tune == Isa::Generic) jtmb.setCPU("x86-64");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  return jtmb;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  os.flush();
  return s;
}

// The optimized module as a relocatable object file, by the target machine
// the JIT's own compiler would use (the same code either way).
std::string emit_object(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel) {
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  TESSERA_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile),
                "LLVM JIT: the target cannot emit an object file for kernel ", kernel);
  pm.run(m);
  return std::string(bytes.data(), bytes.size());
}

std::string symbol_name(const std::string& kernel) {
  std::string s = "tessera_";
  for (char c : kernel) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

}  // namespace

Isa host_isa() {
  static const Isa isa = [] {
    llvm::StringMap<bool> f;
    if (!llvm::sys::getHostCPUFeatures(f)) return Isa::Generic;
    if (f.lookup("avx512f")) return Isa::AVX512;
    if (f.lookup("avx2")) return Isa::AVX2;
    return Isa::Generic;
  }();
  return isa;
}

bool host_supports(Isa isa) {
  switch (isa) {
    case Isa::Host: case Isa::Generic: return true;
    case Isa::AVX2: return host_isa() == Isa::AVX2 || host_isa() == Isa::AVX512;
    case Isa::AVX512: return host_isa() == Isa::AVX512;
  }
  return false;
}

// --- kept texts -----------------------------------------------------------------

// A text kept for later (a kernel's loop IR and LLVM IR, read only by dumps,
// the tuner's assembly features and the cache's comparison), zlib-compressed
// where LLVM has zlib: IR text shrinks about 10x, and ResNet-50's 35 kernels
// otherwise keep ~5 MiB of it resident after load. Equal texts compress to
// equal bytes (same library, same level), so the cache compares them packed.
struct PackedText {
  std::string bytes;  // compressed, or the text itself when `size` is 0 and the text is not empty
  size_t size = 0;    // the text's length when compressed, else 0

  static PackedText of(const std::string& text) {
    PackedText p;
    llvm::SmallVector<char, 0> out;
    if (!text.empty() && llvm::zlib::isAvailable()) {
      if (llvm::Error e = llvm::zlib::compress(text, out, llvm::zlib::BestSpeedCompression)) {
        llvm::consumeError(std::move(e));
      } else {
        p.bytes.assign(out.data(), out.size());
        p.size = text.size();
        return p;
      }
    }
    p.bytes = text;
    return p;
  }
  std::string text() const {
    if (size == 0) return bytes;
    llvm::SmallVector<char, 0> out;
    if (llvm::Error e = llvm::zlib::uncompress(bytes, out, size)) {
      llvm::consumeError(std::move(e));
      TESSERA_FAIL("LLVM JIT: a kernel's kept IR text does not decompress");
    }
    return std::string(out.data(), out.size());
  }
  bool empty() const { return bytes.empty(); }
  bool operator==(const PackedText& o) const { return size == o.size && bytes == o.bytes; }
};

// --- JitKernel ----------------------------------------------------------------

struct JitKernel::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  Entry entry = nullptr;
  std::string name, cpu, features, object, symbol;
  PackedText loop_ir, llvm_ir;
  Isa requested = Isa::Host, isa = Isa::Generic;
  std::vector<Buffer> params;
  mutable std::mutex asm_mu;
  mutable std::string asm_text;
};

JitKernel::JitKernel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitKernel::~JitKernel() = default;

JitKernel::Entry JitKernel::entry() const { return impl_->entry; }
const std::string& JitKernel::name() const { return impl_->name; }
Isa JitKernel::isa() const { return impl_->isa; }
const std::string& JitKernel::cpu() const { return impl_->cpu; }
const std::string& JitKernel::features() const { return impl_->features; }
const std::string& JitKernel::object() const { return impl_->object; }
const std::string& JitKernel::symbol() const { return impl_->symbol; }
const std::vector<Buffer>& JitKernel::params() const { return impl_->params; }
std::string JitKernel::loop_ir() const { return impl_->loop_ir.text(); }
std::string JitKernel::llvm_ir() const { return impl_->llvm_ir.text(); }
bool JitKernel::has_ir() const { return !impl_->llvm_ir.empty(); }

void JitKernel::run(const std::vector<void*>& buffers) const {
  TESSERA_CHECK(buffers.size() == impl_->params.size(), "JIT kernel ", impl_->name, " takes ",
                impl_->params.size(), " buffers, got ", buffers.size());
  impl_->entry(const_cast<void**>(buffers.data()));
}

void JitKernel::run(const std::vector<Tensor>& tensors) const {
  const auto& params = impl_->params;
  TESSERA_CHECK(tensors.size() == params.size(), "JIT kernel ", impl_->name, " takes ", params.size(),
                " buffers, got ", tensors.size());
  std::vector<void*> ptrs;
  for (size_t i = 0; i < params.size(); ++i) {
    const Buffer& p = params[i];
    const Tensor& t = tensors[i];
    TESSERA_CHECK(t.dtype() == p.dtype(), "JIT kernel ", impl_->name, ": buffer '", p.name(), "' is ",
                  dtype_name(p.dtype()), ", got a ", dtype_name(t.dtype()), " tensor");
    if (!p.dims().empty())
      TESSERA_CHECK(t.numel() == numel_of(p.dims()), "JIT kernel ", impl_->name, ": buffer '", p.name(), "' has ",
                    numel_of(p.dims()), " elements, got a tensor of ", t.numel());
    ptrs.push_back(const_cast<void*>(t.raw()));
  }
  run(ptrs);
}

std::string JitKernel::assembly() const {
  std::lock_guard<std::mutex> lock(impl_->asm_mu);
  if (!impl_->asm_text.empty()) return impl_->asm_text;
  if (impl_->llvm_ir.empty()) return "; kernel " + impl_->name + " was linked from an artifact's object file: no IR\n";
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  const std::string ir = impl_->llvm_ir.text();
  std::unique_ptr<llvm::Module> m = llvm::parseIR(llvm::MemoryBufferRef(ir, impl_->name), diag, ctx);
  TESSERA_CHECK(m, "LLVM JIT: cannot re-read the IR of kernel ", impl_->name, ": ", diag.getMessage().str());
  std::unique_ptr<llvm::TargetMachine> tm =
      unwrap(target_builder(impl_->requested).createTargetMachine(), "creating the target machine");
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  TESSERA_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile),
                "LLVM JIT: the target cannot emit assembly");
  pm.run(*m);
  impl_->asm_text = std::string(text.str());
  return impl_->asm_text;
}

// --- compilation ----------------------------------------------------------------

namespace {

// Links impl.object into a JIT of its own and finds impl.symbol: the one way
// code gets into the process, for a kernel compiled now or read from an
// artifact. Undefined symbols are bound by runtime_symbol_address.
void link(JitKernel::Impl& impl, llvm::orc::JITTargetMachineBuilder jtmb) {
  impl.cpu = jtmb.getCPU();
  impl.features = jtmb.getFeatures().getString();
  impl.isa = impl.requested == Isa::Host ? host_isa() : impl.requested;
  std::unique_ptr<llvm::MemoryBuffer> buf = llvm::MemoryBuffer::getMemBufferCopy(impl.object, impl.name);
  auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
  if (!obj) TESSERA_FAIL("LLVM JIT: kernel ", impl.name, ": not an object file: ", llvm::toString(obj.takeError()));
  impl.jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "creating the JIT");
  llvm::orc::LLJIT& jit = *impl.jit;
  llvm::orc::SymbolMap runtime;
  for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
    auto flags = sym.getFlags();
    auto name = sym.getName();
    if (!flags || !name) {
      llvm::consumeError(flags.takeError());
      llvm::consumeError(name.takeError());
      TESSERA_FAIL("LLVM JIT: kernel ", impl.name, ": unreadable symbol in its object");
    }
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined) || name->empty()) continue;
    void* address = runtime_symbol_address(name->str());
    TESSERA_CHECK(address, "LLVM JIT: kernel ", impl.name, " calls '", name->str(), "', which this process lacks");
    runtime[jit.mangleAndIntern(*name)] = llvm::JITEvaluatedSymbol::fromPointer(address, llvm::JITSymbolFlags::Exported);
  }
  if (auto e = jit.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime))))
    TESSERA_FAIL("LLVM JIT: defining the runtime symbols: ", llvm::toString(std::move(e)));
  if (auto e = jit.addObjectFile(std::move(buf)))
    TESSERA_FAIL("LLVM JIT: adding kernel ", impl.name, ": ", llvm::toString(std::move(e)));
  llvm::JITEvaluatedSymbol sym = unwrap(jit.lookup(impl.symbol), "linking kernel " + impl.name);
  impl.entry = reinterpret_cast<JitKernel::Entry>(static_cast<uintptr_t>(sym.getAddress()));
}

std::shared_ptr<JitKernel> compile(const loop::Kernel& kernel, const PackedText& loop_ir, Isa requested,
                                   const JitOptions& options) {
  llvm::orc::JITTargetMachineBuilder jtmb = target_builder(requested);
  std::unique_ptr<llvm::TargetMachine> tm = unwrap(jtmb.createTargetMachine(), "creating the target machine");

  auto ctx = std::make_unique<llvm::LLVMContext>();
  CodegenOptions cg;
  cg.function_name = symbol_name(kernel.name);
  cg.cpu = jtmb.getCPU();
  cg.features = jtmb.getFeatures().getString();
  cg.fast_math = options.fast_math;
  cg.contract = options.contract;
  Isa isa = requested == Isa::Host ? host_isa() : requested;
  cg.vector_math_bits = isa == Isa::AVX512 ? 512 : isa == Isa::AVX2 ? 256 : 0;
  std::unique_ptr<llvm::Module> m = emit_kernel_module(kernel, *ctx, cg);
  m->setDataLayout(tm->createDataLayout());
  m->setTargetTriple(tm->getTargetTriple().str());
  std::string broken;
  llvm::raw_string_ostream err(broken);
  if (llvm::verifyModule(*m, &err))
    TESSERA_FAIL("LLVM JIT: invalid LLVM IR for kernel ", kernel.name, ": ", err.str(), "\n", module_text(*m));
  optimize(*m, *tm);
  // Functions start on 64-byte boundaries: their loops then sit at the same
  // offsets within the front end's 64-byte fetch blocks in every process
  // (otherwise a kernel's speed depends on where the JIT happened to put it).
  for (llvm::Function& f : *m)
    if (!f.isDeclaration()) f.setAlignment(llvm::Align(64));

  auto impl = std::make_unique<JitKernel::Impl>();
  impl->name = kernel.name;
  impl->loop_ir = loop_ir;
  impl->llvm_ir = PackedText::of(module_text(*m));
  impl->object = emit_object(*m, *tm, kernel.name);
  impl->symbol = cg.function_name;
  impl->requested = requested;
  impl->params = kernel.params();
  link(*impl, std::move(jtmb));
  return std::make_shared<JitKernel>(std::move(impl));
}

// Kernels by hash of (loop-IR text, ISA, float mode); the full text is
// compared on a hit. A kernel being compiled is a pending future, so two
// threads asking for the same kernel compile it once.
struct CacheEntry {
  PackedText text;  // the kernel's loop IR (compared on a hash hit)
  Isa isa;
  int float_mode;  // float_mode(options)
  std::shared_future<std::shared_ptr<JitKernel>> kernel;
};
struct Cache {
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<CacheEntry>> entries;
};
int float_mode(const JitOptions& o) { return (o.fast_math ? 2 : 0) + (o.contract ? 1 : 0); }

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may outlive static destructors
  return *c;
}

}  // namespace

std::shared_ptr<JitKernel> jit_compile(const loop::Kernel& kernel, const JitOptions& options) {
  Isa isa = options.isa;
  TESSERA_CHECK(host_supports(isa), "LLVM JIT: cannot compile kernel ", kernel.name, " for ", isa_name(isa),
                ": the host supports at most ", isa_name(host_isa()));
  std::string text = loop::to_string(kernel);
  uint64_t key = hash_combine(hash_bytes(text.data(), text.size()),
                              static_cast<uint64_t>(isa) * 4 + static_cast<uint64_t>(float_mode(options)));
  const PackedText packed = PackedText::of(text);  // the cache and the kernel keep the text packed
  text.clear();
  text.shrink_to_fit();
  Cache& c = cache();
  std::shared_future<std::shared_ptr<JitKernel>> pending;
  std::promise<std::shared_ptr<JitKernel>> promise;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (const CacheEntry& e : c.entries[key])
      if (e.isa == isa && e.float_mode == float_mode(options) && e.text == packed) pending = e.kernel;
    if (!pending.valid()) {
      pending = promise.get_future().share();
      c.entries[key].push_back({packed, isa, float_mode(options), pending});
      mine = true;
    }
  }
  if (mine) {
    try {
      promise.set_value(compile(kernel, packed, isa, options));
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard<std::mutex> lock(c.mu);
      auto& v = c.entries[key];
      std::erase_if(v, [&](const CacheEntry& e) { return e.kernel.valid() && e.text == packed && e.isa == isa &&
                                                         e.float_mode == float_mode(options); });
    }
  }
  std::shared_ptr<JitKernel> k = pending.get();  // rethrows a failed compile
  if (options.dump_ir) std::cerr << k->loop_ir();
  if (options.dump_llvm) std::cerr << k->llvm_ir();
  if (options.dump_asm) std::cerr << k->assembly();
  return k;
}

std::shared_ptr<JitKernel> jit_link(const std::string& object, const JitLinkInfo& info) {
  TESSERA_CHECK(host_supports(info.isa), "LLVM JIT: cannot link kernel ", info.name, " compiled for ",
                isa_name(info.isa), ": the host supports at most ", isa_name(host_isa()));
  std::string bad = check_object(object, info.symbol);
  TESSERA_CHECK(bad.empty(), "LLVM JIT: the object of kernel ", info.name, " is malformed: ", bad);
  auto impl = std::make_unique<JitKernel::Impl>();
  impl->name = info.name;
  impl->object = object;
  impl->symbol = info.symbol;
  impl->requested = info.isa;
  impl->params = info.params;
  link(*impl, target_builder(info.isa));
  return std::make_shared<JitKernel>(std::move(impl));
}

TargetDesc target_desc(Isa isa) {
  llvm::orc::JITTargetMachineBuilder jtmb = target_builder(isa);
  return {jtmb.getCPU(), jtmb.getFeatures().getString()};
}

std::vector<std::string> missing_host_features(const std::string& features) {
  llvm::StringMap<bool> host;
  if (!llvm::sys::getHostCPUFeatures(host)) host.clear();
  std::vector<std::string> missing;
  llvm::SmallVector<llvm::StringRef, 64> parts;
  llvm::StringRef(features).split(parts, ',', -1, false);
  for (llvm::StringRef f : parts)
    if (f.startswith("+") && !host.lookup(f.drop_front())) missing.push_back(f.drop_front().str());
  return missing;
}

size_t jit_cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  size_t n = 0;
  for (const auto& [key, v] : c.entries) n += v.size();
  return n;
}

void jit_cache_clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
}

}  // namespace tessera::codegen
