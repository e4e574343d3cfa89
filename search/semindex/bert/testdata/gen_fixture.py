#!/usr/bin/python3
"""Independent reference for the Go BERT encoder and WordPiece tokenizer.

Writes, next to this script:
  tiny/                      a random 2-layer BERT (hidden 32, 4 heads) in the
                             published sentence-transformers layout:
                             config.json, tokenizer.json, model.safetensors,
                             1_Pooling/config.json
  reference.json             token ids (several normaliser settings) and
                             mean-pooled, L2-normalised embeddings of
                             sentences, and the chunks of a long text
  minilm-ids.json            ids the real all-MiniLM-L6-v2 tokenizer.json
                             gives for the same sentences

Nothing here shares code with the Go side: the tokenizer (BertNormalizer,
BertPreTokenizer, WordPiece as the tokenizers library defines them) and the
BERT forward pass (written out in torch, in float64) are this script's own.

Rerun (Debian python3-torch; /usr/bin/python3, not another python3 on PATH):
  /usr/bin/python3 gen_fixture.py --minilm-tokenizer PATH/TO/tokenizer.json
where PATH is the real tokenizer.json (the Go module
github.com/clems4ever/all-minilm-l6-v2-go v0.0.9 carries it under
all_minilm_l6_v2/; `go mod download -json` prints its directory). The output
is deterministic (fixed seeds).

Benchmark helpers (used by bench/semantic.sh; nothing is committed):
  gen_fixture.py --bench-model DIR --minilm-tokenizer PATH   MiniLM-shaped
      random model (6 layers, hidden 384, 12 heads, FFN 1536) with the real
      vocabulary
  gen_fixture.py --torch-bench DIR --pieces N                times the torch
      forward of DIR on N-piece chunks with 2 threads
  gen_fixture.py --torch-reference DIR OUT                   embeddings of
      two random windows of DIR, for the Go encoder to match
"""

import argparse
import gzip
import hashlib
import json
import math
import os
import struct
import sys
import time
import unicodedata

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WINDOW = 256            # model positions per chunk, [CLS] and [SEP] included
CONTENT = WINDOW - 2    # word pieces of text per chunk

# ---------------------------------------------------------------- tokenizer

WHITE_SPACE = set([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
                   0x2028, 0x2029, 0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))


def is_whitespace(c):
    return ord(c) in WHITE_SPACE


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def is_punct(c):
    cp = ord(c)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(c).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def normalize_char(c, lowercase, strip):
    """What BertNormalizer makes of one source character (clean_text and
    handle_chinese_chars on): a list of characters."""
    cp = ord(c)
    if cp == 0 or cp == 0xFFFD or is_control(c):
        return []
    if is_whitespace(c):
        return [" "]
    if is_cjk(cp):
        return [" ", c, " "]
    s = c
    if strip:
        s = "".join(x for x in unicodedata.normalize("NFD", s) if unicodedata.category(x) != "Mn")
    if lowercase:
        s = "".join(x.lower() for x in s)
    return list(s)


def words(text, lowercase, strip):
    """Words after normalisation and pre-tokenisation, each a list of
    (character, source index)."""
    out, cur = [], []
    for i, c in enumerate(text):
        for n in normalize_char(c, lowercase, strip):
            if is_whitespace(n):
                if cur:
                    out.append(cur)
                cur = []
            elif is_punct(n):
                if cur:
                    out.append(cur)
                out.append([(n, i)])
                cur = []
            else:
                cur.append((n, i))
    if cur:
        out.append(cur)
    return out


def wordpiece(word, vocab, max_chars=100):
    s = "".join(c for c, _ in word)
    if len(s) > max_chars:
        return [vocab["[UNK]"]]
    pieces, start = [], 0
    while start < len(s):
        end, found = len(s), None
        while start < end:
            sub = s[start:end]
            if start > 0:
                sub = "##" + sub
            if sub in vocab:
                found = vocab[sub]
                break
            end -= 1
        if found is None:
            return [vocab["[UNK]"]]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab, lowercase=True, strip=None):
    """Content ids (no [CLS]/[SEP]) and per word (ids, start, end) with
    source character offsets."""
    if strip is None:
        strip = lowercase
    ids, spans = [], []
    for w in words(text, lowercase, strip):
        p = wordpiece(w, vocab)
        ids += p
        spans.append((p, w[0][1], w[-1][1] + 1))
    return ids, spans


