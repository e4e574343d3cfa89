// Drives capkit with the MCP TypeScript SDK's client, the one Claude
// Desktop, Claude Code and the Inspector use, and prints what it saw as one
// JSON object, for the Go test that runs it (e2e/tsclient_test.go) to check.
//
// It reads a plan as JSON on standard input:
//   {"transport": "stdio", "command": "...", "args": [...], "cwd": "..."}
//   or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp",
//       "headers": {"Authorization": "Bearer ..."}}   (headers optional),
//   "roots": ["file:///..."]   (optional: the client then offers roots),
//   "elicit": [{"action": "accept", "content": {...}}, ...]  (optional: the
//       client then declares form elicitation and gives these answers in
//       turn, declining once they run out),
//   "steps": [{"op": ...}, ...]
// and runs the steps in order, one at a time, as a model's client does:
//   list                    tools/list (this arms the SDK's output-schema check);
//                           bytes: the UTF-8 length of the tools as JSON
//   call {tool, args, progress}  tools/call; the result (its content blocks'
//                           types, and with progress: true how many progress
//                           notifications arrived), or what callTool threw
//   cancel {tool, args, after_ms}  tools/call aborted through an AbortSignal
//   follow {tool, args, offset_arg, next}  tools/call, then again with
//                           args[offset_arg] set to the structuredContent's
//                           next of each result, until a result has none:
//                           {pages: [one result per call]}
//   changes {min, more}     how many tools/list_changed arrived, waiting
//                           (10 s at most) until there are at least min,
//                           or more than the previous changes step saw
//   until_gone {tool}       tools/list again (10 s at most) until tool is
//                           not listed: the last listing, as list gives it
//   set_roots {roots}       new roots, announced with roots/list_changed
//   session                 the HTTP session id
//   terminate               ends the HTTP session (DELETE)
// The output: {"instructions", "server", "results": [one per step],
// "elicited": [the message of each elicitation the server sent]}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const plan = JSON.parse(await readStdin());
let roots = (plan.roots || []).map((uri) => ({ uri }));
const capabilities = plan.roots ? { roots: { listChanged: true } } : {};
if (plan.elicit) {
  capabilities.elicitation = { form: {} };
}
const client = new Client({ name: 'capkit-e2e-ts', version: '1' }, { capabilities });
const elicited = [];
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    elicited.push(req.params.message);
    return plan.elicit[elicited.length - 1] ?? { action: 'decline' };
  });
}
let listChanged = 0;
let seenChanges = 0; // what the last changes step saw
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
if (plan.roots) {
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }));
}

const transport = plan.transport === 'http'
  ? new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: plan.headers ?? {} } })
  : new StdioClientTransport({ command: plan.command, args: plan.args, cwd: plan.cwd, stderr: 'ignore' });
await client.connect(transport);

const results = [];
for (const step of plan.steps) {
  results.push({ op: step.op, tool: step.tool, ...(await run(step)) });
}
const out = { instructions: client.getInstructions() ?? '', server: client.getServerVersion(), results, elicited };
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');

async function run(step) {
  switch (step.op) {
    case 'list': {
      const { tools } = await client.listTools();
      return {
        tools: tools.map((t) => ({ name: t.name, title: t.title ?? '', output_schema: !!t.outputSchema })),
        bytes: Buffer.byteLength(JSON.stringify(tools)),
      };
    }
    case 'call': {
      if (!step.progress) return call(step, {});
      let progress = 0;
      const r = await call(step, { onprogress: () => { progress++; } });
      return { ...r, progress };
    }
    case 'cancel': {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), step.after_ms ?? 100);
      return call(step, { signal: ac.signal });
    }
    case 'follow': {
      const pages = [];
      let args = { ...(step.args ?? {}) };
      for (let i = 0; i < 1000 && args !== null; i++) { // a bound, not an expected count
        const r = await call({ tool: step.tool, args }, {});
        pages.push(r);
        const next = r.structured?.[step.next];
        args = next ? { ...args, [step.offset_arg]: next } : null;
      }
      return { pages };
    }
    case 'changes': {
      const want = Math.max(step.min ?? 0, seenChanges + (step.more ?? 0));
      const until = Date.now() + 10000; // a hang guard, not a timing check
      while (listChanged < want && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 10));
      }
      seenChanges = listChanged;
      return { list_changed: listChanged };
    }
    case 'until_gone': {
      const until = Date.now() + 10000; // a hang guard, not a timing check
      for (;;) {
        const { tools } = await client.listTools();
        if (!tools.some((t) => t.name === step.tool) || Date.now() > until) {
          return {
            tools: tools.map((t) => ({ name: t.name, title: t.title ?? '', output_schema: !!t.outputSchema })),
            bytes: Buffer.byteLength(JSON.stringify(tools)),
          };
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    case 'set_roots':
      roots = step.roots.map((uri) => ({ uri }));
      await client.sendRootsListChanged();
      return {};
    case 'session':
      return { session_id: transport.sessionId ?? '' };
    case 'terminate':
      await transport.terminateSession();
      return { session_id: transport.sessionId ?? '' };
  }
  return { thrown: { message: `unknown op ${step.op}` } };
}

// call runs one tools/call. What it returns carries the result as the SDK
// gave it, or, when callTool threw (a protocol error, an output-schema
// mismatch, an abort), the error's code and message.
async function call(step, options) {
  try {
    const r = await client.callTool({ name: step.tool, arguments: step.args ?? {} }, undefined, options);
    const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
    const types = (r.content ?? []).map((c) => c.type);
    return { is_error: !!r.isError, text, types, meta: r._meta ?? null, structured: r.structuredContent ?? null };
  } catch (e) {
    return { thrown: { code: e.code ?? null, name: e.name ?? '', message: String(e.message ?? e) } };
  }
}

function readStdin() {
  return new Promise((resolve, reject) => {
    let data = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (c) => { data += c; });
    process.stdin.on('end', () => resolve(data));
    process.stdin.on('error', reject);
  });
}
