/* The C interface of libtessera_attention.so, the attention cost model's
 * libtorch half (network, RankNet training, fine-tuning, weights in and out,
 * scores). It is a module loaded with dlopen by cost/attention_model.cpp on
 * first use, so that no other tessera process loads libtorch. Everything
 * crosses as plain arrays; Tessera's feature extraction stays on the caller's
 * side, and the module links nothing of Tessera's.
 *
 * Calls returning int give TESSERA_ATTENTION_OK, or another code with a
 * message written (NUL-terminated, cut to error_size) into `error`. No C++
 * exception crosses this interface. A change to any declaration here raises
 * TESSERA_ATTENTION_ABI_VERSION: the loader refuses a module of another. */
#ifndef TESSERA_ATTENTION_ABI_H
#define TESSERA_ATTENTION_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSERA_ATTENTION_ABI_VERSION 1

/* The module is built with hidden visibility: these functions are its exports. */
#define TESSERA_ATTENTION_API __attribute__((visibility("default")))

enum {
  TESSERA_ATTENTION_OK = 0,
  TESSERA_ATTENTION_FAILED = 1,      /* the message says why */
  TESSERA_ATTENTION_NOT_A_MODEL = 2, /* load: the bytes are no model of this module */
  TESSERA_ATTENTION_OTHER_LAYOUT = 3 /* load: a model of another feature layout */
};

/* Programs, each a set of store rows and its target's hardware vector. The
 * caller has already compressed the values (slog); a program has at least one
 * row. For training, `groups` and `labels` are set: programs of one task on one
 * target share a group id, and a program's label is higher the faster it is
 * (only the order within a group is learned). */
typedef struct tessera_attention_programs {
  int64_t count;             /* programs */
  int64_t features;          /* columns of a store row */
  int64_t hardware_width;    /* columns of a hardware vector */
  const int64_t* row_counts; /* [count] rows of each program */
  const float* rows;         /* [sum of row_counts][features], program after program */
  const float* hardware;     /* [count][hardware_width] */
  const int64_t* groups;     /* [count] (training only) */
  const float* labels;       /* [count] (training only) */
} tessera_attention_programs;

typedef struct tessera_attention_options {
  int32_t dim;         /* embedding width */
  int32_t heads;       /* attention heads (dim a multiple of them) */
  int32_t epochs;      /* passes over the groups */
  int32_t group_batch; /* programs drawn from a group per step (all when fewer) */
  int32_t batch;       /* programs per step (whole groups of group_batch) */
  int32_t threads;     /* torch's intra-op threads during the call (given back after) */
  double lr;           /* Adam's step size */
  double anchor;       /* fine-tuning: weight of the squared distance from the starting weights (L2-SP) */
  uint64_t seed;
  /* Progress after each pass (may be NULL): epoch counts from 1. */
  void (*on_epoch)(void* context, int32_t epoch, int32_t epochs, double loss);
  void* on_epoch_context;
} tessera_attention_options;

/* A model: its network (none until trained or loaded) and the weights
 * tessera_attention_fine_tune starts from. */
typedef struct tessera_attention_model tessera_attention_model;

/* Receives the bytes of a saved model (may be called more than once, in order). */
typedef void (*tessera_attention_writer)(void* context, const char* bytes, size_t size);

TESSERA_ATTENTION_API int32_t tessera_attention_abi_version(void);
TESSERA_ATTENTION_API tessera_attention_model* tessera_attention_create(void);
TESSERA_ATTENTION_API void tessera_attention_destroy(tessera_attention_model* model);
TESSERA_ATTENTION_API int32_t tessera_attention_trained(const tessera_attention_model* model);

/* Trains fresh weights on the programs (the input scaling fitted to them). */
TESSERA_ATTENTION_API int32_t tessera_attention_train(tessera_attention_model* model,
                                                      const tessera_attention_programs* programs,
                                                      const tessera_attention_options* options, char* error,
                                                      size_t error_size);
/* Fine-tunes from the weights the last train or load left (options->anchor
 * pulls towards them), so repeated fine-tuning does not compound. */
TESSERA_ATTENTION_API int32_t tessera_attention_fine_tune(tessera_attention_model* model,
                                                          const tessera_attention_programs* programs,
                                                          const tessera_attention_options* options, char* error,
                                                          size_t error_size);
/* A score per program (higher = faster) into scores[count]. */
TESSERA_ATTENTION_API int32_t tessera_attention_predict(const tessera_attention_model* model,
                                                        const tessera_attention_programs* programs, int32_t threads,
                                                        float* scores, char* error, size_t error_size);
/* The trained weights with `layout` (the caller's feature layout) recorded. */
TESSERA_ATTENTION_API int32_t tessera_attention_save(const tessera_attention_model* model, const char* layout,
                                                     tessera_attention_writer write, void* context, char* error,
                                                     size_t error_size);
/* Weights saved with the same `layout`, features and hardware width. */
TESSERA_ATTENTION_API int32_t tessera_attention_load(tessera_attention_model* model, const char* bytes, size_t size,
                                                     const char* layout, int64_t features, int64_t hardware_width,
                                                     char* error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_ATTENTION_ABI_H */