def chunks(text, vocab):
    """Greedy packing of whole words into chunks of at most CONTENT pieces."""
    _, spans = tokenize(text, vocab)
    out, cur, start, end = [], [], None, None
    for p, s, e in spans:
        if cur and len(cur) + len(p) > CONTENT:
            out.append((cur, start, end))
            cur, start = [], None
        if start is None:
            start = s
        cur = cur + p
        end = e
    if cur:
        out.append((cur, start, end))
    return out

# ---------------------------------------------------------------- model


def layer_names(i):
    p = "encoder.layer.%d." % i
    return {
        "q": p + "attention.self.query", "k": p + "attention.self.key", "v": p + "attention.self.value",
        "ao": p + "attention.output.dense", "aln": p + "attention.output.LayerNorm",
        "inter": p + "intermediate.dense", "out": p + "output.dense", "oln": p + "output.LayerNorm",
    }


def random_model(cfg, seed, std):
    g = torch.Generator().manual_seed(seed)
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]

    def rnd(*shape, s=std):
        return (torch.randn(*shape, generator=g) * s).float()

    t = {
        "embeddings.word_embeddings.weight": rnd(V, H, s=1.0),
        "embeddings.position_embeddings.weight": rnd(cfg["max_position_embeddings"], H, s=0.5),
        "embeddings.token_type_embeddings.weight": rnd(cfg["type_vocab_size"], H, s=0.5),
        "embeddings.LayerNorm.weight": 1 + rnd(H, s=0.1),
        "embeddings.LayerNorm.bias": rnd(H, s=0.1),
    }
    for i in range(cfg["num_hidden_layers"]):
        n = layer_names(i)
        for k, (o, inp) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H),
                            "inter": (I, H), "out": (H, I)}.items():
            t[n[k] + ".weight"] = rnd(o, inp, s=std / math.sqrt(inp / 32))
            t[n[k] + ".bias"] = rnd(o, s=0.1)
        for k in ("aln", "oln"):
            t[n[k] + ".weight"] = 1 + rnd(H, s=0.1)
            t[n[k] + ".bias"] = rnd(H, s=0.1)
    t["pooler.dense.weight"] = rnd(H, H)
    t["pooler.dense.bias"] = rnd(H)
    return t


def forward(t, cfg, ids, dtype=torch.float64):
    """BertModel's last hidden state for one unpadded sequence, then
    sentence-transformers' mean pooling and L2 normalisation."""
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    dh, eps = H // nh, cfg["layer_norm_eps"]
    w = {k: v.to(dtype) for k, v in t.items() if v.is_floating_point()}
    idx = torch.tensor(ids, dtype=torch.long)
    n = len(ids)

    def ln(x, name):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    x = (w["embeddings.word_embeddings.weight"][idx] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = ln(x, "embeddings.LayerNorm")
    for i in range(cfg["num_hidden_layers"]):
        nm = layer_names(i)
        q = lin(x, nm["q"]).view(n, nh, dh).transpose(0, 1)
        k = lin(x, nm["k"]).view(n, nh, dh).transpose(0, 1)
        v = lin(x, nm["v"]).view(n, nh, dh).transpose(0, 1)
        p = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), dim=-1)
        c = (p @ v).transpose(0, 1).reshape(n, H)
        x = ln(lin(c, nm["ao"]) + x, nm["aln"])
        h = lin(x, nm["inter"])
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        x = ln(lin(h, nm["out"]) + x, nm["oln"])
    e = x.mean(0)
    return e / e.norm()

# ---------------------------------------------------------------- files


