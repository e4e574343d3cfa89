// The TypeScript SDK client's side of mcpload -client ts: it starts one
// stdio MCP server, lists its tools (as Claude Code and every SDK client
// do, which arms the output-schema check), makes the setup and warm-up
// calls, then the measured calls one at a time, awaiting each, and prints
// {tool, cpu_ticks, hwm_bytes, lat_ns, elapsed_ns, resp_bytes} as JSON.
// Server CPU is utime+stime of the server process (/proc/PID/stat) over
// the measured calls; peak memory its VmHWM. Linux only.
//
// Input (the JSON file its one argument names): {"command": [...], "setup": [[tool, args]...],
// "warmup": [[tool, args]...], "calls": [[tool, args]...]}.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const transport = new StdioClientTransport({ command: plan.command[0], args: plan.command.slice(1), stderr: 'inherit' });
const client = new Client({ name: 'mcpload-ts', version: '1' });
await client.connect(transport);
await client.listTools();
const pid = transport.pid;

async function call([tool, args]) {
  const r = await client.callTool({ name: tool, arguments: args });
  const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  if (r.isError) throw new Error(`${tool} failed: ${text.slice(0, 300)}`);
  return Buffer.byteLength(text);
}

function cpuTicks() {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 1).trim().split(/\s+/);
  return Number(f[11]) + Number(f[12]);
}

function peakRSS() {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)\s+kB/);
  return m ? Number(m[1]) * 1024 : 0;
}

for (const c of [...plan.setup, ...plan.warmup]) await call(c);
const lat = [];
let respBytes = 0;
const cpu0 = cpuTicks();
const start = process.hrtime.bigint();
for (const c of plan.calls) {
  const t0 = process.hrtime.bigint();
  respBytes = await call(c);
  lat.push(Number(process.hrtime.bigint() - t0));
}
const elapsed = Number(process.hrtime.bigint() - start);
const out = { tool: plan.calls[0][0], cpu_ticks: cpuTicks() - cpu0, hwm_bytes: peakRSS(), lat_ns: lat, elapsed_ns: elapsed, resp_bytes: respBytes };
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
