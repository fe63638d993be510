'use strict';
// The wrapper the lockstep workflow runner puts around an
// actions/github-script `script:`: `core` writes the step's file commands,
// `context` comes from the environment, `github` is null (no API here).
const fs = require('fs');
const os = require('os');
const crypto = require('crypto');

function toCommandValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string' || v instanceof String) return String(v);
  return JSON.stringify(v);
}

function fileCommand(variable, name, value) {
  const file = process.env[variable];
  if (!file) throw new Error(`${variable} is not set`);
  const delim = `ghadelimiter_${crypto.randomUUID()}`;
  fs.appendFileSync(file, `${name}<<${delim}${os.EOL}${value}${os.EOL}${delim}${os.EOL}`);
}

const summary = {
  buffer: '',
  addRaw(text, eol) { this.buffer += text + (eol ? os.EOL : ''); return this; },
  addEOL() { return this.addRaw(os.EOL); },
  addHeading(text, level) { const l = level || 1; return this.addRaw(`<h${l}>${text}</h${l}>`, true); },
  addCodeBlock(code) { return this.addRaw(`<pre><code>${code}</code></pre>`, true); },
  addList(items) { return this.addRaw(`<ul>${items.map((i) => `<li>${i}</li>`).join('')}</ul>`, true); },
  async write() { fs.appendFileSync(process.env.GITHUB_STEP_SUMMARY, this.buffer); this.buffer = ''; return this; },
};

const core = {
  exportVariable(name, value) {
    const v = toCommandValue(value);
    process.env[name] = v;
    fileCommand('GITHUB_ENV', name, v);
  },
  setOutput(name, value) { fileCommand('GITHUB_OUTPUT', name, toCommandValue(value)); },
  addPath(p) {
    fs.appendFileSync(process.env.GITHUB_PATH, p + os.EOL);
    process.env.PATH = `${p}:${process.env.PATH}`;
  },
  setFailed(message) {
    process.exitCode = 1;
    console.log(`::error::${message instanceof Error ? message.message : message}`);
  },
  setSecret() {},
  getInput(name, options) {
    const v = (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] || '').trim();
    if (options && options.required && !v) throw new Error(`Input required and not supplied: ${name}`);
    return v;
  },
  getBooleanInput(name, options) { return ['true', 'True', 'TRUE'].includes(core.getInput(name, options)); },
  getMultilineInput(name, options) { return core.getInput(name, options).split('\n').filter((x) => x !== ''); },
  isDebug() { return process.env.RUNNER_DEBUG === '1'; },
  debug(m) { if (core.isDebug()) console.log(`::debug::${m}`); },
  info(m) { console.log(m); },
  notice(m) { console.log(`::notice::${m}`); },
  warning(m) { console.log(`::warning::${m}`); },
  error(m) { console.log(`::error::${m}`); },
  startGroup(n) { console.log(`::group::${n}`); },
  endGroup() { console.log('::endgroup::'); },
  async group(n, fn) { core.startGroup(n); try { return await fn(); } finally { core.endGroup(); } },
  summary,
};

const [owner, repo] = (process.env.GITHUB_REPOSITORY || '/').split('/');
const context = {
  repo: { owner, repo },
  sha: process.env.GITHUB_SHA,
  ref: process.env.GITHUB_REF,
  runId: Number(process.env.GITHUB_RUN_ID),
  runNumber: Number(process.env.GITHUB_RUN_NUMBER),
  eventName: process.env.GITHUB_EVENT_NAME,
  job: process.env.GITHUB_JOB,
  workflow: process.env.GITHUB_WORKFLOW,
  actor: process.env.GITHUB_ACTOR,
  serverUrl: process.env.GITHUB_SERVER_URL,
  apiUrl: process.env.GITHUB_API_URL,
  payload: __PAYLOAD__,
};

const scriptRequire = require('module').createRequire(`${process.cwd()}/`);
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
const encoding = __ENCODING__;

(async () => {
  const fn = new AsyncFunction('require', 'github', 'context', 'core', 'exec', 'glob', 'io', 'fetch', __SCRIPT__);
  const result = await fn(scriptRequire, null, context, core, undefined, undefined, undefined, globalThis.fetch);
  const output = encoding === 'string' ? (result === undefined ? '' : String(result)) : JSON.stringify(result);
  core.setOutput('result', output === undefined ? '' : output);
})().catch((err) => {
  console.log(`::error::Unhandled error: ${err && err.stack ? err.stack : err}`);
  process.exitCode = 1;
});
