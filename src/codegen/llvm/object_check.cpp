// Checking a kernel's object file with LLVM's ELF reader, whose accessors
// bound every offset and report malformed input as an Error (the higher-level
// ObjectFile interface aborts on some), and resolving its undefined symbols.
#include "codegen/llvm/object_check.h"

#include <dlfcn.h>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <set>
#include <vector>

#include "codegen/llvm/vector_math.h"
#include "support/thread_pool.h"

namespace tessera::codegen {

namespace {

using ElfFile = llvm::object::ELFFile<llvm::object::ELF64LE>;

// Bounds on what a kernel's object may ask the linker to allocate (a page of
// alignment; zero-initialized data, which kernels do not use at all).
constexpr uint64_t kMaxAlign = 4096;
constexpr uint64_t kMaxZeroBytes = uint64_t{1} << 26;

// Relocations of x86-64 code that LLVM's JIT linker (RuntimeDyldELF) applies.
bool linkable_relocation(uint32_t type) {
  namespace E = llvm::ELF;
  switch (type) {
    case E::R_X86_64_NONE: case E::R_X86_64_64: case E::R_X86_64_PC32: case E::R_X86_64_PLT32:
    case E::R_X86_64_GOTPCREL: case E::R_X86_64_32: case E::R_X86_64_32S: case E::R_X86_64_PC64:
    case E::R_X86_64_GOTOFF64: case E::R_X86_64_GOTPC32: case E::R_X86_64_GOTPC64:
    case E::R_X86_64_GOTPCRELX: case E::R_X86_64_REX_GOTPCRELX:
      return true;
    default:
      return false;
  }
}

// The bytes a relocation of this type writes.
uint64_t relocation_bytes(uint32_t type) {
  namespace E = llvm::ELF;
  switch (type) {
    case E::R_X86_64_NONE: return 0;
    case E::R_X86_64_64: case E::R_X86_64_PC64: case E::R_X86_64_GOTOFF64: case E::R_X86_64_GOTPC64: return 8;
    default: return 4;
  }
}

std::string why(llvm::Error e) { return llvm::toString(std::move(e)); }

std::string check_elf(const ElfFile& f, const std::string& symbol) {
  namespace E = llvm::ELF;
  const auto& h = f.getHeader();
  if (h.e_type != E::ET_REL || h.e_machine != E::EM_X86_64)
    return "not a relocatable x86-64 object (ELF type " + std::to_string(h.e_type) + ", machine " +
           std::to_string(h.e_machine) + ")";
  auto sections = f.sections();
  if (!sections) return "bad section table: " + why(sections.takeError());
  const size_t n = sections->size();
  const auto* symtab = static_cast<const ElfFile::Elf_Shdr*>(nullptr);
  size_t symtab_index = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& s = (*sections)[i];
    // The linker allocates every section at its alignment: no absurd request.
    if (s.sh_addralign > kMaxAlign || (s.sh_addralign & (s.sh_addralign - 1)) != 0)
      return "section " + std::to_string(i) + " asks for alignment " + std::to_string(s.sh_addralign);
    // Kernels have no thread-local data, and the JIT's linker aborts the
    // process on a TLS section (it cannot allocate one).
    if (s.sh_flags & E::SHF_TLS) return "section " + std::to_string(i) + " holds thread-local data";
    if (s.sh_type == E::SHT_NOBITS && s.sh_size > kMaxZeroBytes)
      return "section " + std::to_string(i) + " asks for " + std::to_string(s.sh_size) + " zero bytes";
    if (s.sh_type != E::SHT_NOBITS) {
      auto c = f.getSectionContents(s);
      if (!c) return "bad section " + std::to_string(i) + ": " + why(c.takeError());
    }
    if (s.sh_type == E::SHT_REL) return "REL relocations (section " + std::to_string(i) + "): x86-64 code uses RELA";
    if (s.sh_type == E::SHT_SYMTAB) {
      if (symtab) return "more than one symbol table";
      symtab = &s;
      symtab_index = i;
    }
  }
  if (!symtab) return "no symbol table";
  auto syms = f.symbols(symtab);
  if (!syms) return "bad symbol table: " + why(syms.takeError());
  auto strtab = f.getStringTableForSymtab(*symtab, *sections);
  if (!strtab) return "bad string table: " + why(strtab.takeError());
  bool found = false;
  for (size_t k = 0; k < syms->size(); ++k) {
    const auto& sym = (*syms)[k];
    auto name = sym.getName(*strtab);
    if (!name) return "bad symbol " + std::to_string(k) + ": " + why(name.takeError());
    uint16_t sec = sym.st_shndx;
    bool undefined = sec == E::SHN_UNDEF;
    if (!undefined && sec < E::SHN_LORESERVE && sec >= n)
      return "symbol '" + name->str() + "' in section " + std::to_string(sec) + " of " + std::to_string(n);
    if (sym.getType() == E::STT_TLS) return "thread-local symbol '" + name->str() + "'";
    if (sec == E::SHN_COMMON && (sym.st_size > kMaxZeroBytes || sym.st_value > kMaxAlign))
      return "common symbol '" + name->str() + "' of " + std::to_string(sym.st_size) + " bytes";
    if (undefined && !name->empty() && sym.getBinding() != E::STB_LOCAL && !runtime_symbol_address(name->str()))
      return "undefined symbol '" + name->str() + "' that this process does not have";
    if (*name == symbol && !undefined && sym.getType() == E::STT_FUNC && sec < E::SHN_LORESERVE) found = true;
  }
  if (!found) return "no function '" + symbol + "' defined";
  for (size_t i = 0; i < n; ++i) {
    const auto& s = (*sections)[i];
    if (s.sh_type != E::SHT_RELA) continue;
    if (s.sh_link != symtab_index || s.sh_info >= n)
      return "relocation section " + std::to_string(i) + " refers to section " + std::to_string(s.sh_info) +
             " / symbol table " + std::to_string(s.sh_link);
    const auto& target = (*sections)[s.sh_info];
    auto relas = f.relas(s);
    if (!relas) return "bad relocation section " + std::to_string(i) + ": " + why(relas.takeError());
    for (const auto& r : *relas) {
      uint32_t type = r.getType(false);
      if (!linkable_relocation(type)) return "relocation of type " + std::to_string(type) + " the JIT does not link";
      if (r.getSymbol(false) >= syms->size())
        return "relocation against symbol " + std::to_string(r.getSymbol(false)) + " of " +
               std::to_string(syms->size());
      if (r.r_offset > target.sh_size || target.sh_size - r.r_offset < relocation_bytes(type))
        return "relocation at offset " + std::to_string(r.r_offset) + " outside its section (" +
               std::to_string(target.sh_size) + " bytes)";
    }
  }
  return "";
}

}  // namespace

std::string check_object(std::string_view object, const std::string& symbol) {
  // A copy, so the reader's structures are aligned whatever the input's address.
  std::unique_ptr<llvm::MemoryBuffer> buf =
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), "kernel object");
  llvm::StringRef bytes = buf->getBuffer();
  if (bytes.size() < 16 || bytes.substr(0, 4) != "\x7f" "ELF") return "not an ELF object file";
  if (bytes[4] != llvm::ELF::ELFCLASS64 || bytes[5] != llvm::ELF::ELFDATA2LSB) return "not a 64-bit little-endian ELF object";
  auto f = ElfFile::create(bytes);
  if (!f) return "bad ELF header: " + why(f.takeError());
  return check_elf(*f, symbol);
}

void* runtime_symbol_address(const std::string& name) {
  if (name == "tessera_parallel_for") return reinterpret_cast<void*>(&tessera_parallel_for);
  if (name.rfind("_ZGV", 0) == 0) return vector_math_address(name);
  return dlsym(RTLD_DEFAULT, name.c_str());
}

}  // namespace tessera::codegen
