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
    uint64_t *slot;          /* (cap) the key's hash (low 32 bits) << 32 | its id;
                              * HS_IDMAP_EMPTY for an empty slot */
    size_t cap;              /* a power of two; 0 before init */
    const char *const *keys; /* (ids) each id's key bytes, owned by the caller */
    const size_t *lens;      /* (ids) each key's length in bytes */
} hs_idmap;

#define HS_IDMAP_EMPTY UINT64_MAX

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
    uint64_t key;    /* a << 32 | b; HS_PAIR_EMPTY for an empty slot */
    int32_t rank, merged;
} hs_pair_slot;

typedef struct {
    hs_pair_slot *slot; /* (cap) a pair's key beside its values: one cache line a probe */
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
typedef struct hs_pipe hs_pipe;

/* The tables behind an hs_tokenizer (its `tables` field). */
struct hs_tok_tables {
    hs_idmap by_text; /* hs_tok_id: a word / a token's bytes -> id */
    size_t *lens;     /* (V) byte length of each key of by_text */
    int bos_id;       /* the kind's BOS token, -1 for none */
    int bos_on;       /* 1: hs_tok_encode prepends bos_id (hs_tok_set_bos) */
    int special_on;   /* 1: added tokens in text are matched (hs_tok_set_special) */
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
    const unsigned char *in_model; /* (V) 1: the id is in the model's vocabulary (model.vocab,
                                      vocab.json); 0: an added token only. NULL: all are */
    hs_pipe *pipe;              /* the pipeline (hfjson.c); hs_bpe_build takes it, also on failure */
    const char *what;           /* the vocabulary's file, for messages */
    const char *merges_what;    /* the merges' file, for messages */
    size_t merge_line0;         /* merges.txt's line (from 1) of merge 0; 0: a JSON list */
    const hs_idmap *by_token;   /* token -> its id (each string at one id) */
} hs_bpe_spec;

/* Builds a BPE tokenizer from spec. With a byte-level pipeline (a ByteLevel
 * pre-tokenizer; GPT-2's): every non-added token decoded through the
 * byte-level alphabet (GPT-2's bytes_to_unicode), the 256 single-byte tokens
 * present, token texts unique. Otherwise (SentencePiece-style) a token's
 * text is what the decoder makes of it alone (hs_pipe_token_text). Each
 * merge's result in the vocabulary; BOS from the pipeline (hs_pipe's bos).
 * HS_ERR_FORMAT naming spec->what and the token or merge; HS_ERR_NOMEM. */
hs_status hs_bpe_build(const hs_bpe_spec *spec, hs_tokenizer **out, hs_error *err);

/* ------------------------------------------------------------------------ */
/* A tokenizer.json pipeline (hfjson.c parses it, pretok.c runs it)          */

enum { HS_NORM_PREPEND, HS_NORM_REPLACE, HS_NORM_NFC, HS_NORM_STRIP };
enum { HS_PRE_SPLIT, HS_PRE_BYTELEVEL, HS_PRE_METASPACE };
enum { HS_DEC_BYTELEVEL, HS_DEC_REPLACE, HS_DEC_BYTEFALLBACK, HS_DEC_FUSE, HS_DEC_STRIP,
       HS_DEC_METASPACE };
/* tokenizers' SplitDelimiterBehavior */
enum { HS_SPLIT_REMOVED, HS_SPLIT_ISOLATED, HS_SPLIT_PREVIOUS, HS_SPLIT_NEXT,
       HS_SPLIT_CONTIGUOUS };
/* Metaspace's prepend_scheme */
enum { HS_PREPEND_NEVER, HS_PREPEND_ALWAYS, HS_PREPEND_FIRST };

typedef struct {
    int kind;        /* HS_NORM_* */
    char *text;      /* Prepend: the string */
    void *re;        /* Replace: the pattern (pcre2_code *, a literal compiled as one) */
    char *content;   /* Replace: the replacement */
    int left, right; /* Strip */
} hs_norm_step;

typedef struct {
    int kind;        /* HS_PRE_*; Digits is a Split on \p{N} */
    void *re;        /* Split: the pattern; ByteLevel: GPT-2's when use_regex, else NULL */
    int behavior;    /* Split: HS_SPLIT_* */
    int invert;      /* Split */
    int prefix;      /* ByteLevel: add_prefix_space; Metaspace: HS_PREPEND_* */
    char repl[8];    /* Metaspace: the replacement character, UTF-8 */
    int split;       /* Metaspace: split on the replacement */
} hs_pre_step;

typedef struct {
    int kind;        /* HS_DEC_* */
    char *pattern;   /* Replace: the literal; Strip: the character; Metaspace: replacement */
    char *content;   /* Replace */
    int start, stop; /* Strip: at most this many at the start / the end of each token */
    int prefix;      /* Metaspace: HS_PREPEND_* */
} hs_dec_step;

typedef struct {
    int id;
    char *content;
    size_t len;
    unsigned char lstrip, rstrip, single_word, normalized, special;
} hs_added;

#define HS_SUFFIX_MAX 8 /* ids a post-processor may append after the text */

struct hs_pipe {
    hs_norm_step *norm;
    size_t n_norm;
    hs_pre_step *pre;
    size_t n_pre;
    hs_dec_step *dec;
    size_t n_dec;
    hs_added *added;  /* in the file's order */
    size_t n_added;
    unsigned char first_byte[256]; /* 1: some added token starts with this byte */
    int byte_level;   /* the last pre-tokenizer is ByteLevel: the model sees bytes */
    int byte_fallback, ignore_merges, fuse_unk;
    char *unk_token;  /* model.unk_token, or NULL */
    char *bos;        /* the post-processor's token before $A, or NULL */
    int suffix[HS_SUFFIX_MAX]; /* the ids TemplateProcessing's single puts after $A
                                  (its special_tokens' ids, e.g. an EOS), in order */
    size_t n_suffix;
    void *alnum;      /* [\p{Alphabetic}\p{N}] for single_word */
};

/* tokenizer.json's normalizer, pre_tokenizer, model options, added_tokens,
 * post_processor and decoder into a new pipeline (name for messages). One
 * line naming the field refused (HS_ERR_FORMAT): an unknown type, a malformed
 * or invalid regex, a missing field. */
hs_status hs_pipe_from_json(const void *root, const char *name, hs_pipe **out, hs_error *err);
/* GPT-2's pipeline: ByteLevel with its pattern, the ByteLevel decoder, and
 * "<|endoftext|>" as a special token at id eot (-1: none). */
hs_status hs_pipe_gpt2(int eot, hs_pipe **out, hs_error *err);
void hs_pipe_free(hs_pipe *p);

/* Pieces of text (pretok.c): each piece's bytes at text.s + off. */
typedef struct {
    size_t off, len;
    int first; /* starts the text (Metaspace's prepend_scheme "first") */
    int id;    /* an added token's id, or -1 */
} hs_piece;
typedef struct {
    hs_buf text;
    hs_piece *p;
    size_t n, cap;
} hs_pieces;
void hs_pieces_free(hs_pieces *ps);

/* Runs text (n valid UTF-8 bytes) through the pipeline up to the model:
 * added tokens (special ones only when special != 0), the normalizer, the
 * pre-tokenizers. *out gets the pieces in order: an added token's (id >= 0)
 * or a pre-token's bytes (raw bytes when the pipeline is byte-level).
 * HS_ERR_NOMEM, HS_ERR_INPUT (a regex's match limit). */
hs_status hs_pipe_run(const hs_pipe *p, const char *text, size_t n, int special, hs_pieces *out,
                      hs_error *err);

/* The decoder over n token strings (each as the vocabulary holds it),
 * appended to out: tokenizers' decode_chain then the strings joined. */
int hs_pipe_decode(const hs_pipe *p, const char *const *tok, size_t n, hs_buf *out);
/* The text of one token alone: the decoder's per-token steps (Replace,
 * ByteFallback, Metaspace as not the first), appended to out. */
int hs_pipe_token_text(const hs_pipe *p, const char *tok, hs_buf *out);

/* A BPE's tables (bpe.c builds them, bpe_encode.c encodes with them). Two
 * modes: byte-level (the pipeline ends in ByteLevel: the model sees bytes,
 * a token's key is its bytes, by_text serves the model) and string (the
 * model sees the pre-tokens' characters, a token's key is its string as the
 * file holds it, in model_map). */
struct hs_bpe {
    hs_pipe *pipe;          /* the pipeline (owned) */
    int byte_id[256];       /* byte-level: the id of each single-byte token */
    int byte_tok[256];      /* string mode, byte_fallback: the id of "<0xNN>", or -1 */
    int unk_id;             /* string mode: model.unk_token's id, or -1 */
    hs_pairmap merges;      /* (left id, right id) -> rank, merged id */
    hs_idmap model_map;     /* string mode: a token's file string -> id (model ids only) */
    unsigned char *in_model;/* (V) 1: the id is in the model's vocabulary */
    char *raw;              /* every token's bytes, each followed by a NUL */
    char **bytes;           /* (V) each token's bytes, into raw: by_text's keys */
    char *exact;            /* every exact string, NUL-terminated: t->words point in */
    char *file_raw;         /* string mode: every token's file string, NUL-terminated */
    char **file;            /* (V) into file_raw */
    size_t *file_lens;      /* (V) */
};

/* GPT-2's bytes_to_unicode: cp_of[b] is byte b's character, byte_of[cp] the
 * inverse (-1 where no byte maps; every character is below HS_ALPHA_MAX). */
#define HS_ALPHA_MAX 0x144
void hs_byte_alphabet(uint32_t cp_of[256], int byte_of[HS_ALPHA_MAX]);

/* Appends NFC(s) (n valid UTF-8 bytes) to out (nfc.c). 0, or -1 (out->oom). */
int hs_nfc(const char *s, size_t n, hs_buf *out);

/* GPT-2's pre-tokenizer alone (bpe_encode.c: hs_pipe_gpt2 with no special
 * token, the pattern hs_tok_encode splits a GPT-2 text with): calls fn on
 * each piece of s (n bytes of valid UTF-8, unchecked) in order; pieces cover
 * s exactly. fn returns 0, or non-zero for out of memory (the split stops:
 * HS_ERR_NOMEM). HS_ERR_INPUT when the matcher stops (its message). The BPE
 * trainer (bpe_train.c) counts its pre-tokens with it. */
typedef int (*hs_bpe_piece_fn)(const unsigned char *piece, size_t n, void *ctx);
hs_status hs_bpe_split(const unsigned char *s, size_t n, hs_bpe_piece_fn fn, void *ctx,
                       hs_error *err);

#endif
