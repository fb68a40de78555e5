// The object files of compiled kernels, as an artifact stores them: checking
// one read from a file before it is linked, and the addresses its undefined
// symbols are bound to. Nothing here links or runs code, so it is safe on
// untrusted bytes (the fuzz target calls it). Linking a checked object still
// runs its machine code: an artifact is as trusted as a shared library.
#pragma once

#include <string>
#include <string_view>

namespace tessera::codegen {

// "" when `object` is a relocatable little-endian x86-64 ELF object whose
// headers, sections, symbols and relocations are in bounds, whose relocation
// types the JIT linker handles, which defines the function `symbol`, and
// whose undefined symbols all resolve (runtime_symbol_address); otherwise a
// sentence saying what is wrong. Reads only; never crashes on any input.
std::string check_object(std::string_view object, const std::string& symbol);

// The address a kernel's undefined symbol is bound to: the runtime's entry
// points (tessera_parallel_for), libmvec's vector math, else the process's
// own symbols (libm, libc); null when none has it.
void* runtime_symbol_address(const std::string& name);

}  // namespace tessera::codegen
