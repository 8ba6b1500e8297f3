// The stepwise console: plain JavaScript over the gateway's HTTP API. Every
// value from the API is put on the page as text (h() below), never as HTML.
'use strict';

const keyStore = 'stepwise.apiKey';
const view = document.getElementById('view');
const flashBox = document.getElementById('flash');

// --- helpers -------------------------------------------------------------

// h builds an element: h('td', {class: 'mono'}, 'text', child, ...).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const enc = encodeURIComponent;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const json = (v) => (v === undefined ? '' : JSON.stringify(v, null, 2));
const when = (t) => (t ? new Date(t).toLocaleString() : '');
const status = (s) => h('span', { class: `status ${s}` }, s);
const runLink = (id) => h('a', { href: `#/runs/${enc(id)}` }, id);

function flash(msg, kind) {
  flashBox.textContent = msg;
  flashBox.className = kind || '';
  flashBox.hidden = !msg;
}

function authHeaders() {
  const key = localStorage.getItem(keyStore);
  return key ? { authorization: `Bearer ${key}` } : {};
}

// api calls the gateway and returns the decoded answer; an error answer is
// thrown with the gateway's message (a 401 asks for a key).
async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = authHeaders();
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401) {
    document.getElementById('key-input').focus();
    throw new Error('This gateway needs an API key: enter one above.');
  }
  const text = await res.text();
  const data = text ? JSON.parse(text) : {};
  if (!res.ok) throw new Error(data.error?.message || `${method} ${path}: ${res.status}`);
  return data;
}

