// The official TypeScript SDK (@mistralai/mistralai) against a live Maestrale server.
//
//   node scenarios.mjs SCENARIO      (MAESTRALE_URL and MAESTRALE_API_KEY in the environment)
//
// Each scenario drives one API group through the SDK, which parses (and so checks) every
// response with its own schemas, and prints what it observed as one JSON line on stdout for
// tests/conformance/test_typescript_sdk.py to assert on. Any error (a response the SDK cannot
// parse, an unexpected status) ends the process with status 1 and the error on stderr.

import { Mistral } from "@mistralai/mistralai";

const ECHO = "maestrale-echo";
const EMBED = "maestrale-embed";

const client = new Mistral({
  apiKey: process.env.MAESTRALE_API_KEY,
  serverURL: process.env.MAESTRALE_URL,
});

const user = (content) => [{ role: "user", content }];

async function statusOf(promise) {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (typeof error?.statusCode === "number") return error.statusCode;
    throw error;
  }
}

async function text(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function waitForJob(id, timeoutMs = 30000) {
  const terminal = new Set(["SUCCESS", "FAILED", "CANCELLED", "TIMEOUT_EXCEEDED"]);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await client.batch.jobs.get({ jobId: id });
    if (terminal.has(job.status)) return job;
    if (Date.now() > deadline) throw new Error(`batch job ${id} still ${job.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const scenarios = {
  async chat() {
    const plain = await client.chat.complete({ model: ECHO, messages: user("hello") });
    const weather = {
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
      },
    };
    const called = await client.chat.complete({
      model: ECHO,
      messages: user('/call get_weather {"city": "Paris"}'),
      tools: [weather],
    });
    const call = called.choices[0].message.toolCalls[0];
    const answered = await client.chat.complete({
      model: ECHO,
      messages: [
        ...user("weather?"),
        { role: "assistant", content: "", toolCalls: [call] },
        { role: "tool", toolCallId: call.id, name: "get_weather", content: "sunny" },
      ],
      tools: [weather],
    });
    const json = await client.chat.complete({
      model: ECHO,
      messages: user("shape"),
      responseFormat: { type: "json_object" },
    });
    const truncated = await client.chat.complete({
      model: ECHO,
      messages: user("one two three four five"),
      maxTokens: 2,
    });
    const fim = await client.fim.complete({ model: ECHO, prompt: "def f(", suffix: "return" });
    return {
      id: plain.id,
      object: plain.object,
      model: plain.model,
      content: plain.choices[0].message.content,
      finishReason: plain.choices[0].finishReason,
      usage: plain.usage,
      toolFinish: called.choices[0].finishReason,
      toolName: call.function.name,
      toolArguments: JSON.parse(call.function.arguments),
      toolAnswer: answered.choices[0].message.content,
      json: JSON.parse(json.choices[0].message.content),
      truncatedFinish: truncated.choices[0].finishReason,
      fim: fim.choices[0].message.content,
      unknownModel: await statusOf(client.chat.complete({ model: "nope", messages: user("x") })),
    };
  },

  async chat_stream() {
    const stream = await client.chat.stream({ model: ECHO, messages: user("one two three") });
    let content = "";
    let chunks = 0;
    let finishReason = null;
    let usage = null;
    for await (const event of stream) {
      chunks += 1;
      const choice = event.data.choices[0];
      content += choice?.delta?.content ?? "";
      finishReason = choice?.finishReason ?? finishReason;
      usage = event.data.usage ?? usage;
    }
    const fim = await client.fim.stream({ model: ECHO, prompt: "abc" });
    let fimContent = "";
    for await (const event of fim) fimContent += event.data.choices[0]?.delta?.content ?? "";
    return { content, chunks, finishReason, usage, fim: fimContent };
  },

  async embeddings() {
    const response = await client.embeddings.create({
      model: EMBED,
      inputs: ["the cat sat on the mat", "a cat sat on a mat", "quarterly revenue grew"],
    });
    const single = await client.embeddings.create({ model: EMBED, inputs: "hello" });
    const vectors = response.data.map((item) => item.embedding);
    const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
    return {
      object: response.object,
      model: response.model,
      count: response.data.length,
      indexes: response.data.map((item) => item.index),
      dimensions: vectors[0].length,
      similar: dot(vectors[0], vectors[1]),
      different: dot(vectors[0], vectors[2]),
      single: single.data.length,
      usage: response.usage,
      wrongModel: await statusOf(client.embeddings.create({ model: ECHO, inputs: ["x"] })),
    };
  },

  async files() {
    const content = '{"custom_id": "a", "body": {"messages": []}}\n';
    const created = await client.files.upload({
      file: { fileName: "ts-requests.jsonl", content: new TextEncoder().encode(content) },
      purpose: "batch",
    });
    const listed = await client.files.list({ pageSize: 100, purpose: "batch" });
    const retrieved = await client.files.retrieve({ fileId: created.id });
    const downloaded = await text(await client.files.download({ fileId: created.id }));
    const signed = await client.files.getSignedUrl({ fileId: created.id, expiry: 1 });
    const fetched = await (await fetch(signed.url)).text();
    const blob = await client.files.upload({
      file: new Blob(["plain text"], { type: "text/plain" }),
      purpose: "ocr",
    });
    const deleted = await client.files.delete({ fileId: created.id });
    await client.files.delete({ fileId: blob.id });
    return {
      id: created.id,
      filename: created.filename,
      purpose: created.purpose,
      bytes: created.sizeBytes,
      numLines: created.numLines,
      listed: listed.data.some((file) => file.id === created.id),
      total: listed.total,
      retrieved: retrieved.id === created.id && retrieved.deleted === false,
      downloaded,
      fetched,
      blobPurpose: blob.purpose,
      deleted: deleted.deleted,
      afterDelete: await statusOf(client.files.retrieve({ fileId: created.id })),
    };
  },

  async batch() {
    const requests = ["first", "second", "/fail 400"].map((content, i) => ({
      customId: String(i),
      body: { messages: user(content) },
    }));
    const inline = await client.batch.jobs.create({
      requests,
      model: ECHO,
      endpoint: "/v1/chat/completions",
      metadata: { job_type: "ts-testing" },
    });
    const done = await waitForJob(inline.id);
    const withOutputs = await client.batch.jobs.get({ jobId: inline.id, inline: true });
    const lines = [
      { custom_id: "e1", body: { input: ["embed me"] } },
      { custom_id: "e2", body: { input: "me too" } },
    ];
    const input = await client.files.upload({
      file: {
        fileName: "ts-embeddings.jsonl",
        content: new TextEncoder().encode(lines.map((l) => JSON.stringify(l)).join("\n")),
      },
      purpose: "batch",
    });
    const fromFile = await client.batch.jobs.create({
      inputFiles: [input.id],
      model: EMBED,
      endpoint: "/v1/embeddings",
    });
    const fileDone = await waitForJob(fromFile.id);
    const output = await text(await client.files.download({ fileId: fileDone.outputFile }));
    const listed = await client.batch.jobs.list({ metadata: { job_type: "ts-testing" } });
    const cancelled = await client.batch.jobs.cancel({ jobId: fromFile.id });
    const removed = await client.batch.jobs.delete({ jobId: fromFile.id });
    return {
      created: { object: inline.object, status: inline.status, total: inline.totalRequests },
      status: done.status,
      counts: [done.succeededRequests, done.failedRequests],
      outputs: withOutputs.outputs.map((o) => [o.custom_id, o.response?.status_code]),
      errorFile: Boolean(done.errorFile),
      fileStatus: fileDone.status,
      fileOutputs: output.trim().split("\n").map((l) => JSON.parse(l).custom_id),
      listed: listed.data.map((job) => job.id),
      listedTotal: listed.total,
      inlineId: inline.id,
      cancelledStatus: cancelled.status,
      deleted: removed.deleted,
      unsupported: await statusOf(
        client.batch.jobs.create({ requests, model: ECHO, endpoint: "/v1/nope" }),
      ),
    };
  },

  async agents() {
    const created = await client.beta.agents.create({
      model: ECHO,
      name: "ts-helper",
      instructions: "Be brief.",
      description: "made by the TypeScript SDK",
      tools: [
        {
          type: "function",
          function: { name: "lookup", parameters: { type: "object", properties: {} } },
        },
      ],
      completionArgs: { temperature: 0.2 },
      metadata: { team: "ts" },
    });
    const got = await client.beta.agents.get({ agentId: created.id });
    const updated = await client.beta.agents.update({
      agentId: created.id,
      updateAgentRequest: { instructions: "Be very brief." },
    });
    const versions = await client.beta.agents.listVersions({ agentId: created.id });
    const first = await client.beta.agents.getVersion({ agentId: created.id, version: "1" });
    const alias = await client.beta.agents.createVersionAlias({
      agentId: created.id,
      alias: "stable",
      version: 1,
    });
    const switched = await client.beta.agents.updateVersion({ agentId: created.id, version: 1 });
    const listed = await client.beta.agents.list({ pageSize: 100 });
    const completion = await client.agents.complete({
      agentId: created.id,
      messages: user("hi agent"),
    });
    await client.beta.agents.delete({ agentId: created.id });
    return {
      object: created.object,
      name: created.name,
      version: created.version,
      tool: created.tools[0].type,
      temperature: created.completionArgs?.temperature,
      gotModel: got.model,
      updatedVersion: updated.version,
      updatedInstructions: updated.instructions,
      versions: versions.map((v) => v.version).sort(),
      firstInstructions: first.instructions,
      alias: [alias.alias, alias.version],
      switched: switched.version,
      listed: listed.some((agent) => agent.id === created.id),
      completion: completion.choices[0].message.content,
      afterDelete: await statusOf(client.beta.agents.get({ agentId: created.id })),
    };
  },

  async conversations() {
    const started = await client.beta.conversations.start({
      model: ECHO,
      inputs: "hello",
      instructions: "Be brief.",
      name: "ts-chat",
    });
    const id = started.conversationId;
    const appended = await client.beta.conversations.append({
      conversationId: id,
      conversationAppendRequest: { inputs: "again" },
    });
    const got = await client.beta.conversations.get({ conversationId: id });
    const history = await client.beta.conversations.getHistory({ conversationId: id });
    const messages = await client.beta.conversations.getMessages({ conversationId: id });
    const listed = await client.beta.conversations.list({ pageSize: 100 });
    const restarted = await client.beta.conversations.restart({
      conversationId: id,
      conversationRestartRequest: { fromEntryId: history.entries[1].id, inputs: "instead" },
    });
    const stream = await client.beta.conversations.startStream({ model: ECHO, inputs: "streamed" });
    const events = [];
    let streamedText = "";
    for await (const event of stream) {
      events.push(event.event);
      if (event.data.type === "message.output.delta") streamedText += event.data.content;
    }
    const appendStream = await client.beta.conversations.appendStream({
      conversationId: id,
      conversationAppendStreamRequest: { inputs: "more" },
    });
    const appendEvents = [];
    for await (const event of appendStream) appendEvents.push(event.event);
    const agent = await client.beta.agents.create({ model: ECHO, name: "ts-conversation" });
    const onAgent = await client.beta.conversations.start({ agentId: agent.id, inputs: "hey" });
    await client.beta.conversations.delete({ conversationId: id });
    return {
      object: started.object,
      output: started.outputs[0].content,
      outputType: started.outputs[0].type,
      usage: started.usage,
      appended: appended.outputs[0].content,
      gotModel: got.model,
      gotName: got.name,
      history: history.entries.map((entry) => [entry.type, entry.content]),
      messages: messages.messages.length,
      listed: listed.some((conversation) => conversation.id === id),
      restarted: restarted.outputs[0].content,
      restartedNew: restarted.conversationId !== id,
      events,
      streamedText,
      appendEvents,
      agentOutput: onAgent.outputs[0].content,
      agentId: onAgent.outputs[0].agentId === agent.id,
      afterDelete: await statusOf(client.beta.conversations.get({ conversationId: id })),
    };
  },
};

const name = process.argv[2];
if (!(name in scenarios)) {
  console.error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
try {
  console.log(JSON.stringify(await scenarios[name]()));
} catch (error) {
  console.error(error?.stack ?? String(error));
  if (error?.statusCode !== undefined) console.error(`status ${error.statusCode}: ${error.body}`);
  if (error?.cause !== undefined) console.error("cause:", error.cause);
  process.exit(1);
}
