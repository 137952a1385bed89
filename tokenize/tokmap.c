/*
 * tokenize/tokmap.c -- the two hash maps behind a tokenizer's lookups
 * (tokenize_internal.h): byte strings -> ids (FNV-1a, common.h) and id pairs
 * -> merge ranks (a multiplicative hash). Open addressing with linear
 * probing; never more than half full.
 */
#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

/* The least power of two >= 2n (and >= 16). */
static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    return cap;
}

int hs_idmap_init(hs_idmap *m, size_t n, const char *const *keys, const size_t *lens)
{
    memset(m, 0, sizeof *m);
    m->cap = table_size(n);
    m->slot = malloc(m->cap * sizeof *m->slot);
    if (!m->slot) {
        hs_idmap_free(m);
        return -1;
    }
    memset(m->slot, 0xff, m->cap * sizeof *m->slot); /* HS_IDMAP_EMPTY everywhere */
    m->keys = keys;
    m->lens = lens;
    return 0;
}

/* The slot holding key (len bytes, hash h), or the empty slot it would go
 * to. A slot holds the hash beside the id: one cache line read a probe. */
static size_t idmap_slot(const hs_idmap *m, const void *key, size_t len, uint32_t h)
{
    size_t i = h & (m->cap - 1);
    for (uint64_t s; (s = m->slot[i]) != HS_IDMAP_EMPTY; i = (i + 1) & (m->cap - 1)) {
        const uint32_t id = (uint32_t)s;
        if ((uint32_t)(s >> 32) == h && m->lens[id] == len && memcmp(m->keys[id], key, len) == 0) break;
    }
    return i;
}

int hs_idmap_put(hs_idmap *m, int id)
{
    const size_t len = m->lens[id];
    const uint32_t h = (uint32_t)hs_fnv1a64(m->keys[id], len);
    const size_t i = idmap_slot(m, m->keys[id], len, h);
    if (m->slot[i] != HS_IDMAP_EMPTY) return (int)(uint32_t)m->slot[i];
    m->slot[i] = (uint64_t)h << 32 | (uint32_t)id;
    return -1;
}

int hs_idmap_get(const hs_idmap *m, const void *key, size_t len)
{
    if (m->cap == 0) return -1;
    const uint64_t s = m->slot[idmap_slot(m, key, len, (uint32_t)hs_fnv1a64(key, len))];
    return s == HS_IDMAP_EMPTY ? -1 : (int)(uint32_t)s;
}

void hs_idmap_free(hs_idmap *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}

int hs_pairmap_init(hs_pairmap *m, size_t n)
{
    memset(m, 0, sizeof *m);
    m->cap = table_size(n);
    m->slot = malloc(m->cap * sizeof *m->slot);
    if (!m->slot) return -1;
    for (size_t i = 0; i < m->cap; i++) m->slot[i].key = HS_PAIR_EMPTY;
    m->shift = 64;
    for (size_t c = m->cap; c > 1; c >>= 1) m->shift--;
    return 0;
}

/* Fibonacci hashing (Knuth, TAOCP vol. 3, 6.4): the top bits of k * 2^64/phi. */
static size_t pair_slot(const hs_pairmap *m, uint64_t k)
{
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> m->shift);
    while (m->slot[i].key != HS_PAIR_EMPTY && m->slot[i].key != k) i = (i + 1) & (m->cap - 1);
    return i;
}

void hs_pairmap_put(hs_pairmap *m, int a, int b, int rank, int merged)
{
    const uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    hs_pair_slot *s = &m->slot[pair_slot(m, k)];
    HS_ASSERT(s->key == k || m->n < m->cap / 2);
    if (s->key != k) m->n++;
    *s = (hs_pair_slot){k, rank, merged};
}

int hs_pairmap_get(const hs_pairmap *m, int a, int b, int *merged)
{
    const uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    const hs_pair_slot *s = &m->slot[pair_slot(m, k)];
    if (s->key != k) return -1;
    *merged = s->merged;
    return s->rank;
}

void hs_pairmap_free(hs_pairmap *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}