// follow reads a run's event stream (SSE over fetch, so the key goes in a
// header), calling onEvent for each event; it reconnects after the last
// event it saw, and returns when the run's stream ends or signal aborts.
async function follow(runId, onEvent, signal) {
  let after = '';
  while (!signal.aborted) {
    try {
      const res = await fetch(`/v1/runs/${enc(runId)}/events${after ? `?after=${enc(after)}` : ''}`, { headers: authHeaders(), signal });
      if (!res.ok) throw new Error(`events: ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buf += value;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
          if (!data) continue;
          const ev = JSON.parse(data);
          after = ev.id;
          onEvent(ev);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      await sleep(1000);
    }
  }
}

// --- pages ---------------------------------------------------------------

// page is the current page's lifetime: its timers and streams stop when
// another page is shown.
let page = new AbortController();

function every(ms, fn) {
  const signal = page.signal;
  (async () => {
    while (!signal.aborted) {
      try { await fn(signal); } catch (err) { if (!signal.aborted) flash(err.message); }
      await sleep(ms);
    }
  })();
}

const routes = [
  [/^#\/runs\/(.+)$/, (id) => runPage(decodeURIComponent(id))],
  [/^#\/inbox$/, () => inboxPage()],
  [/^#\/batches\/(.+)$/, (id) => batchPage(decodeURIComponent(id))],
  [/^#\/batches$/, () => batchesPage()],
  [/^#\/schedules$/, () => schedulesPage()],
  [/^#\/inference-jobs$/, () => inferenceJobsPage()],
  [/^#\/dead-letters$/, () => deadLettersPage()],
  [/^/, () => runsPage()],
];

function route() {
  page.abort();
  page = new AbortController();
  flash('');
  const hash = location.hash || '#/runs';
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', hash.startsWith(`#/${a.dataset.nav}`));
  }
  for (const [re, show] of routes) {
    const m = hash.match(re);
    if (m) {
      view.replaceChildren();
      show(...m.slice(1));
      return;
    }
  }
}

// runsPage: the runs, newest first, searched as GET /v1/runs searches
// (status, termination, agent, batch, tenant, created since and until, and
// meta.KEY=VALUE of the keys the configuration declares), their status
// live. The search is kept in the address, so a search can be linked to.
function runsPage() {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const choice = (name, values, any) => {
    const sel = h('select', { id: `filter-${name}`, 'aria-label': name }, ['', ...values].map((v) => h('option', { value: v }, v || any)));
    sel.value = params.get(name) || '';
    return sel;
  };
  const text = (name, placeholder) => h('input', { id: `filter-${name}`, 'aria-label': placeholder, placeholder, value: params.get(name) || '' });
  const fields = {
    status: choice('status', ['created', 'running', 'waiting', 'done'], 'any status'),
    termination: choice('termination', ['natural_end', 'behavior_requested', 'stopped', 'cancelled', 'blocked', 'error'], 'any ending'),
    agent: text('agent', 'agent'),
    batch_id: text('batch_id', 'batch'),
    tenant: text('tenant', 'tenant'),
    since: text('since', 'since (RFC 3339)'),
    until: text('until', 'until (RFC 3339)'),
  };
  const metaIn = h('input', { id: 'filter-meta', 'aria-label': 'metadata', placeholder: 'metadata: key=value ...', size: 28,
    value: [...params].filter(([k]) => k.startsWith('meta.')).map(([k, v]) => `${k.slice(5)}=${v}`).join(' ') });
  // search is the query of the filters that are set.
  const search = () => {
    const q = new URLSearchParams();
    for (const [name, el] of Object.entries(fields)) if (el.value.trim()) q.set(name, el.value.trim());
    for (const pair of metaIn.value.split(/\s+/).filter(Boolean)) {
      const at = pair.indexOf('=');
      if (at > 0) q.set(`meta.${pair.slice(0, at)}`, pair.slice(at + 1));
    }
    return q;
  };
  const body = h('tbody');
  let cursor = '';
  const more = h('button', { onclick: () => { cursor = more.dataset.cursor; load(page.signal); } }, 'Older');
  const load = async (signal) => {
    const q = search();
    q.set('limit', '50');
    if (cursor) q.set('cursor', cursor);
    const { runs, next_cursor: next } = await api(`/v1/runs?${q}`, { signal });
    body.replaceChildren(...runs.map((r) => h('tr', { 'data-run': r.run_id },
      h('td', { class: 'mono' }, runLink(r.run_id)), h('td', {}, r.agent), h('td', {}, status(r.status)),
      h('td', {}, r.step), h('td', {}, r.termination ? r.termination.reason + (r.termination.code ? ` (${r.termination.code})` : '') : ''),
      h('td', { class: 'muted' }, when(r.updated_at)))));
    more.dataset.cursor = next;
    more.hidden = !next;
  };
  const apply = (e) => {
    e?.preventDefault();
    cursor = '';
    const q = search();
    history.replaceState(null, '', `#/runs${q.size ? `?${q}` : ''}`);
    load(page.signal).catch((err) => flash(err.message));
  };
  fields.status.addEventListener('change', apply);
  fields.termination.addEventListener('change', apply);
  view.append(h('h1', {}, 'Runs'),
    h('form', { class: 'filters', onsubmit: apply }, ...Object.values(fields), metaIn, h('button', { type: 'submit' }, 'Search')),
    h('table', {}, h('thead', {}, h('tr', {}, ['run', 'agent', 'status', 'step', 'termination', 'updated'].map((c) => h('th', {}, c)))), body),
    h('p', {}, more));
  every(2000, load);
}

// runPage: one run's timeline, live: its state, its place in a tree of
// runs (its parent, its child runs), calls, messages, events.
function runPage(id) {
  const head = h('div', { class: 'card grid' });
  const calls = h('tbody');
  const messages = h('div');
  const events = h('tbody');
  const cancel = h('button', { class: 'danger', onclick: async () => {
    const reason = prompt('Why cancel this run?') ?? '';
    try { await api(`/v1/runs/${enc(id)}/cancel`, { method: 'POST', body: { reason } }); flash('Cancel sent.', 'info'); } catch (err) { flash(err.message); }
  } }, 'Cancel run');
  const children = h('tbody');
  const tree = h('section', { id: 'children', hidden: true }, h('h2', {}, 'Child runs'),
    h('table', {}, h('thead', {}, h('tr', {}, ['run', 'call', 'status'].map((c) => h('th', {}, c)))), children));
  view.append(h('h1', {}, 'Run ', h('span', { class: 'mono' }, id)), head, h('p', {}, cancel), tree,
    h('h2', {}, 'Tool calls'),
    h('table', { id: 'calls' }, h('thead', {}, h('tr', {}, ['call', 'step', 'agent', 'tool', 'status', 'arguments', 'result', 'approval'].map((c) => h('th', {}, c)))), calls),
    h('h2', {}, 'Messages'), messages,
    h('h2', {}, 'Events'), h('div', { class: 'events' }, h('table', {}, events)));

  // Who held the run at each step: the agent it was created for, then, from
  // the step after each run.handoff, the agent that handoff gave it to.
  let created = '';
  const handoffs = [];
  const heldAt = (step) => handoffs.reduce((who, ho) => (ho.step < step ? ho.to : who), created);
  let pending = null;
  const refresh = async () => {
    const [run, { messages: msgs }] = await Promise.all([api(`/v1/runs/${enc(id)}`), api(`/v1/runs/${enc(id)}/messages`)]);
    cancel.disabled = run.status === 'done';
    head.replaceChildren(
      h('span', { class: 'muted' }, 'status'), h('span', { id: 'run-status' }, status(run.status)),
      h('span', { class: 'muted' }, 'agent'), h('span', {}, run.agent),
      ...(run.current_agent && run.current_agent !== run.agent ? [h('span', { class: 'muted' }, 'held by'), h('span', { id: 'run-holder' }, run.current_agent)] : []),
      ...(run.agent_version ? [h('span', { class: 'muted' }, 'version'), h('span', { id: 'run-version', class: 'mono' }, run.agent_version)] : []),
      h('span', { class: 'muted' }, 'step'), h('span', {}, run.step),
      ...(run.step_state ? [h('span', { class: 'muted' }, 'step state'), h('span', { id: 'run-step-state' }, status(run.step_state),
        run.step_state === 'awaiting_inference' ? h('a', { href: '#/inference-jobs' }, ' its request waits for its model\'s batch') : '')] : []),
      h('span', { class: 'muted' }, 'termination'), h('span', {}, run.termination ? `${run.termination.reason}${run.termination.code ? ` (${run.termination.code})` : ''}${run.termination.detail ? `: ${run.termination.detail}` : ''}` : '—'),
      h('span', { class: 'muted' }, 'usage'), h('span', {}, usage(run.usage)),
      h('span', { class: 'muted' }, 'created'), h('span', {}, when(run.created_at)),
      ...(run.parent_run_id ? [h('span', { class: 'muted' }, 'parent'), h('span', { id: 'run-parent', class: 'mono' },
        runLink(run.parent_run_id), h('span', { class: 'muted' }, ` → ${run.parent_call_id}`))] : []),
      ...(run.forked_from ? [h('span', { class: 'muted' }, 'forked from'),
        h('span', { id: 'run-forked-from' }, runLink(run.forked_from.run_id), ` after step ${run.forked_from.step}`)] : []),
      ...(run.rerun_of ? [h('span', { class: 'muted' }, 're-run of'), h('span', { id: 'run-rerun-of' }, runLink(run.rerun_of))] : []),
      ...(run.start_at ? [h('span', { class: 'muted' }, 'starts'), h('span', {}, when(run.start_at))] : []),
      ...(run.schedule_id ? [h('span', { class: 'muted' }, 'schedule'), h('span', { id: 'run-schedule' }, `${run.schedule_id}, tick ${when(run.tick_at)}`)] : []),
      ...(run.metadata ? [h('span', { class: 'muted' }, 'metadata'), h('pre', { id: 'run-metadata' }, json(run.metadata))] : []));
    tree.hidden = !run.children;
    children.replaceChildren(...(run.children || []).map((c) => h('tr', { 'data-child': c.run_id },
      h('td', { class: 'mono' }, runLink(c.run_id)), h('td', { class: 'mono' }, c.call_id),
      h('td', {}, status(c.status)))));
    calls.replaceChildren(...(run.tool_calls || []).map((c) => h('tr', { 'data-call': c.call_id },
      h('td', { class: 'mono' }, c.call_id), h('td', {}, c.step), h('td', { class: 'held-by' }, heldAt(c.step)), h('td', {}, c.tool), h('td', {}, status(c.status)),
      h('td', {}, h('pre', {}, json(c.arguments))), h('td', {}, h('pre', {}, c.error || json(c.result))),
      h('td', {}, c.decision ? `${c.decision.action} by ${c.decision.decided_by || '?'}${c.decision.reason ? `: ${c.decision.reason}` : ''}`
        : c.status === 'suspended' ? h('a', { href: '#/inbox' }, 'waiting: decide in Approvals') : ''))));
    messages.replaceChildren(...msgs.map((m) => h('div', { class: 'card' },
      h('strong', {}, m.role), m.tool_call_id ? h('span', { class: 'muted mono' }, ` → ${m.tool_call_id}`) : '',
      h('pre', {}, m.content), m.tool_calls ? h('pre', { class: 'muted' }, json(m.tool_calls)) : '')));
  };
  // Refreshes are coalesced: a burst of events reads the run once, and
  // recounts the Approvals badge when one of them parked or unparked a call.
  let recount = false;
  const soon = (ev) => {
    recount ||= parkingEvents.has(ev.type);
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      if (recount) { recount = false; badge(); }
      refresh().catch((err) => flash(err.message));
    }, 150);
  };
  refresh().catch((err) => flash(err.message));
  follow(id, (ev) => {
    if (ev.type === 'run.created') created = ev.data?.agent || '';
    if (ev.type === 'run.handoff') handoffs.push({ step: ev.step, to: ev.data.to });
    events.prepend(h('tr', {}, h('td', { class: 'muted' }, when(ev.at)), h('td', {}, ev.type), h('td', {}, ev.step), h('td', { class: 'held-by' }, heldAt(ev.step)),
      h('td', { class: 'mono' }, ev.call_id || ''), h('td', {}, h('pre', {}, ev.data ? JSON.stringify(ev.data) : ''))));
    soon(ev);
  }, page.signal);
}

