// Drives Agentik's OpenAI-compatible door with the official clients, as
// their users write them: the openai npm SDK (Chat Completions, Responses,
// Conversations) and the Vercel AI SDK's streamText with @ai-sdk/openai's
// chat and responses providers. Each scenario prints one line
// "RESULT <name> <json>" that openaiapi/clients_test.go checks; the resume
// scenario prints "DROPPED" once it has dropped its stream mid-answer, so
// that the test lets the model go on.
//
// env: BASE_URL (…/v1), TOKEN, OTHER_TOKEN (another principal), MODEL.
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { streamText, jsonSchema, tool } from "ai";

const { BASE_URL, TOKEN, OTHER_TOKEN, MODEL } = process.env;
const client = new OpenAI({ baseURL: BASE_URL, apiKey: TOKEN, maxRetries: 0 });
const other = new OpenAI({ baseURL: BASE_URL, apiKey: OTHER_TOKEN, maxRetries: 0 });

const result = (name, value) => console.log(`RESULT ${name} ${JSON.stringify(value)}`);
const errorOf = (e) => ({ status: e.status, type: e.error?.type ?? e.type, code: e.code, param: e.param });

const pickColor = {
  type: "function",
  function: { name: "pick_color", description: "Ask the user for a color", parameters: { type: "object", properties: { hint: { type: "string" } } } },
};

async function chat() {
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Capital?" }];
  const first = await client.chat.completions.create({ model: MODEL, messages, temperature: 0.3, seed: 7, user: "u1" }).withResponse();
  messages.push(first.data.choices[0].message, { role: "user", content: "Population?" });
  const stream = await client.chat.completions.create({ model: MODEL, messages, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.role) role = c.delta.role;
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finish = c.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  result("chat", {
    first: first.data.choices[0].message.content, usage: first.data.usage, conversation: first.response.headers.get("x-agentik-conversation-id"),
    second: text, role, finish, streamUsage: usage,
  });
}

async function chatTools() {
  const messages = [{ role: "user", content: "Pick a color." }];
  const first = await client.chat.completions.create({ model: MODEL, messages, tools: [pickColor] });
  const msg = first.choices[0].message;
  messages.push(msg, { role: "tool", tool_call_id: msg.tool_calls[0].id, content: "green" });
  const second = await client.chat.completions.create({ model: MODEL, messages, tools: [pickColor] });
  // Approval: the completion says what waits; "yes" resolves it.
  const mail = [{ role: "user", content: "Mail bob." }];
  const asked = await client.chat.completions.create({ model: MODEL, messages: mail });
  mail.push(asked.choices[0].message, { role: "user", content: "yes" });
  const done = await client.chat.completions.create({ model: MODEL, messages: mail });
  let stale = null;
  try {
    await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }, { role: "tool", tool_call_id: "call_none", content: "x" }] });
  } catch (e) {
    stale = errorOf(e);
  }
  result("chat_tools", {
    finish: first.choices[0].finish_reason, call: msg.tool_calls[0].function, answer: second.choices[0].message.content,
    asked: asked.choices[0].message.content, approved: done.choices[0].message.content, stale,
  });
}

async function responses() {
  const first = await client.responses.create({ model: MODEL, input: "Capital?", instructions: "Be brief." });
  const stream = await client.responses.create({ model: MODEL, input: "Population?", previous_response_id: first.id, stream: true });
  const types = [];
  let text = "", last = -1, increasing = true, completed = null;
  for await (const ev of stream) {
    if (ev.sequence_number <= last) increasing = false;
    last = ev.sequence_number;
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed") completed = ev.response;
  }
  const got = await client.responses.retrieve(first.id);
  const items = await client.conversations.items.list(first.conversation.id, { order: "asc" });
  const input = await client.responses.inputItems.list(completed.id);
  result("responses", {
    first: first.output_text, status: first.status, usage: first.usage, second: text, increasing,
    firstTypes: types.slice(0, 2), lastType: types.at(-1), completedText: completed?.output_text ?? completed?.output?.at(-1)?.content?.[0]?.text,
    retrieved: got.output_text, sameConversation: completed?.conversation?.id === first.conversation.id,
    items: items.data.map((i) => i.role ?? i.type),
    inputItems: input.data.map((i) => [i.type, i.role, i.content?.[0]?.text]),
  });
}

