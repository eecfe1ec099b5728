// N connects of the TypeScript SDK client (the one Claude Desktop via mcp-remote, VS Code, Cursor and the
// Inspector use) to engram's /mcp, each on connections of its own, each with tool calls; prints one JSON
// line {connects, connected, calls, failed, errors}. Run by tests/mcp/test_mcp_real_clients.py.
//   node connects.mjs <mcp url> <bearer> <connects>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, fetch as undiciFetch } from "undici";

const [url, bearer, count] = process.argv.slice(2);
const report = { connects: Number(count), connected: 0, calls: 0, failed: 0, errors: [] };

for (let i = 0; i < report.connects; i++) {
  // pipelining 0: no keep-alive, so every request opens a connection and the kernel may hand it to any
  // serving process (SO_REUSEPORT); this is what a host's fetch does under load, made certain.
  const dispatcher = new Agent({ pipelining: 0 });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
    fetch: (input, init) => undiciFetch(input, { ...init, dispatcher }),
  });
  const client = new Client({ name: "connects", version: "1.0.0" });
  try {
    await client.connect(transport);
    report.connected++;
    const calls = [
      ["list_spaces", {}],
      ["remember", { text: `connect ${i}: the release train leaves on Thursdays` }],
      ["recall", { query: "when does the release train leave", limit: 3 }],
    ];
    for (const [name, args] of calls) {
      report.calls++;
      const result = await client.callTool({ name, arguments: args });
      if (result.isError) throw new Error(`${name}: ${result.content?.[0]?.text}`);
    }
    await client.listTools();
    await transport.terminateSession();
  } catch (err) {
    report.failed++;
    if (report.errors.length < 5) report.errors.push(`connect ${i}: ${err?.message ?? err}`);
  } finally {
    await client.close().catch(() => {});
    await dispatcher.close().catch(() => {});
  }
}
console.log(JSON.stringify(report));