// parkingEvents are the events after which a run has a call parked, or one
// fewer: a run page that sees one recounts the Approvals badge. A decided
// call leaves the pending index after its decision.applied is written, so
// the events that follow it (the call's end, the run's) count too.
const parkingEvents = new Set(['tool_call.suspended', 'decision.applied', 'tool_call.finished', 'run.resumed', 'run.finished']);

// inboxPage: every parked call, oldest first, to approve or cancel.
function inboxPage() {
  const list = h('div', { id: 'inbox' });
  view.append(h('h1', {}, 'Approvals'), list);
  const shown = new Map();
  const load = async (signal) => {
    const { pending } = await api('/v1/pending?limit=200', { signal });
    const ids = new Set(pending.map((p) => `${p.run_id}/${p.call_id}`));
    for (const [k, card] of shown) if (!ids.has(k)) { card.remove(); shown.delete(k); }
    for (const p of pending) {
      const k = `${p.run_id}/${p.call_id}`;
      if (!shown.has(k)) { const card = inboxCard(p); shown.set(k, card); list.append(card); }
    }
    if (!pending.length && !list.querySelector('.empty')) list.append(h('p', { class: 'muted empty' }, 'Nothing waits for a decision.'));
    if (pending.length) list.querySelector('.empty')?.remove();
  };
  every(2000, load);
}

