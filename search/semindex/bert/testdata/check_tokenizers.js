// Cross-check of gen_fixture.py's WordPiece against the Hugging Face
// tokenizers library itself (its Node binding, Rust core): every sentence
// of minilm-ids.json through the real tokenizer.json, and of reference.json
// through tiny/tokenizer.json, must give the same ids. Not run by CI.
//
// Rerun (Node 20):
//   mkdir -p /tmp/tokjs && cd /tmp/tokjs && npm install tokenizers@0.23.2
//   gunzip -c DIR/minilm-tokenizer.json.gz > minilm.json
//   NODE_PATH=/tmp/tokjs/node_modules node DIR/check_tokenizers.js DIR
// where DIR is this testdata directory (absolute).
const { Tokenizer } = require('tokenizers');
const fs = require('fs');
const path = require('path');
const dir = process.argv[2];

async function check(tokPath, sentences, pick) {
  const tok = Tokenizer.fromString(fs.readFileSync(tokPath, 'utf8'));
  tok.disableTruncation();
  tok.disablePadding();
  let bad = 0;
  for (const s of sentences) {
    const got = (await tok.encode(s.text, null, { addSpecialTokens: false })).getIds();
    if (JSON.stringify(got) !== JSON.stringify(pick(s))) {
      bad++;
      console.log('mismatch', JSON.stringify(s.text).slice(0, 80));
    }
  }
  console.log(path.basename(tokPath), sentences.length, 'sentences,', bad, 'mismatches');
  return bad;
}

(async () => {
  const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f)));
  let bad = await check('minilm.json', read('minilm-ids.json').sentences, (s) => s.ids);
  bad += await check(path.join(dir, 'tiny/tokenizer.json'), read('reference.json').sentences, (s) => s.ids.lower);
  process.exit(bad ? 1 : 0);
})();
