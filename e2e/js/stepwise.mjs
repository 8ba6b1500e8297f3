// Starts `stepwise dev` (the binary in STEPWISE_BIN) on free ports with
// this directory's configuration, and stops it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const key = 'frontend-key-0123456789';

export async function startDev() {
  const bin = process.env.STEPWISE_BIN;
  if (!bin) throw new Error('STEPWISE_BIN is not set: run `make test-js`, which builds the binary');
  const config = fileURLToPath(new URL('./stepwise.yaml', import.meta.url));
  const proc = spawn(bin, ['dev', '--config', config, '--http', '127.0.0.1:0', '--kafka', '127.0.0.1:0'], {
    env: { ...process.env, STEPWISE_TEST_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const base = await new Promise((resolve, reject) => {
    proc.on('exit', (code) => reject(new Error(`stepwise dev exited (${code}):\n${stderr}`)));
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/http=(http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
  });
  for (let i = 0; ; i++) {
    const res = await fetch(`${base}/readyz`).catch(() => null);
    if (res?.ok) break;
    if (i > 100) throw new Error(`stepwise dev at ${base} is not ready:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    headers: { authorization: `Bearer ${key}` },
    async stop() {
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    },
  };
}

// getRun reads a run through the HTTP API.
export async function getRun(dev, id) {
  const res = await fetch(`${dev.base}/v1/runs/${encodeURIComponent(id)}`, { headers: dev.headers });
  if (!res.ok) throw new Error(`GET run ${id}: ${res.status} ${await res.text()}`);
  return res.json();
}