// inboxCard is one parked call with its decision form. Every answer quotes
// the call's args_hash: if the call's arguments changed since, the step
// worker refuses the decision instead of approving what nobody saw.
function inboxCard(p) {
  const reason = h('input', { placeholder: 'reason (optional)', 'aria-label': 'reason' });
  const edits = {
    pass_decision_to_tool: ['Approve with these arguments', json(p.arguments)],
    use_decision_as_result: ['Complete with this result', '{}'],
  }[p.resume_mode];
  const editor = edits && h('textarea', { 'aria-label': edits[0], value: edits[1] });
  const state = h('span', { class: 'muted' });
  const send = (action, payload) => async () => {
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    try {
      const body = { call_id: p.call_id, action, args_hash: p.args_hash, reason: reason.value || undefined, payload };
      await api(`/v1/runs/${enc(p.run_id)}/decisions`, { method: 'POST', body });
      state.textContent = action === 'resume' ? 'Approved: the run goes on.' : 'Cancelled.';
      card.classList.add('decided');
    } catch (err) {
      state.textContent = err.message;
      for (const b of card.querySelectorAll('button')) b.disabled = false;
    }
  };
  const withEdit = () => {
    try { return send('resume', JSON.parse(editor.value))(); } catch (err) { state.textContent = `Not JSON: ${err.message}`; }
  };
  const card = h('div', { class: 'card', 'data-call': p.call_id, 'data-run': p.run_id },
    h('div', { class: 'grid' },
      h('span', { class: 'muted' }, 'run'), h('span', { class: 'mono' }, runLink(p.run_id)),
      h('span', { class: 'muted' }, 'call'), h('span', { class: 'mono' }, `${p.call_id} (step ${p.step})`),
      h('span', { class: 'muted' }, 'tool'), h('strong', {}, p.tool),
      h('span', { class: 'muted' }, 'why'), h('span', {}, p.reason || 'the tool asks for approval'),
      h('span', { class: 'muted' }, 'arguments'), h('pre', {}, json(p.arguments)),
      h('span', { class: 'muted' }, 'on approval'), h('span', {}, p.resume_mode.replaceAll('_', ' ')),
      p.deadline && [h('span', { class: 'muted' }, 'deadline'), h('span', {}, `${when(p.deadline)} (then ${p.on_timeout || 'cancel'})`)]),
    editor && h('p', {}, editor),
    h('div', { class: 'actions' },
      h('button', { class: 'primary', onclick: send('resume') }, 'Approve'),
      editor && h('button', { onclick: withEdit }, edits[0]),
      reason,
      h('button', { class: 'danger', onclick: send('cancel') }, 'Cancel call'),
      state));
  return card;
}

