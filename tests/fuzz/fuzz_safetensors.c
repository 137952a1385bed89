/*
 * tests/fuzz/fuzz_safetensors.c -- libFuzzer target for the safetensors
 * reader and the checkpoint loader on top of it (config JSON, shapes against
 * the model's tensor table, vocab). Seed corpus: tests/checkpoint/corpus/.
 *
 *   CC=clang BUILD=build-fuzz bash scripts/build.sh -DHS_FUZZ=ON
 *   build-fuzz/fuzz_safetensors -max_total_time=60 tests/checkpoint/corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "model/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hs_error err = {0};
    hs_st_file f;
    if (hs_safetensors_parse(data, size, "fuzz", &f, &err) == HS_OK) {
        for (int i = 0; i < f.n; i++) (void)hs_st_find(&f, f.names[i]);
        hs_st_file_free(&f);
    }
    hs_model *m = NULL;
    hs_meta meta;
    int skipped = 0;
    err.msg[0] = '\0';
    if (hs_checkpoint_parse(data, size, "fuzz", &m, &meta, &skipped, &err) == HS_OK) {
        hs_meta_free(&meta);
        hs_model_destroy(m);
    } else if (m != NULL || meta.vocab != NULL || meta.task != NULL || meta.train != NULL) {
        __builtin_trap(); /* failure must leave nothing behind */
    } else if (err.msg[0] == '\0' || strchr(err.msg, '\n') != NULL || strchr(err.msg, '\r') != NULL) {
        __builtin_trap(); /* and say what is wrong, on one line */
    }
    return 0;
}