async function responsesTools() {
  const tools = [{ type: "function", name: "pick_color", parameters: pickColor.function.parameters, strict: false }];
  const first = await client.responses.create({ model: MODEL, input: "Pick a color.", tools });
  const call = first.output.find((o) => o.type === "function_call");
  const second = await client.responses.create({
    model: MODEL, previous_response_id: first.id, tools, input: [{ type: "function_call_output", call_id: call.call_id, output: "blue" }],
  });
  const echo = await client.responses.create({ model: MODEL, input: "Use echo." });
  const mcp = echo.output.find((o) => o.type === "mcp_call");
  const asked = await client.responses.create({ model: MODEL, input: "Mail bob." });
  const req = asked.output.find((o) => o.type === "mcp_approval_request");
  const approved = await client.responses.create({
    model: MODEL, previous_response_id: asked.id, input: [{ type: "mcp_approval_response", approval_request_id: req.id, approve: true }],
  });
  // Denied: the tool does not run; the model answers the denial.
  const again = await client.responses.create({ model: MODEL, input: "Mail bob." });
  const req2 = again.output.find((o) => o.type === "mcp_approval_request");
  const denied = await client.responses.create({
    model: MODEL, previous_response_id: again.id, input: [{ type: "mcp_approval_response", approval_request_id: req2.id, approve: false }],
  });
  const deniedCall = denied.output.find((o) => o.type === "mcp_call");
  result("responses_tools", {
    call: { name: call.name, arguments: call.arguments }, answer: second.output_text,
    mcp: { name: mcp.name, output: mcp.output, status: mcp.status }, echoAnswer: echo.output_text,
    request: { name: req.name, arguments: req.arguments }, approved: approved.output_text,
    denied: denied.output_text, deniedCall: { status: deniedCall?.status, error: deniedCall?.error, output: deniedCall?.output ?? null },
  });
}

async function resume() {
  const stream = await client.responses.create({ model: MODEL, input: "Tell a story.", stream: true });
  let id = null, last = -1, text = "";
  for await (const ev of stream) {
    if (ev.type === "response.created") id = ev.response.id;
    last = ev.sequence_number;
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (text === "Once upon ") break;
  }
  stream.controller.abort();
  console.log("DROPPED");
  const rest = await client.responses.retrieve(id, { stream: true, starting_after: last });
  let increasing = true, status = null;
  for await (const ev of rest) {
    if (ev.sequence_number <= last) increasing = false;
    last = ev.sequence_number;
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed") status = ev.response.status;
  }
  result("resume", { text, increasing, status });
}

async function background() {
  const bg = await client.responses.create({ model: MODEL, input: "Count forever.", background: true });
  const s = await client.responses.retrieve(bg.id, { stream: true });
  for await (const ev of s) {
    if (ev.type === "response.output_text.delta") break;
  }
  const polled = await client.responses.retrieve(bg.id);
  const cancelled = await client.responses.cancel(bg.id);
  const after = await client.responses.retrieve(bg.id);
  result("background", { queued: bg.status, polled: polled.status, cancelled: cancelled.status, after: after.status, text: after.output_text });
}

async function errors() {
  const out = {};
  const attempt = async (name, f) => {
    try {
      await f();
      out[name] = "no error";
    } catch (e) {
      out[name] = errorOf(e);
    }
  };
  const mine = await client.responses.create({ model: MODEL, input: "Capital?" });
  await attempt("n", () => client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], n: 2 }));
  await attempt("format", () => client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], response_format: { type: "json_object" } }));
  await attempt("model", () => client.responses.create({ model: "nobody", input: "hi" }));
  await attempt("auth", () => new OpenAI({ baseURL: BASE_URL, apiKey: "wrong", maxRetries: 0 }).models.list());
  await attempt("other_retrieve", () => other.responses.retrieve(mine.id));
  await attempt("other_previous", () => other.responses.create({ model: MODEL, input: "hi", previous_response_id: mine.id }));
  await attempt("other_conversation", () => other.conversations.retrieve(mine.conversation.id));
  const models = await client.models.list();
  out.models = models.data.map((m) => [m.id, m.object, m.owned_by]);
  result("errors", out);
}

async function vercel() {
  const provider = createOpenAI({ baseURL: BASE_URL, apiKey: TOKEN });
  const chatRun = streamText({ model: provider.chat(MODEL), prompt: "Vercel chat." });
  let chatText = "";
  for await (const t of chatRun.textStream) chatText += t;
  const respRun = streamText({ model: provider.responses(MODEL), prompt: "Vercel responses." });
  let respText = "";
  for await (const t of respRun.textStream) respText += t;
  const chatUsage = await chatRun.usage;
  const respUsage = await respRun.usage;
  result("vercel", { chat: chatText, responses: respText, chatFinish: await chatRun.finishReason, responsesFinish: await respRun.finishReason,
    chatTokens: chatUsage.inputTokens, responsesTokens: respUsage.inputTokens });
}

const scenarios = { chat, chatTools, responses, responsesTools, resume, background, errors, vercel };
for (const name of process.argv.slice(2)) {
  try {
    await scenarios[name]();
  } catch (e) {
    console.log(`FAILED ${name} ${e?.stack ?? e}`);
  }
}