// batchesPage asks for a batch id.
function batchesPage() {
  const id = h('input', { placeholder: 'batch id (from POST /v1/runs/batch)', 'aria-label': 'batch id', size: 40 });
  view.append(h('h1', {}, 'Batches'),
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); location.hash = `#/batches/${enc(id.value.trim())}`; } },
      id, h('button', { type: 'submit' }, 'Show')));
}

// usage shows tokens and, when the model has a price, their cost.
function usage(u) {
  return `${u.input_tokens} in, ${u.output_tokens} out${u.cost_usd ? `, ${u.cost_usd.toFixed(6)} USD` : ''}`;
}

// batchPage: a batch's progress, live, and once some of its runs failed
// (ended with error), a button that re-runs them (POST /v1/runs/rerun) and
// then links to the batch of their new runs.
function batchPage(id) {
  const box = h('div', { class: 'card' });
  const rerun = h('button', {
    id: 'batch-rerun', class: 'primary', hidden: true, onclick: async () => {
      rerun.disabled = true;
      try {
        const r = await api('/v1/runs/rerun', { method: 'POST', body: { filter: { batch_id: id, termination: 'error' } } });
        rerun.replaceWith(h('a', { id: 'batch-rerun-link', href: `#/batches/${enc(r.batch_id)}` },
          `${r.requested} runs requested again: follow batch ${r.batch_id}`));
      } catch (err) { flash(err.message); rerun.disabled = false; }
    },
  });
  view.append(h('h1', {}, 'Batch ', h('span', { class: 'mono' }, id)), box, h('p', {}, rerun));
  every(2000, async (signal) => {
    const b = await api(`/v1/batches/${enc(id)}`, { signal });
    const failed = b.reasons.error || 0;
    rerun.hidden = !failed;
    rerun.textContent = `Re-run ${failed} failed run${failed === 1 ? '' : 's'}`;
    const order = ['done', 'waiting', 'running', 'created'];
    box.replaceChildren(
      h('div', { id: 'batch-progress' }, `${b.counts.done || 0} of ${b.total} done`),
      h('div', { class: 'bar' }, order.map((s) => {
        const seg = h('span', { class: s });
        seg.style.width = `${(100 * (b.counts[s] || 0)) / Math.max(b.total, 1)}%`; // CSSOM: allowed by the CSP
        return seg;
      })),
      h('div', { class: 'grid' }, order.flatMap((s) => [h('span', {}, status(s)), h('span', {}, b.counts[s] || 0)]),
        Object.entries(b.reasons || {}).flatMap(([r, n]) => [h('span', { class: 'muted' }, r), h('span', {}, n)]),
        h('span', { class: 'muted' }, 'usage'), h('span', { id: 'batch-usage' }, usage(b.usage))),
      h('p', {}, h('a', { href: `#/runs` }, 'All runs')));
  });
}

