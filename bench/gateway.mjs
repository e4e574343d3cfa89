// The gateway's side-by-side figures (bench/gateway.sh), with the
// TypeScript SDK's client over stdio; each mode prints one JSON line.
//   node gateway.mjs echo N COMMAND ARG...   lists the tools, then calls
//       echo (or everything__echo, whichever is listed or callable) N
//       times after 50 warm-up calls: p50 and p90 in microseconds, and
//       the CPU time per call of the process COMMAND started (utime and
//       stime of /proc/PID/stat, its children not counted: the server
//       directly, capkit or the relay without the server behind them)
//   node gateway.mjs list COMMAND ARG...     the first tools/list: tools, bytes
//   node gateway.mjs serve N                 an MCP server over stdio with N tools
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'serve') {
  await serve(Number(rest[0]));
} else {
  const n = mode === 'echo' ? Number(rest.shift()) : 0;
  const [command, ...args] = rest;
  const client = new Client({ name: 'capkit-bench-gateway', version: '1' });
  const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  if (mode === 'list') {
    process.stdout.write(JSON.stringify({ tools: tools.length, bytes: Buffer.byteLength(JSON.stringify(tools)) }) + '\n');
  } else {
    const name = tools.some((t) => t.name === 'echo') ? 'echo' : 'everything__echo';
    const call = async () => {
      const r = await client.callTool({ name, arguments: { message: 'hello' } });
      if (r.isError) throw new Error(JSON.stringify(r));
    };
    for (let i = 0; i < 50; i++) await call();
    const us = [];
    const cpu0 = cpuTicks(transport.pid);
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await call();
      us.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    const cpu = cpuTicks(transport.pid) - cpu0;
    us.sort((a, b) => a - b);
    const q = (p) => Math.round(us[Math.min(us.length - 1, Math.floor(p * us.length))]);
    // Clock ticks are USER_HZ (100 a second) on Linux.
    const cpuUs = Math.round((cpu * 10000) / n);
    process.stdout.write(JSON.stringify({ tool: name, calls: n, p50_us: q(0.5), p90_us: q(0.9), server_cpu_us_per_call: cpuUs }) + '\n');
  }
  await client.close();
}

// cpuTicks is the user and system time of process pid, in clock ticks.
function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]); // utime and stime: fields 14 and 15 of stat(5)
}

// serve is an MCP server whose n tools look like a real server's: a
// name, a sentence of description and a small input schema each.
async function serve(n) {
  const tools = Array.from({ length: n }, (_, i) => ({
    name: `op_${String(i).padStart(3, '0')}`,
    description: `Runs operation ${i} of the inventory service on one record and returns its new state.`,
    inputSchema: { type: 'object', properties: { id: { type: 'string', description: 'The record id.' }, note: { type: 'string' } }, required: ['id'] },
  }));
  const server = new Server({ name: 'many-tools', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, (req) => ({ content: [{ type: 'text', text: `${req.params.name} done` }] }));
  await server.connect(new StdioServerTransport());
}
