/*
 * tests/fuzz/fuzz_config.c -- libFuzzer target for the checkpoint's metadata
 * config reader (hs_checkpoint_config_parse: the TransformerLens `config`
 * JSON and the `headscope_config` JSON), then hs_config_validate, then, for a
 * valid config of modest size, hs_model_create (the parameter table).
 *
 * Input: the `config` text, optionally followed by a NUL byte and the
 * `headscope_config` text. Invariants (abort on violation):
 *  - failure: HS_ERR_FORMAT / HS_ERR_CONFIG / HS_ERR_NOMEM with a non-empty
 *    one-line message;
 *  - a config that validates and is small builds a model whose tensors have
 *    the config's shapes and sum to n_params.
 * Seed corpus: tests/fuzz/corpus_config/.
 *   CC=clang BUILD=build-fuzz bash scripts/build.sh -DHS_FUZZ=ON -DHS_SANITIZE=ON
 *   build-fuzz/fuzz_config -max_total_time=60 tests/fuzz/corpus_config
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "model/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

static void check_error(hs_status st, const hs_error *err)
{
    check(st == HS_ERR_FORMAT || st == HS_ERR_CONFIG || st == HS_ERR_NOMEM);
    check(err->msg[0] != '\0' && strchr(err->msg, '\n') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    buf[size + 1] = '\0';
    const char *tl = buf;
    const char *hs = NULL;
    size_t first = strlen(buf);
    if (first < size) hs = buf + first + 1; /* a NUL inside: the rest is headscope_config */

    hs_config c;
    hs_error err = {0};
    hs_status st = hs_checkpoint_config_parse("fuzz", tl, hs, &c, &err);
    if (st != HS_OK) {
        check_error(st, &err);
        free(buf);
        return 0;
    }
    st = hs_config_validate(&c, &err);
    if (st != HS_OK) {
        check_error(st, &err);
        free(buf);
        return 0;
    }
    /* Build the parameter table for small configs only (no gigabyte allocations). */
    double approx = (double)c.d_vocab * c.d_model * 2 + (double)c.n_ctx * c.d_model +
                    (double)c.n_layers * c.n_heads * c.d_head * c.d_model * 4 +
                    (double)c.n_layers * c.d_model * c.d_mlp * 2;
    if (approx < 1e6) {
        hs_model *m = NULL;
        st = hs_model_create(&c, &m, &err);
        if (st == HS_OK) {
            size_t total = 0;
            for (int i = 0; i < m->n_tensors; i++) {
                size_t numel = 1;
                for (int d = 0; d < m->tensors[i].ndim; d++) {
                    check(m->tensors[i].shape[d] >= 0);
                    numel *= (size_t)m->tensors[i].shape[d];
                }
                check(numel == m->tensors[i].numel);
                total += numel;
            }
            check(total == m->n_params);
            hs_model_destroy(m);
        } else {
            check(m == NULL);
            check_error(st, &err);
        }
    }
    free(buf);
    return 0;
}
