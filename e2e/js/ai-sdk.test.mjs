// The AI SDK's own chat client (AbstractChat with DefaultChatTransport, as
// useChat drives it) against POST /v1/ai-sdk/chat of `stepwise dev`: with
// ai 7 (the current major) and ai 6.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as ai7 from 'ai';
import * as ai6 from 'ai6';
import { startDev, getRun } from './stepwise.mjs';

let dev;
before(async () => { dev = await startDev(); });
after(async () => { await dev?.stop(); });

// MemoryState is the chat state useChat keeps in React, kept in memory.
class MemoryState {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage = (m) => { this.messages = [...this.messages, m]; };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = this.messages.map((old, j) => (j === i ? m : old)); };
  snapshot = (x) => structuredClone(x);
}

function newChat(sdk, { agent, fetch, sendAutomaticallyWhen, onToolCall, api }) {
  class Chat extends sdk.AbstractChat {
    constructor(init) { super({ ...init, state: new MemoryState() }); }
  }
  return new Chat({
    id: `chat-${Math.random().toString(36).slice(2, 10)}`,
    transport: new sdk.DefaultChatTransport({
      api: api ?? `${dev.base}/v1/ai-sdk/chat`, headers: dev.headers, body: agent ? { agent } : {}, fetch,
    }),
    sendAutomaticallyWhen: sendAutomaticallyWhen ?? sdk.lastAssistantMessageIsCompleteWithApprovalResponses,
    onToolCall,
    onError: () => {},
  });
}

