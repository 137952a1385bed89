/*
 * tokenize/tokenize.h -- text to token ids and back: one interface,
 * hs_tokenizer, for every kind of tokenizer a model comes with. Today one
 * kind, the word-level vocabulary of headscope's own models (words separated
 * by ASCII whitespace, `,` and `.` split off, case folded); the byte-level
 * BPE of GPT-2 is the next (docs/DESIGN.md, "Tokenization").
 *
 * The interface:
 *   hs_tok_encode   text -> ids and their exact token strings (TransformerLens
 *                   `to_tokens` / `to_str_tokens`), with the special token
 *                   a kind prepends (hs_tok_bos);
 *   hs_tok_decode   ids -> text, so that decode(encode(s)) reads as s;
 *   hs_tok_str      the exact string of one token (JSON, lookups);
 *   hs_tok_display  the form a figure or a terminal shows (for words the
 *                   word itself);
 *   hs_tok_id       a token's exact string -> its id;
 *   hs_tok_bos      the beginning-of-sequence token encode prepends, or -1.
 * Constructors make the word vocabulary from a list (hs_tokenizer_words), a
 * checkpoint's `vocab` metadata (hs_tokenizer_from_json), a file
 * (hs_tokenizer_read) or id labels for a model without one
 * (hs_tokenizer_ids); hs_tokenizer_to_json writes the metadata back.
 *
 * May call: common/ (status, errors, UTF-8, the text policy, files), cJSON.
 * Knows nothing of models, tasks, probes or figures. The library never prints
 * and never exits: every failure is an hs_status plus a one-line message in a
 * caller-owned hs_error.
 *
 * Dims: V = vocabulary size (a model's d_vocab), n = tokens of one text.
 * Ownership: hs_tokenizer is a heap handle (*_create-style constructors,
 * hs_tokenizer_destroy); hs_tokens is a caller-owned struct freed with
 * hs_tokens_free. Every destroy / free accepts NULL. Strings returned through
 * char ** are malloc'd and freed by the caller with free().
 */
#ifndef HS_TOKENIZE_H
#define HS_TOKENIZE_H

#include <stddef.h>

#include "common/common.h"

/* The kinds of tokenizer. */
typedef enum {
    HS_TOKENIZER_WORDS = 0, /* a word list: whitespace-separated words, `,` `.` split off */
} hs_tokenizer_kind;

/* A tokenizer. Read the fields, do not change them (the functions below are
 * the interface). */
typedef struct hs_tokenizer {
    hs_tokenizer_kind kind;
    size_t n;          /* vocabulary size V */
    char **words;      /* (n) each token's exact string, NUL-terminated, owned */
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
 * word vocabulary. HS_ERR_FORMAT with a clear message when json is NULL or
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
 * (caller frees with free()); NULL on failure (HS_ERR_NOMEM). */
hs_status hs_tokenizer_to_json(const hs_tokenizer *t, char **json, hs_error *err);

/* Frees t and its strings. NULL is allowed. */
void hs_tokenizer_destroy(hs_tokenizer *t);

/* Id of the token whose exact string is s (case-sensitive), or -1. */
int hs_tok_id(const hs_tokenizer *t, const char *s);

/* The exact string of token id, or NULL if id is out of range [0, V). Owned
 * by t. */
const char *hs_tok_str(const hs_tokenizer *t, int id);

/* Appends the form of token id a figure or a terminal shows to b (for a word
 * vocabulary the word itself; the caller applies the text policy of where it
 * writes, e.g. hs_buf_put_visible for a terminal). Returns hs_buf_append's
 * result; an id out of range appends "#<id>". */
int hs_tok_display(const hs_tokenizer *t, int id, hs_buf *b);

/* The beginning-of-sequence token hs_tok_encode prepends, or -1 when this
 * kind prepends none (a word vocabulary). */
int hs_tok_bos(const hs_tokenizer *t);

/* Tokens of one text. Caller-owned; free with hs_tokens_free. */
typedef struct {
    size_t n;          /* number of tokens */
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
 * n_ctx is the model's context length; 0 means no limit.
 * On success fills *out (previous contents are overwritten, not freed).
 * Errors (HS_ERR_INPUT, one line; out is left empty, nothing to free):
 *   "sentence is empty"                          (NULL or "")
 *   "sentence has only spaces"                   (whitespace only)
 *   "sentence is not valid UTF-8 at byte P"      (0-based byte offset)
 *   "sentence has a control character (0xHH) at byte P" (C0 controls other than
 *                                                 the whitespace above, DEL,
 *                                                 and U+0080..U+009F)
 *   "sentence has N tokens, more than the model's context of C (n_ctx)"
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

/* Decodes n ids into text (malloc'd, caller frees): for a word vocabulary the
 * words joined by one space, which hs_tok_encode reads back as the same ids.
 * HS_ERR_INPUT naming the first id outside [0, V); HS_ERR_NOMEM. */
hs_status hs_tok_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err);

/* Frees t's arrays and zeroes it. NULL or an already-freed/zeroed t is allowed. */
void hs_tokens_free(hs_tokens *t);

#endif
