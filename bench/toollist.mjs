// Lists the tools of an MCP server over stdio with the TypeScript SDK's
// client (what Claude Code, Claude Desktop and the Inspector use) and
// prints, as one JSON line, what the first tools/list costs: bytes of the
// tools as JSON, and tokens by two offline tokenizers (Anthropic's
// published Claude tokenizer, and OpenAI's o200k_base), for the whole
// listing and for what a model is given of each tool (name, description,
// input schema).
//   node toollist.mjs COMMAND ARG...
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { countTokens } from '@anthropic-ai/tokenizer';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: 'capkit-bench-toollist', version: '1' });
await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
const { tools } = await client.listTools();
await client.close();

const measure = (v) => {
  const s = JSON.stringify(v);
  return { bytes: Buffer.byteLength(s), claude_tokens: countTokens(s), o200k_tokens: encode(s).length };
};
const model = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
process.stdout.write(JSON.stringify({
  tools: tools.length,
  listing: measure(tools),
  model: measure(model),
  per_tool: tools.map((t) => ({ name: t.name, ...measure(t) })),
}) + '\n');
