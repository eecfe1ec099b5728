// The TypeScript SDK client (what Claude Desktop via mcp-remote, VS Code, Cursor and the Inspector use)
// through every part of engram's MCP server: initialize, tools/list with its schemas compiled and every
// answer validated against its outputSchema, every tool with valid and invalid arguments, the resource
// template, the prompt, the spec's error codes, cancellation, and (HTTP) DELETE ending the session. Prints one JSON line
// {checks: [{name, ok, detail}]}. Run by tests/mcp/test_mcp_real_clients.py.
//   node tour.mjs http <mcp url> <bearer>
//   node tour.mjs oauth <mcp url>     the SDK's own OAuth: discovery, registration, PKCE; it prints
//                                     {"authorize": url} for a browser to approve, and takes the code at
//                                     its loopback redirect URI, as a desktop host does
//   node tour.mjs stdio <command> <args...>      (the environment is passed on)
import { createServer } from "node:http";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Ajv } from "ajv";

const [mode, ...rest] = process.argv.slice(2);
const checks = [];
const check = (name, ok, detail = "") => checks.push({ name, ok: Boolean(ok), detail: String(detail).slice(0, 500) });
const ajv = new Ajv({ strict: false, allErrors: true });

async function refused(name, promise) {
  // A protocol error (a JSON-RPC error), with its code.
  try {
    await promise;
    return { code: null, message: `${name}: no error` };
  } catch (err) {
    return { code: err?.code ?? null, message: String(err?.message ?? err) };
  }
}

