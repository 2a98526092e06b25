// Derive tokenizer.json variants from the device-trained gpt2 tokenizer and encode the texts
// with the tokenizers library's node binding (same version, 0.23.2).
// usage: node scripts/make_tokenizer_variants.js TOKENIZERS_PKG_DIR GPT2_TOKENIZER_JSON OUTDIR TEXT...
// TOKENIZERS_PKG_DIR: the npm package tokenizers@0.23.2 unpacked (npm pack tokenizers@0.23.2;
// tar xzf; its package/ folder). Writes OUTDIR/NAME/tokenizer.json and OUTDIR/NAME/TEXTNAME.i32
// (the library's ids, int32 little-endian) for every TEXT (its base name without .txt).
const tk = require(require('path').resolve(process.argv[2], 'index.js'));
const fs = require('fs');
const OUT = process.argv[4];
const base = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const TEKKEN = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const split = (re, behavior, invert=false) => ({type: 'Split', pattern: {Regex: re}, behavior, invert});
const splitS = (s, behavior, invert=false) => ({type: 'Split', pattern: {String: s}, behavior, invert});
const bl = (aps, ur) => ({type: 'ByteLevel', add_prefix_space: aps, trim_offsets: false, use_regex: ur});
const V = {
  qwen2: {norm: {type: 'NFC'}, pre: [split(QWEN2, 'Isolated'), bl(false, false)], ignore: false, str: false},
  tekken: {norm: null, pre: [split(TEKKEN, 'Isolated'), bl(false, false)], ignore: true, str: true},
  llama3: {norm: null, pre: [split(LLAMA3, 'Isolated'), bl(false, false)], ignore: true, str: false},
  behaviors: {norm: {type: 'Sequence', normalizers: [{type: 'NFC'}]},
              pre: [split('\\p{N}+', 'MergedWithPrevious'), splitS(' ', 'MergedWithNext'),
                    split('[,;]', 'Removed'), split('[aeiou]+', 'Contiguous', true), bl(true, false)],
              ignore: false, str: true},
  inverted: {norm: null, pre: [split('\\s+', 'Isolated', true), split('[A-Z]', 'MergedWithNext'),
                               splitS('the', 'Isolated'), bl(false, true)], ignore: true, str: false},
};
function writeIds(p, ids) { const b = Buffer.alloc(ids.length * 4); ids.forEach((v, i) => b.writeInt32LE(v, i * 4)); fs.writeFileSync(p, b); }
(async () => {
  const texts = Object.fromEntries(process.argv.slice(5).map(p => [require('path').basename(p, '.txt'), p]));
  for (const [name, v] of Object.entries(V)) {
    const j = JSON.parse(JSON.stringify(base));
    j.normalizer = v.norm;
    j.pre_tokenizer = {type: 'Sequence', pretokenizers: v.pre};
    j.post_processor = {type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false};
    j.decoder = {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true};
    j.model.ignore_merges = v.ignore;
    if (v.str) j.model.merges = j.model.merges.map(m => m[0] + ' ' + m[1]);
    fs.mkdirSync(OUT + '/' + name, {recursive: true});
    const path = OUT + '/' + name + '/tokenizer.json';
    fs.writeFileSync(path, JSON.stringify(j, null, 2));
    const t = tk.Tokenizer.fromFile(path);
    for (const [tn, tp] of Object.entries(texts)) {
      const text = fs.readFileSync(tp, 'utf8');
      const e = await t.encode(text, null, {addSpecialTokens: false});
      const ids = e.getIds();
      writeIds(OUT + '/' + name + '/' + tn + '.i32', ids);
      const back = await t.decode(ids, false);
      console.log(name, tn, Buffer.byteLength(text), 'bytes ->', ids.length, 'ids; decode==text', back === text);
    }
  }
})().catch(e => { console.error(e); process.exit(1); });
