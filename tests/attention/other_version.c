/* A stand-in for libtessera_attention.so built for another interface version:
 * the loader must refuse it (test_attention_module.cpp). */
#include <stdint.h>

__attribute__((visibility("default"))) int32_t tessera_attention_abi_version(void) { return 0; }