async function until(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const last = (chat) => chat.messages[chat.messages.length - 1];
const texts = (msg) => msg.parts.filter((p) => p.type === 'text').map((p) => p.text);
const tools = (msg) => msg.parts.filter((p) => p.type === 'dynamic-tool');
const finished = (chat, text) => chat.status === 'ready' && last(chat)?.role === 'assistant' && texts(last(chat)).includes(text);

for (const [name, sdk] of [['ai 7', ai7], ['ai 6', ai6]]) {
  test(`${name}: a parked call is approved from the chat and the run finishes`, async () => {
    const chat = newChat(sdk, { agent: 'refunds' });
    await chat.sendMessage({ text: 'Refund order A-1001, please.' });
    const asked = last(chat);
    assert.equal(asked.id, chat.id, 'the message id is the run id');
    assert.deepEqual(texts(asked), ['Looking the order up.', 'Refunding it now.']);
    const [lookup, refund] = tools(asked);
    assert.equal(lookup.toolName, 'lookup_order');
    assert.equal(lookup.state, 'output-available');
    assert.deepEqual(lookup.output, { order_id: 'A-1001' });
    assert.equal(refund.toolName, 'issue_refund');
    assert.equal(refund.state, 'approval-requested');
    assert.equal((await getRun(dev, chat.id)).status, 'waiting');

    await chat.addToolApprovalResponse({ id: refund.approval.id, approved: true });
    await until('the run to finish', () => finished(chat, 'The refund is done.'));
    const done = last(chat);
    assert.equal(chat.messages.length, 2, 'one user message, one assistant message');
    assert.deepEqual(texts(done), ['Looking the order up.', 'Refunding it now.', 'The refund is done.']);
    const after = tools(done);
    assert.equal(after.length, 2);
    assert.equal(after[1].state, 'output-available');
    assert.deepEqual(after[1].output, { order_id: 'A-1001', amount: 250 });
    const run = await getRun(dev, chat.id);
    assert.equal(run.status, 'done');
    assert.equal(run.termination.reason, 'natural_end');
  });

  test(`${name}: a denied approval cancels the call and the run goes on`, async () => {
    const chat = newChat(sdk, { agent: 'refunds' });
    await chat.sendMessage({ text: 'Refund order A-1001, please.' });
    const refund = tools(last(chat))[1];
    await chat.addToolApprovalResponse({ id: refund.approval.id, approved: false, reason: 'too much' });
    await until('the run to finish', () => finished(chat, 'The refund is done.'));
    assert.equal(tools(last(chat))[1].state, 'output-denied');
    const run = await getRun(dev, chat.id);
    assert.equal(run.status, 'done');
    const call = run.tool_calls.find((c) => c.tool === 'issue_refund');
    assert.equal(call.status, 'cancelled');
    assert.match(JSON.stringify(call), /too much/);
  });

  test(`${name}: addToolOutput of a frontend tool resumes its parked call with the output`, async () => {
    const called = [];
    let chat;
    chat = newChat(sdk, {
      // The agent in the query, as the routes' contract has it.
      api: `${dev.base}/v1/ai-sdk/chat?agent=locate`,
      sendAutomaticallyWhen: sdk.lastAssistantMessageIsCompleteWithToolCalls,
      // As useChat's docs have it: the client runs its tool and adds the
      // output, without awaiting it inside the callback.
      onToolCall: ({ toolCall }) => {
        called.push(toolCall.toolName);
        if (toolCall.toolName === 'get_location') {
          chat.addToolOutput({ tool: 'get_location', toolCallId: toolCall.toolCallId, output: { city: 'Lisbon' } });
        }
      },
    });
    await chat.sendMessage({ text: 'Where am I?' });
    await until('the run to finish', () => finished(chat, 'You are in the city you told me.'));
    assert.deepEqual(called, ['get_location'], 'only the frontend tool is the client\'s to run');
    const done = last(chat);
    assert.equal(chat.messages.length, 2, 'one user message, one assistant message');
    assert.deepEqual(texts(done), ['Let me see where you are.', 'You are in the city you told me.']);
    const [lookup, located] = tools(done);
    assert.equal(lookup.providerExecuted, true);
    assert.equal(located.toolName, 'get_location');
    assert.equal(located.state, 'output-available');
    assert.equal(located.approval, undefined, 'a frontend tool asks for no approval');
    assert.deepEqual(located.output, { city: 'Lisbon' });
    const run = await getRun(dev, chat.id);
    assert.equal(run.status, 'done');
    assert.equal(run.agent, 'locate');
    const call = run.tool_calls.find((c) => c.tool === 'get_location');
    assert.equal(call.status, 'succeeded');
    assert.deepEqual(call.result, { city: 'Lisbon' });
  });

  test(`${name}: a stream cut in the middle resumes with nothing lost and nothing repeated`, async () => {
    let cut = true;
    const cutting = async (url, init) => {
      const res = await fetch(url, init);
      if (init?.method !== 'POST' || !cut) return res;
      cut = false;
      // Pass the first text deltas on, then fail as a dropped connection does.
      const reader = res.body.getReader();
      let deltas = 0;
      const body = new ReadableStream({
        async pull(ctrl) {
          const { done, value } = await reader.read();
          if (done) return ctrl.close();
          ctrl.enqueue(value);
          deltas += (new TextDecoder().decode(value).match(/"text-delta"/g) ?? []).length;
          if (deltas >= 3) {
            reader.cancel().catch(() => {});
            ctrl.error(new TypeError('network error: the connection was reset'));
          }
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const chat = newChat(sdk, { agent: 'slow', fetch: cutting });
    await chat.sendMessage({ text: 'Take your time.' });
    assert.equal(chat.status, 'error', 'the cut stream ends the request in error');
    const partial = texts(last(chat)).join('');
    assert.ok(partial.length > 0 && partial.length < 'First I will wait a little while.'.length + 1, `partial text ${JSON.stringify(partial)}`);

    await chat.resumeStream();
    await until('the resumed run to finish', () => finished(chat, 'And now I am done.'));
    const done = last(chat);
    assert.equal(chat.messages.length, 2);
    assert.deepEqual(texts(done), ['First I will wait a little while.', 'Then I will wait once more.', 'And now I am done.']);
    assert.deepEqual(tools(done).map((p) => p.state), ['output-available', 'output-available']);
    assert.equal((await getRun(dev, chat.id)).status, 'done');
  });
}

test('ai 7: a big tool input and output come through the stream whole', async () => {
  const chat = newChat(ai7, { agent: 'bigecho' });
  await chat.sendMessage({ text: 'Echo this.' });
  await until('the answer', () => finished(chat, 'Echoed.'));
  assert.deepEqual(texts(last(chat)), ['Echoing it.', 'Echoed.']);
  const [echo] = tools(last(chat));
  const text = '0123456789'.repeat(60);
  assert.equal(echo.toolName, 'echo');
  assert.equal(echo.state, 'output-available');
  assert.deepEqual(echo.input, { text });
  assert.deepEqual(echo.output, { text }, 'echo returns its arguments');
});

test('ai 7: a new user message continues the conversation in the next turn', async () => {
  const chat = newChat(ai7, { agent: 'echo' });
  await chat.sendMessage({ text: 'hello' });
  assert.deepEqual(texts(last(chat)), ['Noted.', 'Anything else?']);
  await chat.sendMessage({ text: 'and again' });
  assert.equal(chat.messages.length, 4);
  assert.equal(last(chat).id, `${chat.id}~2`, 'the second turn is its own run');
  assert.deepEqual(texts(last(chat)), ['Noted.', 'Anything else?']);
  const res = await fetch(`${dev.base}/v1/runs/${encodeURIComponent(`${chat.id}~2`)}/messages`, { headers: dev.headers });
  const { messages } = await res.json();
  const users = messages.filter((m) => m.role === 'user').map((m) => m.content);
  assert.deepEqual(users, ['hello', 'and again'], 'the second turn carries the first');
  assert.ok(messages.some((m) => m.role === 'tool'), 'with the first turn\'s tool results');
});

test('ai 7: readUIMessageStream reads a resumed stream into the same message', async () => {
  const chat = newChat(ai7, { agent: 'echo' });
  await chat.sendMessage({ text: 'hello' });
  const transport = new ai7.DefaultChatTransport({ api: `${dev.base}/v1/ai-sdk/chat`, headers: dev.headers });
  const stream = await transport.reconnectToStream({ chatId: chat.id });
  let message;
  for await (const m of ai7.readUIMessageStream({ stream })) message = m;
  assert.deepEqual(message, last(chat));
  assert.equal(await transport.reconnectToStream({ chatId: 'no-such-chat' }), null, 'a chat with no turn: 204');
});
