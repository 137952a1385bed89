#!/usr/bin/env python3
"""Writes the corpus tests/test_bpe_reference.sh tokenizes: one JSON string a
line (UTF-8), at least 5,000 strings, the same bytes on every run (a fixed
seed; no dependence on the machine).

usage: make_corpus.py OUT.jsonl

What it holds: the test vectors of /work/shared/notes/gpt2-hf.md section 2
(vectors.json beside this script, first, in order); contractions in every
case; runs of spaces, tabs, newlines and CRLF, leading and trailing
whitespace, whitespace alone; numbers in several scripts; punctuation;
non-ASCII Latin, Greek, Cyrillic, Arabic, Hebrew, Devanagari, Thai, Hangul,
kana and CJK; emoji with ZWJ sequences, skin tones, flags, keycaps and
variation selectors; combining marks; bidi controls; zero-width characters
and the Unicode spaces (U+0085 and U+FEFF among them: JavaScript's \\s and
Unicode White_Space differ there); controls; the IOI prompts (Wang et al.
2022 templates x names x places x objects); code; long words and long runs;
special tokens of GPT-2, Llama 2/3 and Qwen in text; digit runs; NFC's
cases (decomposed and composed forms, singletons, composition exclusions,
Hangul jamo, 'ſ); runs of newlines and leading spaces; then seeded mixtures
of all of them. Only
characters of Unicode 14 or older (PCRE2 10.42's tables), never NUL, never
an empty string, never a lone surrogate.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CONTRACTIONS = ["don't", "DON'T", "Don't", "I'm", "I'M", "they'll", "THEY'LL", "we've", "We'VE",
                "she'd", "it's", "It'S", "you're", "YOU'RE", "can't", "won't", "y'all",
                "rock'n'roll", "O'Neil", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "''s",
                "l'amour", "'tis", "ma'am", "I'd've", "don’t", "it’s", "'", "''", "'''",
                "John's", "the dogs' bowls", " 's", "'S", "'LL", "x's'y"]
WHITESPACE = [" ", "  ", "   ", "      ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n",
              "\r\n\r\n", " \n", "\n ", " \t ", "\t\n", " \n\n ", "\u00a0", "\u2009", "\u3000",
              "\u2028", "\u2029", "\u1680", "\u202f", "\u205f", "\u2000", "\u200a", "\u0085",
              "\x0b", "\x0c", "\r"]
NUMBERS = ["0", "7", "42", "123", "1234", "12345678901234567890", "3.14159", "1,000,000",
           "2024-01-01", "12:30", "-5", "+7", "1e10", "0x1F", "٣٤٥", "१२३", "๑๒๓", "Ⅻ", "½",
           "²", "①", "𝟙𝟚", "一二三", "१०"]
PUNCT = ["!", "!!!", "...", "?!", "—", "–", "«ça»", "“quoted”", "‘single’", "(a)", "[b]", "{c}",
         "#hashtag", "@user", "a.b.c", "e-mail", "C++", "100%", "$5", "€10", "&amp;", "->",
         "=>", "::", "/*", "*/", "<|", "|>", "~", "`code`", "\"", "''", "¿qué?", "¡hola!",
         "…", "·", "•", "§", "¶", "©", "®", "™", "°", "±", "×", "÷"]
WORDS = ["Hello", "world", "the", "The", "animal", "didn", "cross", "street", "because", "it",
         "was", "too", "tired", "café", "naïve", "Ångström", "Straße", "Łódź", "œuvre", "ﬁne",
         "Ǆemal", "Ελληνικά", "αβγ", "Привет", "мир", "עברית", "שלום", "العربية", "مرحبا",
         "हिन्दी", "नमस्ते", "ภาษาไทย", "한국어", "안녕하세요", "日本語", "ひらがな", "カタカナ",
         "中文", "汉字", "漢字", "𠀀𠀁", "Ⓐ", "ﬀ", "İstanbul", "ǅ", "ǈ", "ß", "ẞ", "ς",
         "Ꭰ", "ᏣᎳᎩ", "ⴰⵣⵓⵍ", "ꦗꦮ", "ሰላም", "Ցտեսություն", "ქართული", "ᐊᐃᐅ"]
EMOJI = ["🤗", "😀", "👍", "👍🏽", "👋🏿", "👨‍👩‍👧‍👦", "👩‍💻", "🏳️‍🌈", "🏴‍☠️", "❤️", "❤", "☺️",
         "🇫🇷", "🇯🇵🇺🇸", "1️⃣", "#️⃣", "🧑🏽‍🚀", "🫠", "🥲", "🐈‍⬛", "✌🏻", "🤦‍♀️", "👁️‍🗨️",
         "💯", "🔥🔥🔥", "🙂🙃"]
COMBINING = ["e\u0301", "a\u0308\u0323", "n\u0303", "\u0301", "\u0301\u0302", "Z\u0324\u0354",
             "o\u0336", "x\u20dd", "\u093f", "क\u094d\u0937", "\u0e31", "ä" + "\u0308" * 8,
             "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "\u3099", "か\u3099", "\ufe0f", "a\ufe0e"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f", "\u202a",
             "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u061c", "\u00ad", "\u180e", "\u034f", "\ue000", "\U000f0000"]
CONTROLS = ["\x01", "\x07", "\x08", "\x1b[31mred\x1b[0m", "\x7f", "\x1c\x1d\x1e\x1f", "\x80",
            "\x9f", "\x85", "a\x1fb"]
CODE = ["def f(x):\n    return x ** 2\n",
        "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
        "if x == 1:\n        pass\n    else:\n\t\treturn None",
        "const t = require('x'); // comment\n",
        "<div class=\"a\">Hello</div>",
        "{\"key\": [1, 2, 3], \"b\": null}",
        "SELECT * FROM t WHERE id='7';",
        "https://example.com/path?q=1&r=two#frag",
        "/usr/local/bin/headscope --model gpt2",
        "^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)$",
        "    \n    \n",
        "x=1;y=2;z=x+y",
        "printf(\"%d\\n\", i);",
        "    # indented comment\n    x = [i for i in range(10)]",
        "\t\tdeeply\n\t\t\tindented",
        "a\r\nb\r\n",
        "λx. x",
        "fn main() { println!(\"héllo\"); }"]
LONG = ["Pneumonoultramicroscopicsilicovolcanoconiosis", "supercalifragilisticexpialidocious",
        "Donaudampfschifffahrtsgesellschaftskapitän", "a" * 200, "ab" * 150, "Z" * 64,
        "0123456789" * 20, "!" * 120, "." * 300, " " * 100 + "x", "x" + " " * 100,
        "\n" * 40, "\t" * 33, "日本" * 80, "🤗" * 50, "0f" * 64, "aGVsbG8gd29ybGQ=" * 12,
        "é" * 100, "e\u0301" * 60, "-" * 80, "=" * 79 + "\n"]
SPECIAL = ["<|endoftext|>", "<|endoftext|>Hello", " <|endoftext|>", "a<|endoftext|>b",
           "<|endoftext|><|endoftext|>", "<|endof", "endoftext", "<|im_start|>",
           "<s>", "</s>", "<unk>", "<s>Hello", " <s> ", "<s><s>", "</s>\n", "<pad>",
           "<|begin_of_text|>", "<|end_of_text|>", "<|begin_of_text|>Hi there",
           "<|im_start|>user\nHi<|im_end|>\n", "<|im_end|>", "<|reserved_special_token_0|>",
           "<|padding|>", "<|endoftext|> ", "  <|im_start|>  x", "<repo_name>", "a<repo_name>b",
           "x <repo_name> y", "<|eot_id|>", "<|start_header_id|>system<|end_header_id|>\n\n"]
# Digit runs (Llama 3 splits them by threes, Qwen and SmolLM digit by digit).
DIGITS = ["1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890123",
          "3.14159265358979", "2024", "100,000,000", "0000", "007", "1 2 3", "x123y", "v1.2.3",
          "99 bottles", "٣٤٥٦٧", "１２３４", "1st 2nd 3rd", "10^100", "0.000001", "-273.15"]
# Normalization: decomposed and composed forms, singletons, exclusions, Hangul jamo,
# case folding's corner ("'ſ", the Kelvin sign) for (?i:'s|...).
NFC = ["e\u0301", "\u212b", "\u2126", "\u1e0b\u0323", "A\u030a", "\u00c5\u0301",
       "\uac00\u11a8", "\u1100\u1161\u11a8", "\u1100\u1161", "\u0f73", "\u0958",
       "\u2adc", "o\u0308\u0301", "a\u0323\u0302", "a\u0302\u0323", "\u0344",
       "\u1e9b\u0323", "ſ", "'ſ", "IT'ſ", "'\u212a", "\u212a", "ﬁ", "Å", "ñ", "n\u0303",
       "\u0928\u093c", "\u09c7\u09be", "\u0b47\u0b3e", "\u3071", "\u306f\u309a",
       "\U0001d15e", "\U00011099\U000110ba", "caf\u0065\u0301 na\u0131\u0308ve"]
# Runs of newlines and leading spaces (Llama 3's and Qwen's \s*[\r\n]+).
NEWLINES = ["\n\n\n\n", "a\n\n\nb", "\r\n\r\n\r\n", " \n \n", "\n\t\n", "x \n\n y",
            ".\n\n", "!\n", "   Hello", " \tworld", "\u00a0x", "    def", "\n    return",
            "  \n  \n", "\n\n\n\n\n\n\n\n\n\n\n\n", "a" + " " * 17 + "b", "\t\tx\n\n\ty"]

NAMES = ["John", "Mary", "Tom", "James", "Dan", "Sid", "Martin", "Amy", "Kate", "Lisa",
         "Michael", "Sarah", "David", "Emma", "Paul", "Anna", "Mark", "Laura", "Peter", "Alice",
         "Robert", "Jessica", "Richard", "Susan", "Daniel", "Karen", "George", "Nancy", "Edward",
         "Linda", "Brian", "Helen", "Kevin", "Rachel", "Steven", "Julia", "Eric", "Sophie",
         "Adam", "Grace", "Ryan", "Lucy", "Jacob", "Hannah", "Alex", "Rose", "Sam", "Jane",
         "Chris", "Ruth", "Zoë", "José", "Søren", "Ólafur", "Ngozi", "Xiaoming", "Aarav",
         "Mohammed", "Yuki", "Björn"]
PLACES = ["store", "garden", "restaurant", "school", "hospital", "office", "house", "station",
          "park", "beach", "café", "museum", "library", "market", "airport", "zoo", "gym",
          "church", "bar", "theater"]
OBJECTS = ["drink", "ring", "kiss", "bone", "basketball", "computer", "necklace", "snack",
           "book", "letter", "gift", "flower", "cake", "ticket", "key", "phone", "bag", "hat",
           "guitar", "watch"]
TEMPLATES = [
    "When {A} and {B} went to the {P}, {B} gave a {O} to",
    "When {A} and {B} went to the {P}, {B} gave a {O} to {A}",
    "Then, {A} and {B} went to the {P}. {B} gave a {O} to",
    "Then, {B} and {A} had a lot of fun at the {P}. {A} gave a {O} to",
    "After {A} and {B} went to the {P}, {B} gave a {O} to",
    "Friends {A} and {B} found a {O} at the {P}. {B} gave it to",
    "While {A} and {B} were working at the {P}, {B} gave a {O} to",
    "The {P} {A} and {B} went to had a {O}. {B} gave it to",
    "When {A} and {B} got a {O} at the {P}, {B} decided to give it to",
    "Afterwards, {A} and {B} went to the {P}. {B} gave a {O} to",
]


def ioi_prompts(rng, n):
    out = []
    for i in range(n):
        a, b = rng.sample(NAMES, 2)
        t = TEMPLATES[i % len(TEMPLATES)]
        out.append(t.format(A=a, B=b, P=rng.choice(PLACES), O=rng.choice(OBJECTS)))
    return out


def variants(frags, rng):
    """Each fragment alone, with leading / trailing spaces, in a sentence."""
    out = []
    for f in frags:
        out += [f, " " + f, f + " ", "  " + f + "  ", "x" + f + "y", "the " + f + " and",
                f + "\n", "\t" + f, f + f, rng.choice(WORDS) + " " + f + " " + rng.choice(WORDS)]
    return out


def mixtures(rng, n):
    pools = [CONTRACTIONS, WHITESPACE, NUMBERS, PUNCT, WORDS, EMOJI, COMBINING, INVISIBLE,
             CONTROLS, CODE, SPECIAL, NAMES, DIGITS, NFC, NEWLINES]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            parts.append(rng.choice(rng.choice(pools)))
            parts.append(rng.choice(["", " ", " ", "", "  ", "\n", "\t", "\u00a0", " \n"]))
        out.append("".join(parts))
    return out


def main():
    rng = random.Random(20240524)
    with open(os.path.join(HERE, "vectors.json"), encoding="utf-8") as f:
        vectors = [v["text"] for v in json.load(f)]
    corpus = list(vectors)
    for frags in (CONTRACTIONS, WHITESPACE, NUMBERS, PUNCT, WORDS, EMOJI, COMBINING, INVISIBLE,
                  CONTROLS, CODE, LONG, SPECIAL, DIGITS, NFC, NEWLINES):
        corpus += variants(frags, rng)
    corpus += ioi_prompts(rng, 1500)
    corpus += [" " + w for w in NAMES] + [w + "'s" for w in NAMES]
    corpus += mixtures(rng, 2500)
    seen, unique = set(), []
    for s in corpus:
        assert s and "\0" not in s
        if s not in seen:
            seen.add(s)
            unique.append(s)
    assert len(unique) >= 5000, len(unique)
    with open(sys.argv[1], "w", encoding="utf-8", newline="\n") as f:
        for s in unique:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