// schedulesPage: the schedules, live, each with its next tick and last
// run, to pause, resume, trigger or delete.
function schedulesPage() {
  const body = h('tbody');
  view.append(h('h1', {}, 'Schedules'),
    h('p', { class: 'muted' }, 'Runs started from a cron expression or an interval. Create them with POST /v1/schedules or `stepwise schedules create`.'),
    h('table', { id: 'schedules' }, h('thead', {}, h('tr', {}, ['schedule', 'when', 'overlap', 'agent', 'next tick', 'last run', ''].map((c) => h('th', {}, c)))), body));
  const act = (id, verb, method = 'POST') => async () => {
    if (verb === 'delete' && !confirm(`Delete schedule ${id}? Its runs stay.`)) return;
    try {
      const out = await api(`/v1/schedules/${enc(id)}${verb === 'delete' ? '' : `/${verb}`}`, { method });
      flash(verb === 'trigger' ? `Started run ${out.run_id}.` : `Schedule ${id}: ${verb} done.`, 'info');
      await load(page.signal);
    } catch (err) { flash(err.message); }
  };
  const load = async (signal) => {
    const { schedules } = await api('/v1/schedules', { signal });
    body.replaceChildren(...schedules.map((s) => h('tr', { 'data-schedule': s.schedule_id },
      h('td', { class: 'mono' }, s.schedule_id),
      h('td', {}, s.every ? `every ${s.every}` : `${s.cron}${s.timezone ? ` (${s.timezone})` : ''}`),
      h('td', {}, s.overlap), h('td', {}, s.run.agent),
      h('td', { class: 'next' }, s.paused ? status('paused') : when(s.next_tick)),
      h('td', { class: 'mono' }, s.last_run_id ? runLink(s.last_run_id) : ''),
      h('td', { class: 'actions' },
        h('button', { onclick: act(s.schedule_id, s.paused ? 'resume' : 'pause') }, s.paused ? 'Resume' : 'Pause'),
        h('button', { onclick: act(s.schedule_id, 'trigger') }, 'Run now'),
        h('button', { class: 'danger', onclick: act(s.schedule_id, 'delete', 'DELETE') }, 'Delete')))));
    if (!schedules.length) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No schedule yet.')));
  };
  every(3000, load);
}

