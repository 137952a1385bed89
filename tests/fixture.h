/*
 * tests/fixture.h -- the random-model fixture the C tests share: a seeded
 * generator and a model whose every parameter is drawn from it (large
 * weights, so every nonlinearity is exercised; norm weights near 1).
 * Include after <cmocka.h> (fail_msg) and model/model.h. Header-only, static:
 * each test program gets its own copy of the generator state.
 */
#ifndef HS_TEST_FIXTURE_H
#define HS_TEST_FIXTURE_H

#include <stdint.h>
#include <string.h>

static uint64_t rng_state;

/* Uniform in (-1, 1) (a 64-bit LCG, Knuth's MMIX constants). */
static inline double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng_state >> 11) / 9007199254740992.0) * 2.0 - 1.0;
}

/* A model of cfg with every parameter 0.5 * rnd() from seed, norm weights
 * (names ending in ".w") 1 + that. Fails the test if cfg is refused. */
static inline hs_model *random_model_of(const hs_config *cfg, uint64_t seed)
{
    hs_error err;
    hs_model *m = NULL;
    if (hs_model_create(cfg, &m, &err) != HS_OK) fail_msg("create: %s", err.msg);
    rng_state = seed;
    for (size_t i = 0; i < m->n_params; i++) m->param_mem[i] = (float)(0.5 * rnd());
    for (int t = 0; t < m->n_tensors; t++) {
        const hs_tensor_info *ti = &m->tensors[t];
        size_t n = strlen(ti->name);
        if (n > 2 && strcmp(ti->name + n - 2, ".w") == 0)
            for (size_t i = 0; i < ti->numel; i++) m->param_mem[ti->offset + i] += 1.0f;
    }
    return m;
}

#endif