// The redirect URI a desktop host listens on (RFC 8252 loopback redirect): resolves with the code.
async function loopbackRedirect() {
  let done;
  const code = new Promise((resolve) => (done = resolve));
  const server = createServer((req, res) => {
    const params = new URL(req.url, "http://127.0.0.1").searchParams;
    res.writeHead(200, { "Content-Type": "text/html" }).end("<!doctype html><title>connected</title>done");
    done(params.get("code"));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/callback`, code, close: () => server.close() };
}

class MemoryProvider {
  constructor(redirectUrl) {
    this.redirect = redirectUrl;
    this.saved = {};
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: "engram tour (TypeScript SDK)",
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      scope: "memories:read memories:write",
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    console.log(JSON.stringify({ authorize: url.href })); // the test's browser opens it
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

let transport;
let bearer;
if (mode === "http") {
  const [url, key] = rest;
  bearer = () => key;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
} else if (mode === "oauth") {
  const [url] = rest;
  const redirect = await loopbackRedirect();
  const provider = new MemoryProvider(redirect.url);
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await new Client({ name: "engram-tour", version: "1.0.0" }).connect(first);
    check("the first connect asks for authorization", false, "it connected without a token");
  } catch (err) {
    check("the first connect asks for authorization", err instanceof UnauthorizedError, err?.message);
  }
  const code = await redirect.code;
  redirect.close();
  await first.finishAuth(code); // the code and the PKCE verifier for tokens
  check("the code was exchanged for tokens", provider.tokens()?.access_token && provider.tokens()?.refresh_token);
  check("the client registered itself", provider.clientInformation()?.client_id);
  bearer = () => provider.tokens()?.access_token;
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
} else {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
}
const client = new Client({ name: "engram-tour", version: "1.0.0" });

try {
  await client.connect(transport);
  const server = client.getServerVersion();
  check("initialize names the server", server?.name === "engram", JSON.stringify(server));
  check("initialize offers tools, resources and prompts", ["tools", "resources", "prompts"].every((c) => client.getServerCapabilities()?.[c]));

  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const expected = ["remember", "recall", "get_memory", "list_memories", "forget", "list_spaces"];
  check("tools/list lists the six tools", expected.every((n) => byName[n]) && tools.length === 6, Object.keys(byName));
  const validators = {};
  for (const tool of tools) {
    try {
      ajv.compile(tool.inputSchema);
      validators[tool.name] = ajv.compile(tool.outputSchema);
      const outputTyped = tool.outputSchema.type === "object" && Object.keys(tool.outputSchema.properties ?? {}).length > 0;
      check(`${tool.name}: input and output schemas compile, the output is typed`, outputTyped, JSON.stringify(tool.outputSchema).slice(0, 200));
    } catch (err) {
      check(`${tool.name}: input and output schemas compile`, false, err.message);
    }
  }
  const reads = ["recall", "get_memory", "list_memories", "list_spaces"];
  check("read tools say readOnlyHint", reads.every((n) => byName[n]?.annotations?.readOnlyHint === true));
  check("forget says destructiveHint", byName.forget?.annotations?.destructiveHint === true);
  check("remember is not destructive", byName.remember?.annotations?.destructiveHint === false);

  async function call(name, args) {
    const result = await client.callTool({ name, arguments: args });
    const text = result.content?.[0]?.text ?? "";
    if (!result.isError && validators[name] && !validators[name](result.structuredContent)) {
      check(`${name}: answer matches its outputSchema`, false, JSON.stringify(validators[name].errors));
    }
    return { ...result, text };
  }
  const ok = (name, result, test, detail) => check(name, !result.isError && test, detail ?? result.text);
  const error = (name, result, prefix) => check(name, result.isError && result.text.startsWith(prefix), result.text);

  const fact = `The tour's release train leaves on Thursdays at ${Date.now()}.`;
  const made = await call("remember", { text: fact, tags: ["tour"] });
  ok("remember writes a memory", made, made.structuredContent?.uri?.startsWith("at://") && made.structuredContent.duplicate === false);
  const again = await call("remember", { text: fact, tags: ["tour"] });
  ok("remember the same text: the same memory", again, again.structuredContent?.duplicate === true && again.structuredContent.uri === made.structuredContent?.uri);
  error("remember without text: InvalidRequest naming the argument", await call("remember", {}), "InvalidRequest: text");
  const tooLong = await call("remember", { text: "x".repeat(30001) });
  error("remember too long: InvalidRequest", tooLong, "InvalidRequest: text");
  check("a validation error carries no pydantic report", !tooLong.text.includes("pydantic") && !tooLong.text.includes("x".repeat(50)), tooLong.text);
  const uri = made.structuredContent?.uri;

  const hits = await call("recall", { query: "when does the release train leave", tags: ["tour"] });
  ok("recall finds it first", hits, hits.structuredContent?.results?.[0]?.uri === uri);
  error("recall with an unknown mode: InvalidMode", await call("recall", { query: "x", mode: "psychic" }), "InvalidMode:");
  error("recall without a query: InvalidRequest", await call("recall", {}), "InvalidRequest: query");
  error("recall of an unknown space: UnknownSpace", await call("recall", { query: "x", space: "nope" }), "UnknownSpace:");

  const got = await call("get_memory", { uri });
  ok("get_memory reads it", got, got.structuredContent?.text === fact);
  error("get_memory of a bad uri: InvalidUri", await call("get_memory", { uri: "not a uri" }), "InvalidUri:");
  const missing = uri.replace(/[^/]+$/, "3zzzzzzzzzzzz");
  error("get_memory of a missing memory: MemoryNotFound", await call("get_memory", { uri: missing }), "MemoryNotFound:");

  const page = await call("list_memories", { tags: ["tour"], limit: 10 });
  ok("list_memories lists it", page, page.structuredContent?.memories?.some((m) => m.uri === uri));
  error("list_memories with limit 0: InvalidRequest", await call("list_memories", { limit: 0 }), "InvalidRequest: limit");

  const spaces = await call("list_spaces", {});
  ok("list_spaces shows a writable default space", spaces, spaces.structuredContent?.spaces?.some((s) => s.default && s.write));
  error("list_memories with a limit that is no number: InvalidRequest", await call("list_memories", { limit: "many" }), "InvalidRequest: limit");

  const templates = await client.listResourceTemplates();
  check("the memory resource template is listed", templates.resourceTemplates.some((t) => t.uriTemplate === "at://{+path}"));
  const read = await client.readResource({ uri });
  check("the memory reads as a resource", JSON.parse(read.contents[0].text).text === fact);
  const gone = await refused("resources/read", client.readResource({ uri: missing }));
  check("a missing resource is -32002", gone.code === -32002, JSON.stringify(gone));

  const { prompts } = await client.listPrompts();
  check("the use_memory prompt is listed", prompts.some((p) => p.name === "use_memory"));
  const prompt = await client.getPrompt({ name: "use_memory" });
  check("the prompt tells the agent to recall", prompt.messages[0].content.text.includes("recall"));
  const noPrompt = await refused("prompts/get", client.getPrompt({ name: "no_such_prompt" }));
  check("an unknown prompt is -32602", noPrompt.code === -32602, JSON.stringify(noPrompt));
  const noTool = await refused("tools/call", client.callTool({ name: "teleport", arguments: {} }));
  check("an unknown tool is -32602", noTool.code === -32602, JSON.stringify(noTool));

  // Cancellation: the SDK sends notifications/cancelled and drops the call; the server may ignore it
  // (docs/mcp.md#sessions), and the session goes on.
  const controller = new AbortController();
  const pending = client.callTool({ name: "recall", arguments: { query: "anything" } }, undefined, { signal: controller.signal });
  controller.abort("the user changed their mind");
  check("a cancelled call is abandoned", await pending.then(() => false, () => true));
  const afterCancel = await call("list_spaces", {});
  ok("the session goes on after a cancellation", afterCancel, afterCancel.structuredContent?.spaces?.length > 0);

  const forgot = await call("forget", { uri });
  ok("forget deletes it", forgot, forgot.structuredContent?.deleted === true);
  const twice = await call("forget", { uri });
  ok("forget again: nothing to delete", twice, twice.structuredContent?.deleted === false);
  error("forget of a bad uri: InvalidUri", await call("forget", { uri: "nope" }), "InvalidUri:");
  const after = await call("recall", { query: "when does the release train leave", tags: ["tour"] });
  ok("recall no longer finds it", after, !after.structuredContent?.results?.some((r) => r.uri === uri));

  if (mode !== "stdio") {
    const session = transport.sessionId;
    check("a session id was given", typeof session === "string" && session.length >= 32, session);
    await transport.terminateSession();
    const [url] = rest;
    const late = await fetch(url, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${bearer()}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": transport.protocolVersion ?? "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list" }),
    });
    check("after DELETE the session is gone (404)", late.status === 404, late.status);
  }
} catch (err) {
  check("the tour ran to its end", false, err?.stack ?? err);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify({ checks }));