def write_safetensors(path, tensors, extra_i64=None):
    header, blobs, off = {}, [], 0
    items = [(k, v.contiguous().numpy().astype("<f4").tobytes(), "F32", list(v.shape)) for k, v in tensors.items()]
    for k, (data, shape) in (extra_i64 or {}).items():
        items.append((k, data, "I64", shape))
    for k, data, dt, shape in sorted(items):
        header[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_model(d, cfg, tensors, tokenizer):
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": cfg["hidden_size"], "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
    pos = struct.pack("<%dq" % cfg["max_position_embeddings"], *range(cfg["max_position_embeddings"]))
    write_safetensors(os.path.join(d, "model.safetensors"), tensors,
                      {"embeddings.position_ids": (pos, [1, cfg["max_position_embeddings"]])})


def config(H, layers, heads, inter, vocab, eps):
    return {"architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "hidden_size": H, "initializer_range": 0.02,
            "intermediate_size": inter, "layer_norm_eps": eps, "max_position_embeddings": 512,
            "model_type": "bert", "num_attention_heads": heads, "num_hidden_layers": layers,
            "pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2,
            "vocab_size": vocab}


def tokenizer_with_vocab(real, vocab):
    tok = json.loads(json.dumps(real))
    tok["model"]["vocab"] = vocab
    tok["truncation"] = None
    tok["padding"] = None
    for a in tok["added_tokens"]:
        a["id"] = vocab[a["content"]]
    for name in ("[CLS]", "[SEP]"):
        tok["post_processor"]["special_tokens"][name]["ids"] = [vocab[name]]
    return tok

# ---------------------------------------------------------------- data

SENTENCES = [
    "Hello, world! This is a test.",
    "Café naïve résumé — Ångström façade, crème brûlée.",
    "Don't stop-believing... (really?) #1 $5.00 100% [x] {y} <z> a/b\\c ~^_`|",
    "我喜欢自然语言处理。東京タワーは高い！",
    "Unknownwordxyzzyqq pneumonoultramicroscopicsilicovolcanoconiosis " + "a" * 101 + " " + "b" * 100,
    "ΟΔΟΣ İstanbul Straße ﬁne ÉCOLE",
    "tab\there\nnew\u0000line\u200bzero\ufffdrep\u00a0nbsp\u2028sep\u3000ideo",
    "I \u2764\ufe0f \U0001F355 pizza",
    "",
    "   ",
]

# Only for the real tokenizer's ids (the tiny model's vocabulary does not
# depend on them).
TOKENIZER_ONLY = [
    "\u0130 \u01c5 titlecase, a\u0301\u0323 combining, \u00ad soft hyphen",
    "Hangul \ud55c\uad6d\uc5b4, Thai \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22, Arabic \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0661\u0662\u0663",
    "family \U0001F468\u200d\U0001F469\u200d\U0001F467, math \u2211\u222b \u2264\u2265, fullwidth \uff21\uff22\uff23 \uff01",
    "\ufb00 ligature, tabs\tand\r\nCRLF, x\u0085y, dashes \u2010 \u2013 \u2014 \u2015",
    "quotes \u201c \u201d \u2018 \u2019 \u00ab \u00bb don\u2019t https://example.com/a?b=c#d",
    "x" * 100 + " " + "y" * 99 + "z " + "unbelievably" * 8,
]

LONG = " ".join(
    "Paragraph %d: the quick brown fox jumps over the lazy dog; naïve façades, 東京, and "
    "unusualwordzzz%d sit beside numbers like %d.%02d." % (i, i, i * 37, i % 100) for i in range(40))


def sample_vocab(real_vocab, needed, size, seed):
    g = torch.Generator().manual_seed(seed)
    by_id = sorted(real_vocab, key=lambda k: real_vocab[k])
    chosen = list(SPECIALS)
    chosen += [c for c in "abcdefghijklmnopqrstuvwxyz0123456789" if c in real_vocab]
    chosen += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789" if "##" + c in real_vocab]
    have = set(chosen)
    for p in sorted(needed, key=lambda k: real_vocab[k]):
        if p not in have:
            chosen.append(p)
            have.add(p)
    perm = torch.randperm(len(by_id), generator=g).tolist()
    for i in perm:
        if len(chosen) >= size:
            break
        p = by_id[i]
        if p not in have and not p.startswith("[unused"):
            chosen.append(p)
            have.add(p)
    return {p: i for i, p in enumerate(chosen)}


def fixture(real_path):
    with open(real_path, "rb") as f:
        raw = f.read()
    real = json.loads(raw)
    rv = real["model"]["vocab"]
    inv = {i: p for p, i in rv.items()}
    needed = set()
    for s in SENTENCES + [LONG]:
        ids, _ = tokenize(s, rv)
        needed.update(inv[i] for i in ids)
    # Drop some needed pieces so the tiny vocabulary also splits into ##
    # continuations and falls back to [UNK].
    needed = {p for p in needed if hash_keep(p)}
    vocab = sample_vocab(rv, needed, 2000, seed=7)
    cfg = config(32, 2, 4, 64, len(vocab), 1e-7)
    tensors = random_model(cfg, seed=11, std=0.5)
    tok = tokenizer_with_vocab(real, vocab)
    d = os.path.join(HERE, "tiny")
    write_model(d, cfg, tensors, tok)

    ref = {"window": WINDOW, "sentences": [], "long": {}}
    variants = [("lower", True, None), ("cased", False, False), ("lower_keep_accents", True, False)]
    for s in SENTENCES:
        entry = {"text": s, "ids": {}}
        for name, low, strip in variants:
            entry["ids"][name] = tokenize(s, vocab, low, strip)[0]
        ids = [vocab["[CLS]"]] + entry["ids"]["lower"] + [vocab["[SEP]"]]
        entry["embedding"] = forward(tensors, cfg, ids).tolist()
        ref["sentences"].append(entry)
    lc = []
    for ids, start, end in chunks(LONG, vocab):
        full = [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]
        lc.append({"start": start, "end": end, "pieces": len(ids),
                   "embedding": forward(tensors, cfg, full).tolist()})
    ref["long"] = {"text": LONG, "pieces": len(tokenize(LONG, vocab)[0]), "chunks": lc}
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(ref, f, ensure_ascii=False, indent=1)

    with gzip.GzipFile(os.path.join(HERE, "minilm-tokenizer.json.gz"), "wb", mtime=0) as f:
        f.write(raw)
    mids = {"tokenizer_sha256": hashlib.sha256(raw).hexdigest(), "sentences": []}
    for s in SENTENCES + TOKENIZER_ONLY + [LONG]:
        mids["sentences"].append({"text": s, "ids": tokenize(s, rv)[0]})
    with open(os.path.join(HERE, "minilm-ids.json"), "w") as f:
        json.dump(mids, f, ensure_ascii=False, indent=1)
    print("pieces in long text:", ref["long"]["pieces"], "chunks:", len(lc))


def hash_keep(p):
    return int(hashlib.sha256(p.encode()).hexdigest(), 16) % 5 != 0


def bench_model(d, real_path):
    with open(real_path, "rb") as f:
        real = json.load(f)
    rv = real["model"]["vocab"]
    cfg = config(384, 6, 12, 1536, len(rv), 1e-12)
    tensors = random_model(cfg, seed=3, std=0.5)
    write_model(d, cfg, tensors, tokenizer_with_vocab(real, rv))


def torch_bench(d, pieces, rounds):
    torch.set_num_threads(2)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    tensors = read_safetensors(os.path.join(d, "model.safetensors"))
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(1000, cfg["vocab_size"], (pieces,), generator=g).tolist()
    with torch.inference_mode():
        forward(tensors, cfg, ids, torch.float32)
        t0 = time.perf_counter()
        for _ in range(rounds):
            forward(tensors, cfg, ids, torch.float32)
        dt = time.perf_counter() - t0
    print("torch_pieces_per_second %.1f" % (pieces * rounds / dt))


def torch_reference(d, out, pieces):
    """Reference embeddings of two random windows of model d, for the Go
    encoder to match on a model of the bench's shape."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    tensors = read_safetensors(os.path.join(d, "model.safetensors"))
    g = torch.Generator().manual_seed(9)
    ref = []
    for n in (pieces, 17):
        ids = [101] + torch.randint(1000, cfg["vocab_size"], (n - 2,), generator=g).tolist() + [102]
        ref.append({"ids": ids[1:-1], "embedding": forward(tensors, cfg, ids).tolist()})
    with open(out, "w") as f:
        json.dump(ref, f)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        a, b = v["data_offsets"]
        buf = bytearray(data[8 + n + a:8 + n + b])
        out[k] = torch.frombuffer(buf, dtype=torch.float32).reshape(v["shape"]).clone()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm-tokenizer")
    ap.add_argument("--bench-model")
    ap.add_argument("--torch-bench")
    ap.add_argument("--torch-reference", nargs=2, metavar=("DIR", "OUT"))
    ap.add_argument("--pieces", type=int, default=WINDOW)
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    if a.torch_reference:
        torch_reference(a.torch_reference[0], a.torch_reference[1], a.pieces)
    elif a.torch_bench:
        torch_bench(a.torch_bench, a.pieces, a.rounds)
    elif a.bench_model:
        bench_model(a.bench_model, a.minilm_tokenizer)
    elif a.minilm_tokenizer:
        fixture(a.minilm_tokenizer)
    else:
        ap.error("give --minilm-tokenizer (fixtures), --bench-model or --torch-bench")


if __name__ == "__main__":
    main()
