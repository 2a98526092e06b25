// The tokenizers library's ids for each text of TEXTS.bin, one line of ids per text:
// node encode_texts.js TOKENIZERS_PKG_DIR TOKENIZER_JSON TEXTS.bin OUT.txt
const tk = require(require('path').resolve(process.argv[2], 'index.js')); const fs = require('fs');
(async () => {
  const t = tk.Tokenizer.fromFile(process.argv[3]); const b = fs.readFileSync(process.argv[4]);
  const out = []; let o = 0;
  while (o < b.length) { const n = b.readUInt32LE(o); const s = b.subarray(o + 4, o + 4 + n).toString('utf8'); o += 4 + n;
    const e = await t.encode(s, null, {addSpecialTokens: false}); out.push(e.getIds().join(' ')); }
  fs.writeFileSync(process.argv[5], out.join('\n') + '\n');
})();