// inferenceJobsPage: each model in batch mode, live: the requests waiting
// in its open batch, the oldest's wait, and its provider batch jobs (GET
// /v1/inference-jobs), the unfinished first, then those of the last day.
function inferenceJobsPage() {
  const list = h('div', { id: 'inference-models' });
  view.append(h('h1', {}, 'Inference jobs'),
    h('p', { class: 'muted' }, 'The provider batch jobs that carry the steps of runs whose model is in batch mode (not batches of runs). `stepwise inference-jobs` lists the same.'),
    list);
  const wait = (s) => (s >= 3600 ? `${(s / 3600).toFixed(1)} h` : s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${Math.round(s)} s`);
  every(3000, async (signal) => {
    const { models } = await api('/v1/inference-jobs', { signal });
    list.replaceChildren(...models.map((m) => h('section', { class: 'card', 'data-model': m.model },
      h('h2', { class: 'mono' }, m.model),
      h('div', { class: 'grid' },
        h('span', { class: 'muted' }, 'requests waiting'), h('span', { class: 'waiting' }, m.waiting),
        h('span', { class: 'muted' }, 'oldest wait'), h('span', { class: 'oldest' }, m.waiting ? wait(m.oldest_wait_seconds) : '—'),
        h('span', { class: 'muted' }, 'open jobs'), h('span', { class: 'open-jobs' }, m.jobs.filter((j) => !j.ended_at).length)),
      h('table', {}, h('thead', {}, h('tr', {}, ['job', 'state', 'requests', 'file', 'provider batch', 'closed', 'ended'].map((c) => h('th', {}, c)))),
        h('tbody', {}, m.jobs.length ? m.jobs.map((j) => h('tr', { 'data-job': j.job_id },
          h('td', { class: 'mono' }, j.job_id), h('td', {}, status(j.state)), h('td', {}, j.requests),
          h('td', { class: 'mono' }, j.file_id || ''), h('td', { class: 'mono' }, j.batch_id || ''),
          h('td', { class: 'muted' }, when(j.closed_at)), h('td', { class: 'muted' }, when(j.ended_at))))
          : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No job in the last day.')))))));
    if (!models.length) list.append(h('p', { class: 'muted' }, 'No model is in batch mode (batch: on an openai model).'));
  });
}

// deadLettersPage: the dead-letter topic, newest first.
function deadLettersPage() {
  const body = h('tbody');
  view.append(h('h1', {}, 'Dead letters'),
    h('p', { class: 'muted' }, 'Messages a consumer refused, with the reason. Re-drive them with `stepwise dlq redrive`.'),
    h('table', {}, h('thead', {}, h('tr', {}, ['record', 'when', 'topic', 'run', 'reason', 'state'].map((c) => h('th', {}, c)))), body));
  every(5000, async (signal) => {
    const { dead_letters: recs } = await api('/v1/dead-letters', { signal });
    body.replaceChildren(...recs.map((r) => h('tr', {},
      h('td', { class: 'mono' }, `${r.partition}/${r.offset}`), h('td', { class: 'muted' }, when(r.time)), h('td', {}, r.topic),
      h('td', { class: 'mono' }, r.key ? runLink(r.key) : ''), h('td', {}, r.reason), h('td', {}, r.state))));
    if (!recs.length) body.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'The dead-letter topic is empty.')));
  });
}

// --- the key and the inbox badge ----------------------------------------

function showKeyState() {
  const has = Boolean(localStorage.getItem(keyStore));
  document.getElementById('key-forget').hidden = !has;
  document.getElementById('key-input').placeholder = has ? 'API key (set)' : 'API key';
}

document.getElementById('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = document.getElementById('key-input');
  if (input.value) localStorage.setItem(keyStore, input.value.trim());
  input.value = '';
  showKeyState();
  route();
  badge();
});
document.getElementById('key-forget').addEventListener('click', () => {
  localStorage.removeItem(keyStore);
  showKeyState();
  route();
});

// badge shows how many calls wait for a decision, every 5 s and at once
// after the key changes.
async function badge() {
  try {
    const { pending } = await api('/v1/pending?limit=1000');
    const b = document.getElementById('inbox-count');
    b.textContent = pending.length;
    b.hidden = !pending.length;
  } catch { /* the page shows the error */ }
}

window.addEventListener('hashchange', route);
showKeyState();
route();
badge();
setInterval(badge, 5000);
