/*
 * tokenize/tokenize_internal.h -- what tokenize/'s files share and nothing
 * above tokenize/ sees (tests may include it): the lookup tables behind an
 * hs_tokenizer, the two hash maps they are made of, and each kind's
 * functions the interface (tokenize.c) dispatches to.
 *
 * Hash maps (open addressing, linear probing, capacity a power of two at
 * least twice the entries, so a lookup is O(1) expected and building one is
 * O(V)):
 *   hs_idmap    a byte string -> the id whose key it is; keys are not copied:
 *               id i's key is (keys[i], lens[i]), arrays the owner keeps;
 *   hs_pairmap  a pair of ids (a, b) -> a rank and the id they merge into.
 */
#ifndef HS_TOKENIZE_INTERNAL_H
#define HS_TOKENIZE_INTERNAL_H

#include <stdint.h>

#include "tokenize/tokenize.h"

typedef struct {
    uint32_t *hash;          /* (cap) the key's hash, low 32 bits */
    int32_t *id;             /* (cap) the id, -1 for an empty slot */
    size_t cap;              /* a power of two; 0 before init */
    const char *const *keys; /* (ids) each id's key bytes, owned by the caller */
    const size_t *lens;      /* (ids) each key's length in bytes */
} hs_idmap;

/* Sizes m for up to n keys looked up in keys / lens (kept, not copied).
 * 0, or -1 when memory ran out. */
int hs_idmap_init(hs_idmap *m, size_t n, const char *const *keys, const size_t *lens);
/* Adds id (its key is keys[id], lens[id]). Returns -1 when added, else the id
 * already holding an equal key (nothing added). */
int hs_idmap_put(hs_idmap *m, int id);
/* The id whose key is the len bytes at key, or -1. */
int hs_idmap_get(const hs_idmap *m, const void *key, size_t len);
void hs_idmap_free(hs_idmap *m);

typedef struct {
    uint64_t *key;   /* (cap) a << 32 | b; HS_PAIR_EMPTY for an empty slot */
    int32_t *rank;   /* (cap) */
    int32_t *merged; /* (cap) */
    size_t cap, n;   /* capacity (a power of two), pairs held */
    int shift;       /* 64 - log2(cap): the hash's top bits index the table */
} hs_pairmap;
#define HS_PAIR_EMPTY UINT64_MAX

/* Sizes m for up to n pairs. 0, or -1 when memory ran out. */
int hs_pairmap_init(hs_pairmap *m, size_t n);
/* Sets (a, b) -> (rank, merged), replacing an earlier value of the pair (a
 * later line of a merges file wins, as a Python dict or HF's HashMap has it).
 * a, b >= 0. */
void hs_pairmap_put(hs_pairmap *m, int a, int b, int rank, int merged);
/* The rank of (a, b) and the id it merges into (*merged), or -1. */
int hs_pairmap_get(const hs_pairmap *m, int a, int b, int *merged);
void hs_pairmap_free(hs_pairmap *m);

typedef struct hs_bpe hs_bpe;

/* The tables behind an hs_tokenizer (its `tables` field). */
struct hs_tok_tables {
    hs_idmap by_text; /* hs_tok_id: a word / a token's bytes -> id */
    size_t *lens;     /* (V) byte length of each key of by_text */
    int bos_id;       /* the kind's BOS token, -1 for none */
    int bos_on;       /* 1: hs_tok_encode prepends bos_id (hs_tok_set_bos) */
    hs_bpe *bpe;      /* the BPE's tables; NULL for a word vocabulary */
};

/* Allocates t->tables (t->n set) with an empty by_text over keys / lens:
 * lens becomes owned by the tables, the keys stay the caller's; fill it with
 * hs_idmap_put. BOS none, on. Returns -1 when memory ran out (lens freed,
 * t->tables NULL). */
int hs_tok_tables_create(hs_tokenizer *t, const char *const *keys, size_t *lens);

/* The word vocabulary's encoder (words.c; the contract is hs_tok_encode's). */
hs_status hs_words_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                          hs_error *err);

/* The byte-level BPE (bpe.c): each of the interface's calls for t->kind ==
 * HS_TOKENIZER_BPE, and freeing its tables. */
hs_status hs_bpe_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                        hs_error *err);
hs_status hs_bpe_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err);
int hs_bpe_display(const hs_tokenizer *t, int id, hs_buf *b);
void hs_bpe_free(hs_bpe *bpe);

/* The BPE's tables as its loaders (bpe_load.c) hand them over: a vocabulary
 * in the byte-level alphabet (tokenizer.json's model.vocab or vocab.json),
 * the merges in rank order, and which ids are added (special) tokens whose
 * text is their content as is. Every array is the caller's. */
typedef struct {
    size_t V;                   /* ids 0..V-1 */
    const char *const *token;   /* (V) each id's string as the file holds it */
    const unsigned char *added; /* (V) 1: an added token (text = token as is) */
    size_t n_merges;
    const int (*merges)[2];     /* (n_merges) the two ids each merge joins, rank order */
    const char *what;           /* the vocabulary's file, for messages */
    const char *merges_what;    /* the merges' file, for messages */
    size_t merge_line0;         /* merges.txt's line (from 1) of merge 0; 0: a JSON list */
} hs_bpe_spec;

/* Builds a BPE tokenizer from spec: every non-added token decoded through the
 * byte-level alphabet (GPT-2's bytes_to_unicode), the 256 single-byte tokens
 * present, token texts unique, each merge's result in the vocabulary, the
 * pre-tokenizer compiled, BOS = "<|endoftext|>" when the vocabulary has it.
 * HS_ERR_FORMAT naming spec->what and the token or merge; HS_ERR_NOMEM. */
hs_status hs_bpe_build(const hs_bpe_spec *spec, hs_tokenizer **out, hs_error *err);

/* GPT-2's pre-tokenizer alone (bpe.c; the pattern hs_tok_encode splits a
 * text with): calls fn on each piece of s (n bytes of valid UTF-8, unchecked)
 * in order; pieces cover s exactly. fn returns 0, or non-zero for out of
 * memory (the split stops: HS_ERR_NOMEM). HS_ERR_CONFIG when PCRE2 lacks
 * Unicode support; HS_ERR_INPUT when the matcher stops (its message). The
 * BPE trainer (bpe_train.c) counts its pre-tokens with it. */
typedef int (*hs_bpe_piece_fn)(const unsigned char *piece, size_t n, void *ctx);
hs_status hs_bpe_split(const unsigned char *s, size_t n, hs_bpe_piece_fn fn, void *ctx,
                       hs_error *err);

/* GPT-2's bytes_to_unicode (bpe.c): cp_of[b] is the code point that stands
 * for byte b in a byte-level vocabulary (33 -> '!', 32 -> U+0120 'Ġ'). */
void hs_bpe_alphabet(uint32_t cp_of[256]);

/* The number of bytes at s (n >= 1 available) that are one U+FFFD of a
 * lossy decoding (the maximal subpart of an ill-formed sequence, Unicode 15
 * section 3.9, as Python's errors="replace" and Rust's from_utf8_lossy
 * count), when s does not start a valid sequence. */
size_t hs_utf8_bad_len(const unsigned char *s, size_t n);

#endif
