// @ag-ui/client's HttpAgent against POST /v1/ag-ui/run of `stepwise dev`:
// a run that interrupts for an approval, is resumed, and finishes; one
// with a big tool call and result; one whose interrupt is cancelled; a
// thread that goes on; and a frontend tool the client runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { HttpAgent } from '@ag-ui/client';
import { EventSchema } from '@ag-ui/core/schemas';
import { startDev, getRun } from './stepwise.mjs';

let dev;
before(async () => { dev = await startDev(); });
after(async () => { await dev?.stop(); });

function newAgent(query = '') {
  const agent = new HttpAgent({
    url: `${dev.base}/v1/ag-ui/run${query}`,
    headers: dev.headers,
    threadId: `thread-${Math.random().toString(36).slice(2, 10)}`,
  });
  const events = [];
  agent.subscribe({ onEvent: ({ event }) => { events.push(event); } });
  return { agent, events };
}

const say = (agent, text) => agent.addMessage({ id: `u-${Math.random()}`, role: 'user', content: text });
const types = (events) => events.map((e) => e.type);
const texts = (agent) => agent.messages.filter((m) => m.role === 'assistant' && m.content).map((m) => m.content);

test('a run that interrupts for an approval is resumed and finishes', async () => {
  const { agent, events } = newAgent();
  say(agent, 'Refund order A-1001, please.');
  await agent.runAgent({ forwardedProps: { agent: 'refunds' } });
  for (const e of events) EventSchema.parse(e); // every event as @ag-ui/core defines it
  const finished = events.at(-1);
  assert.equal(finished.type, 'RUN_FINISHED');
  assert.equal(finished.outcome.type, 'interrupt');
  assert.equal(finished.outcome.interrupts.length, 1);
  const [interrupt] = finished.outcome.interrupts;
  assert.equal(interrupt.reason, 'tool_approval');
  const refund = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === 'issue_refund');
  assert.equal(interrupt.toolCallId, refund.id);
  // expiresAt is the call's approval deadline: 30m after it parked.
  const { parking } = (await getRun(dev, agent.threadId)).tool_calls.find((c) => c.call_id === refund.id);
  assert.equal(Date.parse(interrupt.expiresAt), Date.parse(parking.deadline));
  assert.equal(Date.parse(parking.deadline) - Date.parse(parking.parked_at), 30 * 60e3);
  assert.deepEqual(JSON.parse(refund.function.arguments), { order_id: 'A-1001', amount: 250 });
  assert.ok(types(events).includes('STATE_SNAPSHOT'));
  assert.equal((await getRun(dev, agent.threadId)).status, 'waiting');

  events.length = 0;
  await agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'resolved' }] });
  for (const e of events) EventSchema.parse(e);
  assert.equal(events[0].type, 'RUN_STARTED');
  const done = events.at(-1);
  assert.equal(done.type, 'RUN_FINISHED');
  assert.equal(done.outcome.type, 'success');
  assert.equal(done.result.termination.reason, 'natural_end');
  const result = events.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === refund.id);
  assert.deepEqual(JSON.parse(result.content), { order_id: 'A-1001', amount: 250 });
  assert.deepEqual(texts(agent), ['Looking the order up.', 'Refunding it now.', 'The refund is done.']);
  assert.equal((await getRun(dev, agent.threadId)).status, 'done');
});

test('a big tool call and its result come through whole', async () => {
  const { agent, events } = newAgent();
  say(agent, 'Echo this.');
  await agent.runAgent({ forwardedProps: { agent: 'bigecho' } });
  for (const e of events) EventSchema.parse(e);
  assert.equal(events.at(-1).outcome.type, 'success');
  const text = '0123456789'.repeat(60);
  const echo = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === 'echo');
  assert.deepEqual(JSON.parse(echo.function.arguments), { text });
  const result = events.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === echo.id);
  assert.deepEqual(JSON.parse(result.content), { text }, 'echo returns its arguments');
  assert.deepEqual(texts(agent), ['Echoing it.', 'Echoed.']);
});

test('a cancelled interrupt cancels the call and the run goes on', async () => {
  const { agent, events } = newAgent();
  say(agent, 'Refund order A-1001, please.');
  await agent.runAgent({ forwardedProps: { agent: 'refunds' } });
  const [interrupt] = events.at(-1).outcome.interrupts;
  events.length = 0;
  await agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'cancelled' }] });
  assert.equal(events.at(-1).outcome.type, 'success');
  const run = await getRun(dev, agent.threadId);
  assert.equal(run.tool_calls.find((c) => c.tool === 'issue_refund').status, 'cancelled');
});

test('the next user message on a thread is its next turn', async () => {
  const { agent, events } = newAgent();
  say(agent, 'hello');
  await agent.runAgent({ forwardedProps: { agent: 'echo' } });
  assert.equal(events.at(-1).outcome.type, 'success');
  say(agent, 'and again');
  events.length = 0;
  await agent.runAgent();
  assert.equal(events.at(-1).result.stepwise_run_id, `${agent.threadId}~2`);
  assert.deepEqual(texts(agent), ['Noted.', 'Anything else?', 'Noted.', 'Anything else?']);
});

test('a frontend tool is the client\'s to run, and its tool message resumes the run', async () => {
  const { agent, events } = newAgent('?agent=locate');
  let finished;
  agent.subscribe({ onRunFinishedEvent: (params) => { finished = params; } });
  say(agent, 'Where am I?');
  await agent.runAgent();
  for (const e of events) EventSchema.parse(e);
  // A run that stopped on a frontend tool's call is a completed run
  // (AG-UI 1.0): success, the call pending, no interrupt to resume.
  assert.equal(finished.outcome, 'success');
  assert.deepEqual(agent.pendingInterrupts, []);
  assert.equal(finished.pendingToolCallIds.length, 1);
  const [pending] = finished.pendingToolCallIds;
  const located = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === pending);
  assert.equal(located.function.name, 'get_location');
  assert.deepEqual(JSON.parse(located.function.arguments), { precision: 'city' });
  const lookup = events.find((e) => e.type === 'TOOL_CALL_RESULT');
  assert.notEqual(lookup.toolCallId, pending, 'lookup_order ran on the server');
  assert.equal((await getRun(dev, agent.threadId)).status, 'waiting');

  // The client runs the tool and sends its output as a tool message; the
  // whole history goes with it, lookup_order's result (a tool message
  // too) included, which answers nothing.
  agent.addMessage({ id: `t-${pending}`, role: 'tool', toolCallId: pending, content: JSON.stringify({ city: 'Lisbon' }) });
  events.length = 0;
  await agent.runAgent();
  for (const e of events) EventSchema.parse(e);
  assert.equal(events[0].type, 'RUN_STARTED');
  const done = events.at(-1);
  assert.equal(done.type, 'RUN_FINISHED');
  assert.equal(done.outcome.type, 'success');
  assert.equal(done.outcome.pendingToolCallIds, undefined);
  assert.equal(done.result.termination.reason, 'natural_end');
  const run = await getRun(dev, agent.threadId);
  assert.equal(run.status, 'done');
  assert.deepEqual(run.tool_calls.find((c) => c.call_id === pending).result, { city: 'Lisbon' });
  assert.deepEqual(texts(agent), ['Let me see where you are.', 'You are in the city you told me.']);
});
