/*
 * tests/fuzz/fuzz_hf_config.c -- libFuzzer target for a Hugging Face
 * config.json of any family headscope reads (hs_checkpoint_hf_config_parse,
 * model/checkpoint_hf.c and checkpoint_family.c), then
 * hs_config_validate, then, for a valid config of modest size,
 * hs_model_create.
 *
 * Input: the config.json text (a NUL byte inside ends it). Invariants (abort
 * on violation):
 *  - failure: HS_ERR_CONFIG / HS_ERR_NOMEM with a non-empty one-line message
 *    naming the file;
 *  - success: d_head * n_heads = d_model (unless a Llama-style head_dim says
 *    otherwise: RMSNorm), d_mlp > 0, n_ctx > 0, the scale positive, the
 *    key/value heads dividing the heads; a config that validates and is small builds a model whose
 *    tensors sum to n_params.
 * Seed corpus: tests/fuzz/corpus_hf_config/.
 *   CC=clang BUILD=build-fuzz bash scripts/build.sh -DHS_FUZZ=ON -DHS_SANITIZE=ON
 *   build-fuzz/fuzz_hf_config -max_total_time=60 tests/fuzz/corpus_hf_config
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    hs_config c;
    hs_error err = {0};
    hs_status st = hs_checkpoint_hf_config_parse("fuzz/config.json", text, NULL, &c, &err);
    if (st != HS_OK) {
        check(st == HS_ERR_CONFIG || st == HS_ERR_NOMEM);
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        check(st == HS_ERR_NOMEM || strstr(err.msg, "fuzz/config.json") != NULL);
        free(text);
        return 0;
    }
    check((c.d_head * c.n_heads == c.d_model || c.norm == HS_NORM_RMSNORM) && c.d_head > 0 && c.d_mlp > 0 &&
          c.n_ctx > 0 && c.n_heads % hs_kv_heads(&c) == 0);
    check(hs_attn_scale_at(&c, c.n_layers - 1) > 0.0f);
    if (hs_config_validate(&c, &err) == HS_OK) {
        const double approx = (double)c.d_vocab * c.d_model * 2 + (double)c.n_ctx * c.d_model +
                              (double)c.n_layers * c.d_model *
                                  (4.0 * c.n_heads * c.d_head + 3.0 * c.d_mlp);
        hs_model *m = NULL;
        if (approx < 1e6 && hs_model_create(&c, &m, &err) == HS_OK) {
            size_t total = 0;
            for (int i = 0; i < m->n_tensors; i++) total += m->tensors[i].numel;
            check(total == m->n_params);
            hs_model_destroy(m);
        }
    }
    free(text);
    return 0;
}
