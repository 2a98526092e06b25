#!/usr/bin/env python3
"""Reference tokenizers and encodings for the C byte-level BPE (docs/tokenizer.md).

Run on a machine with the Hugging Face `tokenizers` library (the GPU machine's image):

    python3 scripts/make_tokenizer_refs.py INDIR OUTDIR

INDIR holds the training text (kjv.txt.gz, austen.txt.gz: scripts/fetch_corpus.sh's .corpus/;
any *.txt.gz or *.txt there is used), the held-out evaluation text moby-dick.txt
(scripts/fetch_data.sh) and unicode.txt (tests/fixtures/tokenizers/unicode.txt: edge cases).
For each of four pre-tokenizer styles (Qwen2 with NFC, tekken, Llama-3, GPT-2's ByteLevel
alone with add_prefix_space) it trains a byte-level BPE with a few special tokens,
adds one non-special added token, saves OUTDIR/NAME/tokenizer.json and the library's encodings
(add_special_tokens=False) as int32 .npy: moby.npy (the whole book), moby300k.npy (the first
lines of at most 300000 bytes, saved as OUTDIR/moby300k.txt), unicode.npy; plus, for debugging,
unicode_pieces.json (normalised text and pre-tokens) and unicode_tokens.json. Each tokenizer is
also re-saved with merges in the old "a b" string form (tokenizer_strmerges.json) and checked to
encode identically. Every tokenizer runs in its own try/except so one failure keeps the others.

What came back from the GPU run of 2026-11-29 (tokenizers 0.23.2) was only the gpt2 directory:
the device returns at most 8 files. The other fixtures were derived from that tokenizer by
scripts/make_tokenizer_variants.js and encoded with the npm build of the same library version
(tests/fixtures/tokenizers/README.md). The script now also writes OUTDIR.tar.gz: bring that back.
"""
import glob
import gzip
import json
import os
import shutil
import sys
import time
import traceback

import numpy as np
import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, trainers

# Qwen2 / Qwen2.5 / Qwen3 tokenizer.json split pattern (one digit per pre-token), NFC normaliser.
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Mistral "tekken"-style pattern (case-aware words, single digits, "/" kept after symbols), as
# in the tokenizer.json of Nemotron-H / Nemotron-Nano (from memory: documented as such).
TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
          r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
          r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Llama-3 / cl100k pattern (numbers in groups of up to three digits).
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# name, pattern (None: GPT-2 style, ByteLevel alone with its own regex and add_prefix_space),
# NFC?, vocab size, ignore_merges (tekken/llama3 conversions set it)
STYLES = [
    ("qwen2", QWEN2, True, 4000, False),
    ("tekken", TEKKEN, False, 3000, True),
    ("llama3", LLAMA3, False, 4000, True),
    ("gpt2", None, False, 2000, False),
]


def read_training(indir):
    texts = []
    for path in sorted(glob.glob(os.path.join(indir, "*.txt.gz"))):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts.append(f.read())
        print(f"train: {path}: {len(texts[-1])} chars", flush=True)
    return texts


def chunks(texts, size=1 << 16):
    for t in texts:
        # split on line ends so the trainer never sees a cut inside a word
        start = 0
        while start < len(t):
            end = t.find("\n", start + size)
            end = len(t) if end < 0 else end + 1
            yield t[start:end]
            start = end


def save_npy(path, ids):
    np.save(path, np.asarray(ids, dtype=np.int32))


def to_string_merges(src, dst):
    with open(src, encoding="utf-8") as f:
        j = json.load(f)
    merges = j["model"]["merges"]
    if merges and isinstance(merges[0], list):
        j["model"]["merges"] = [a + " " + b for a, b in merges]
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=2)


def build(name, pattern, nfc, vocab, ignore_merges, texts, evals, outdir):
    t0 = time.time()
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    try:
        model = models.BPE(ignore_merges=ignore_merges)
    except TypeError:
        print(f"{name}: this tokenizers has no BPE(ignore_merges=...); using the default")
        model = models.BPE()
    tok = Tokenizer(model)
    if nfc:
        tok.normalizer = normalizers.NFC()
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(chunks(texts), trainer=trainer)
    # A non-special added token (normalized=True, as the library's default for non-special).
    tok.add_tokens([AddedToken("<think>", special=False, normalized=True)])
    path = os.path.join(d, "tokenizer.json")
    tok.save(path)
    print(f"{name}: trained vocab {tok.get_vocab_size()} in {time.time() - t0:.1f} s", flush=True)

    tok = Tokenizer.from_file(path)  # encode with what was saved, as the C side reads it
    strpath = os.path.join(d, "tokenizer_strmerges.json")
    to_string_merges(path, strpath)
    tok2 = Tokenizer.from_file(strpath)
    for ename, text in evals.items():
        t1 = time.time()
        enc = tok.encode(text, add_special_tokens=False)
        dt = time.time() - t1
        save_npy(os.path.join(d, ename + ".npy"), enc.ids)
        same = tok2.encode(text, add_special_tokens=False).ids == enc.ids
        back = tok.decode(enc.ids, skip_special_tokens=False)
        print(f"{name}/{ename}: {len(text.encode())} bytes -> {len(enc.ids)} ids in {dt:.2f} s; "
              f"string-form merges identical: {same}; decode round trip: {back == text}",
              flush=True)
        if ename == "unicode":
            with open(os.path.join(d, "unicode_tokens.json"), "w", encoding="utf-8") as f:
                json.dump({"ids": enc.ids, "tokens": enc.tokens}, f, ensure_ascii=False)
            norm = tok.normalizer.normalize_str(text) if tok.normalizer else text
            pieces = tok.pre_tokenizer.pre_tokenize_str(norm)
            with open(os.path.join(d, "unicode_pieces.json"), "w", encoding="utf-8") as f:
                json.dump({"normalized": norm, "pieces": pieces}, f, ensure_ascii=False)


def main():
    indir, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    print(f"tokenizers {tokenizers.__version__}, numpy {np.__version__}, python {sys.version}",
          flush=True)
    texts = read_training(indir)
    with open(os.path.join(indir, "moby-dick.txt"), "rb") as f:
        moby_b = f.read()
    cut = moby_b.rfind(b"\n", 0, 300000) + 1
    with open(os.path.join(outdir, "moby300k.txt"), "wb") as f:
        f.write(moby_b[:cut])
    with open(os.path.join(indir, "unicode.txt"), "rb") as f:
        uni = f.read().decode("utf-8")
    evals = {"moby": moby_b.decode("utf-8"), "moby300k": moby_b[:cut].decode("utf-8"),
             "unicode": uni}
    versions = {"tokenizers": tokenizers.__version__, "numpy": np.__version__,
                "python": sys.version.split()[0]}
    try:
        import transformers
        versions["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001 - only recorded
        versions["transformers"] = f"not importable: {e}"
    with open(os.path.join(outdir, "versions.json"), "w") as f:
        json.dump(versions, f, indent=1)
    failed = 0
    for style in STYLES:
        try:
            build(*style, texts, evals, outdir)
        except Exception:  # noqa: BLE001 - keep the other tokenizers
            failed += 1
            print(f"{style[0]}: FAILED", flush=True)
            traceback.print_exc()
    # One archive beside OUTDIR: a device that returns only a few files still returns everything.
    archive = shutil.make_archive(outdir.rstrip("/"), "gztar", outdir)
    print(f"done, {failed} failed; archive {archive}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
