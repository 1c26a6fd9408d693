// activate() against the mocked editor, with a fake LanguageClient that
// records what the extension would send to the server.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as vscode from './vscode-mock';

const clients: FakeClient[] = [];

class FakeClient {
  requests: { type: string; params: any }[] = [];
  notifications: { type: string; params: any }[] = [];
  diagnostics = new Map<unknown, { range: { start: { line: number }; end: { line: number } } }[]>();
  running = false;
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    clients.push(this);
  }
  lensRefreshes: unknown[] = [];
  stateListeners: ((e: { newState: number }) => void)[] = [];
  onDidChangeState(l: (e: { newState: number }) => void) {
    this.stateListeners.push(l);
  }
  setState(newState: number) {
    for (const l of this.stateListeners) l({ newState });
  }
  getFeature(method: string) {
    return method === 'textDocument/codeLens'
      ? { getProvider: (doc: unknown) => ({ onDidChangeCodeLensEmitter: { fire: () => this.lensRefreshes.push(doc) } }) }
      : undefined;
  }
  static failStart: string | undefined;
  async start() {
    if (FakeClient.failStart) throw new Error(FakeClient.failStart);
    this.running = true;
  }
  async stop() {
    this.running = false;
  }
  isRunning() {
    return this.running;
  }
  progressHandlers = new Map<string, (v: unknown) => void>();
  onProgress(_type: unknown, token: string, handler: (v: unknown) => void) {
    this.progressHandlers.set(token, handler);
    return { dispose: () => this.progressHandlers.delete(token) };
  }
  /** Replaces the server's answer to executeCommand COMMAND (given the params). */
  static answers = new Map<string, (c: FakeClient, params: any) => Promise<unknown>>();
  async sendRequest(type: string, params: any) {
    this.requests.push({ type, params });
    const answer = FakeClient.answers.get(params.command);
    if (answer) return answer(this, params);
    if (type === 'documentSymbol') return [
      { name: 'saxpy_fp64', detail: '__global__', kind: 24, range: { start: { line: 6, character: 0 }, end: { line: 9, character: 1 } } },
    ];
    if (params.command === 'kernelpro.doctor') return 'ok  nvcc: /x/nvcc\nok  GPU: NVIDIA H200 (driver 575)\n';
    if (params.command === 'kernelpro.optimize') return { kernel: 'saxpy_fp64', speedup: 1.5, title: 'Apply optimized saxpy_fp64: 1.50x faster' };
    return '```sass\nFFMA R1, R2, R3, R4\n```';
  }
  onCancel: (token: string) => unknown = () => {};
  async sendNotification(type: string, params: any) {
    this.notifications.push({ type, params });
    if (type === 'window/workDoneProgress/cancel') this.onCancel(params.token);
  }
}

vi.mock('vscode-languageclient/node', () => ({
  LanguageClient: FakeClient,
  State: { Stopped: 1, Starting: 3, Running: 2 },
  CloseAction: { DoNotRestart: 1, Restart: 2 },
  ErrorAction: { Continue: 1, Shutdown: 2 },
  RevealOutputChannelOn: { Never: 4 },
  ExecuteCommandRequest: { type: 'executeCommand' },
  DocumentSymbolRequest: { type: 'documentSymbol' },
  CodeLensRequest: { method: 'textDocument/codeLens' },
  DidChangeConfigurationNotification: { type: 'didChangeConfiguration' },
  WorkDoneProgress: { type: '$/progress' },
  WorkDoneProgressCancelNotification: { type: 'window/workDoneProgress/cancel' },
}));

const { activate } = await import('../src/extension');

function executable(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'kp-')), 'kernelpro');
  writeFileSync(file, '#!/bin/sh\n');
  chmodSync(file, 0o755);
  return file;
}

function context(secrets: Record<string, string> = {}) {
  return {
    extensionPath: '/nonexistent-ext',
    globalStorageUri: vscode.Uri.parse('file:///store'),
    subscriptions: [] as unknown[],
    secrets: vscode.secretStorage(secrets),
  };
}

const last = () => clients[clients.length - 1];
const untrustedNote = expect.stringContaining('not trusted, so nothing is compiled, run or sent');

const PATH = process.env.PATH;
afterEach(() => {
  process.env.PATH = PATH;
});

beforeEach(() => {
  vscode.reset();
  clients.length = 0;
  FakeClient.answers.clear();
  process.env.KERNELPRO_LLM_KEY = 'sk-env';
  vscode.state.settings = { serverPath: executable() };
});

describe('activate', () => {
  it('starts `kernelpro lsp` for cuda-cpp with trust and the stored key', async () => {
    await activate(context({ 'kernelpro.llmKey': 'sk-secret' }) as never);
    const c = last();
    expect(c.serverOptions.command).toBe(vscode.state.settings.serverPath);
    expect(c.serverOptions.args).toEqual(['lsp']);
    expect(c.clientOptions.documentSelector).toEqual([{ scheme: 'file', language: 'cuda-cpp' }]);
    expect(c.clientOptions.initializationOptions).toMatchObject({ trusted: true, llmKey: 'sk-secret', arch: 'sm_90' });
    expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: NVIDIA H200');
  });

  it('in an untrusted workspace sends no key, says why, and runs nothing', async () => {
    vscode.state.trusted = false;
    await activate(context({ 'kernelpro.llmKey': 'sk-secret' }) as never);
    const c = last();
    expect(c.clientOptions.initializationOptions.trusted).toBe(false);
    expect(c.clientOptions.initializationOptions).not.toHaveProperty('llmKey');
    expect(c.serverOptions.options.env).not.toHaveProperty('KERNELPRO_LLM_KEY');
    expect(vscode.state.messages).toEqual([{ kind: 'info', text: untrustedNote }]);
    expect(vscode.state.statusBar.text).toBe('$(shield) KernelPro: restricted');

    vscode.state.activeTextEditor = editor(7);
    await vscode.state.commands.get('kernelpro.optimizeAtCursor')!();
    expect(c.requests.filter((r) => r.params.command === 'kernelpro.optimize')).toEqual([]);
    expect(vscode.state.messages[1]).toEqual({ kind: 'warning', text: untrustedNote });
  });

  it('restarts trusted, with the key, once trust is granted', async () => {
    vscode.state.trusted = false;
    await activate(context() as never);
    vscode.state.trusted = true;
    await vscode.state.trustGranted.fire();
    expect(clients.map((c) => c.clientOptions.initializationOptions.trusted)).toEqual([false, true]);
    expect(last().clientOptions.initializationOptions.llmKey).toBe('sk-env');
    expect(clients[0].running).toBe(false);
  });

  it('explains a missing binary and starts nothing', async () => {
    vscode.state.settings = {};
    process.env.PATH = '/nonexistent-bin';
    await activate(context() as never);
    expect(clients).toEqual([]);
    expect(vscode.state.messages).toEqual([{ kind: 'error', text: expect.stringContaining('was not found') }]);
    expect(vscode.state.statusBar.text).toBe('$(error) KernelPro');
  });

  it('opens the Remote settings tab for a missing binary in code-server (issue 32)', async () => {
    vscode.state.settings = {};
    vscode.state.remoteName = 'localhost:8080';
    vscode.state.click.add('Open Settings');
    process.env.PATH = '/nonexistent-bin';
    await activate(context() as never);
    await new Promise((r) => setTimeout(r, 0));
    expect(vscode.state.messages[0].text).toContain('cargo build --release -p kernelpro`');
    expect(vscode.state.executed).toContainEqual(['workbench.action.openRemoteSettings', { query: 'kernelpro.serverPath' }]);
  });

  it('follows doctor: a missing nvcc gets one notice with an install button, and the status bar clears once it is set (issue 32)', async () => {
    let nvcc = false;
    FakeClient.answers.set('kernelpro.doctor', async () =>
      nvcc
        ? 'ok  nvcc: /x/nvcc\nok  host compiler: /usr/bin/g++\nok  GPU: NVIDIA H200 (driver 575)\n'
        : '!!  nvcc: not found\nok  host compiler: /usr/bin/g++\n!!  GPU: no NVIDIA GPU or driver visible\n',
    );
    FakeClient.answers.set('kernelpro.installCuda', async () => {
      nvcc = true;
      return { nvcc: '/store/cuda/nvcc', message: 'The CUDA compiler is installed.' };
    });
    vscode.state.click.add('Install CUDA Compiler');
    try {
      await activate(context() as never);
      await new Promise((r) => setTimeout(r, 0));
      expect(vscode.state.messages[0]).toEqual({ kind: 'warning', text: expect.stringContaining('(nvcc) was not found') });
      expect(vscode.state.buttons[0]).toEqual(['Install CUDA Compiler', 'Open Settings']);
      // The button ran the install: the setting is written and the status bar follows at once.
      await vi.waitFor(() => expect(vscode.state.updated).toEqual([['nvcc', '/store/cuda/nvcc']]));
      await vi.waitFor(() => expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: NVIDIA H200'));
      // A later settings change asks doctor again; nothing new to say.
      await vscode.changeSettings({ arch: 'sm_80' });
      expect(vscode.state.messages.filter((m) => m.text.includes('was not found'))).toHaveLength(1);
    } finally {
      FakeClient.answers.delete('kernelpro.doctor');
      FakeClient.answers.delete('kernelpro.installCuda');
    }
  });

  it('re-checks doctor when a setting changes: "no nvcc" goes once kernelpro.nvcc points at one (issue 32)', async () => {
    FakeClient.answers.set('kernelpro.doctor', async () =>
      vscode.state.settings.nvcc ? 'ok  nvcc: /x/nvcc\nok  GPU: NVIDIA H200 (driver 575)\n' : '!!  nvcc: not found\n',
    );
    try {
      await activate(context() as never);
      expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: no nvcc');
      await vscode.changeSettings({ nvcc: '/opt/cuda/bin/nvcc' });
      expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: NVIDIA H200');
    } finally {
      FakeClient.answers.delete('kernelpro.doctor');
    }
  });

  it('shows the latest doctor answer when an older one comes back later: the status bar keeps the current setting\'s state (issue 32)', async () => {
    // Doctor answers when the test says so; each asking records what the nvcc setting was then.
    const pending: { nvcc: unknown; answer: (text: string) => void }[] = [];
    FakeClient.answers.set('kernelpro.doctor', () =>
      new Promise((answer) => pending.push({ nvcc: vscode.state.settings.nvcc, answer })),
    );
    const noNvcc = '!!  nvcc: `/nonexistent/bin/nvcc` (the `kernelpro.nvcc` setting), which is not an executable file\n';
    const ok = 'ok  nvcc: /x/nvcc\n!!  GPU: no NVIDIA GPU or driver visible\n';
    try {
      const started = activate(context() as never);
      await vi.waitFor(() => expect(pending).toHaveLength(1));
      pending[0].answer(ok);
      await started;
      expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: no GPU');
      // The user points kernelpro.nvcc at nothing, then clears it again before doctor answered the first change.
      const bad = vscode.changeSettings({ nvcc: '/nonexistent/bin/nvcc' });
      await vi.waitFor(() => expect(pending).toHaveLength(2));
      const cleared = vscode.changeSettings({ nvcc: undefined });
      await vi.waitFor(() => expect(pending).toHaveLength(3));
      expect(pending.map((p) => p.nvcc)).toEqual([undefined, '/nonexistent/bin/nvcc', undefined]);
      // The latest (cleared) answers first, the older (bad path) one after it.
      pending[2].answer(ok);
      await cleared;
      pending[1].answer(noNvcc);
      await bad;
      expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: no GPU');
      expect(vscode.state.messages.filter((m) => m.text.includes('(nvcc) was not found'))).toHaveLength(0);
      // In order, the bad path's answer is shown, with its one notice.
      const again = vscode.changeSettings({ nvcc: '/nonexistent/bin/nvcc' });
      await vi.waitFor(() => expect(pending).toHaveLength(4));
      pending[3].answer(noNvcc);
      await again;
      expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: no nvcc');
      expect(vscode.state.messages.filter((m) => m.text.includes('(nvcc) was not found'))).toHaveLength(1);
    } finally {
      FakeClient.answers.delete('kernelpro.doctor');
    }
  });

  it('shows a server that fails to start as stopped, with the reason', async () => {
    FakeClient.failStart = 'spawn EACCES';
    try {
      await activate(context() as never);
    } finally {
      FakeClient.failStart = undefined;
    }
    expect(vscode.state.statusBar.text).toBe('$(debug-stop) KernelPro');
    expect(vscode.state.statusBar.tooltip).toBe('KernelPro server: stopped\nThe server failed to start: Error: spawn EACCES');
  });

  it('pushes changed settings without a restart; a new serverPath restarts', async () => {
    await activate(context() as never);
    await vscode.changeSettings({ arch: 'sm_80', 'optimize.evaluator': 'stub:1.5' });
    expect(clients.length).toBe(1);
    expect(last().notifications).toEqual([
      {
        type: 'didChangeConfiguration',
        params: { settings: { kernelpro: expect.objectContaining({ trusted: true, arch: 'sm_80', optimize: { budget: 60, timeSecs: 600, evaluator: 'stub:1.5', energy: true, devices: [0], profileOriginal: true } }) } },
      },
    ]);
    await vscode.changeSettings({ serverPath: executable() });
    expect(clients.length).toBe(2);
  });

  it('restarts when where the key goes changes (the server reads it only at start-up)', async () => {
    await activate(context() as never);
    await vscode.changeSettings({ 'llm.endpoint': 'https://llm.example' });
    expect(clients.length).toBe(2);
    await vscode.changeSettings({ 'llm.model': 'm2' });
    expect(clients.length).toBe(2);
  });

  it('restarts with the new key when one is stored', async () => {
    const ctx = context();
    await activate(ctx as never);
    await ctx.secrets.store('kernelpro.llmKey', 'sk-new');
    expect(last().clientOptions.initializationOptions.llmKey).toBe('sk-new');
  });

  it('answers workspace/configuration "kernelpro" with the server view, passing other sections on', async () => {
    await activate(context() as never);
    const configuration = last().clientOptions.middleware.workspace.configuration;
    const answer = await configuration({ items: [{ section: 'kernelpro' }, { section: 'C_Cpp' }] }, {}, () => [{ raw: 1 }, { c: 2 }]);
    expect(answer).toEqual([expect.objectContaining({ trusted: true, arch: 'sm_90' }), { c: 2 }]);
    expect(answer[0]).not.toHaveProperty('serverPath');
  });

  it('adds no completion and, beside clangd, hovers only on findings and kernel names', async () => {
    await activate(context() as never);
    const middleware = last().clientOptions.middleware;
    expect(middleware.provideCompletionItem()).toEqual([]);

    vscode.state.extensions.add('llvm-vs-code-extensions.vscode-clangd');
    vscode.state.settings.hover = 'auto';
    const next = vi.fn(() => 'kernelpro hover');
    const hover = (line: number, character: number) => middleware.provideHover(document, { line, character }, {}, next);
    expect(hover(7, 10)).toBeNull(); // plain code line: clangd's hover is enough
    expect(hover(6, 18)).toBe('kernelpro hover'); // the kernel's name
    last().diagnostics.set(document.uri, [{ range: { start: { line: 8 }, end: { line: 8 } } }]);
    expect(hover(8, 4)).toBe('kernelpro hover'); // a line with a finding
  });

  it('asks for code lenses again when findings are published', async () => {
    await activate(context() as never);
    vscode.workspace.textDocuments.splice(0, Infinity, document);
    const shown: unknown[] = [];
    last().clientOptions.middleware.handleDiagnostics(document.uri, ['d'], (_: unknown, d: unknown) => shown.push(d));
    expect(shown).toEqual([['d']]);
    expect(last().lensRefreshes).toEqual([document]);
  });

  it('optimizes the kernel around the cursor, asking the server which one it is', async () => {
    await activate(context() as never);
    vscode.state.activeTextEditor = editor(8);
    await vscode.state.commands.get('kernelpro.optimizeAtCursor')!();
    expect(last().requests.slice(-2)).toEqual([
      { type: 'documentSymbol', params: { textDocument: { uri: 'file:///w/kernels.cu' } } },
      {
        type: 'executeCommand',
        params: { command: 'kernelpro.optimize', arguments: ['file:///w/kernels.cu', 'saxpy_fp64'], workDoneToken: expect.stringMatching(/^kernelpro-job-/) },
      },
    ]);
    expect(vscode.state.messages).toEqual([{ kind: 'info', text: 'KernelPro: Apply optimized saxpy_fp64: 1.50x faster.' }]);
  });

  it('shows optimize as a cancellable notification; Cancel reports a cancelled run, the best so far offered apart', async () => {
    FakeClient.answers.set('kernelpro.optimize', (c, params) => {
      const progress = c.progressHandlers.get(params.workDoneToken)!;
      progress({ kind: 'begin', title: 'Optimizing saxpy_fp64', percentage: 0 });
      progress({ kind: 'report', message: '3/60 evaluations · best 1.50x', percentage: 5 });
      progress({ kind: 'report', message: '6/60 evaluations · best 1.50x', percentage: 10 });
      // The server answers once the cancel for this token has arrived.
      return new Promise((resolve) => {
        c.onCancel = (token) =>
          token === params.workDoneToken &&
          resolve({
            kernel: 'saxpy_fp64', title: 'Apply optimized saxpy_fp64: 1.50x faster', speedup: 1.5, applicable: true, cancelled: true, evaluations: 6,
            message: 'Optimize saxpy_fp64 was cancelled after 6 evaluations. The best verified version so far is 1.50x faster: apply it with the code action (Quick Fix) on the kernel if you want it.',
          });
      });
    });
    await activate(context() as never);
    vscode.state.activeTextEditor = editor(8);
    const running = vscode.state.commands.get('kernelpro.optimizeAtCursor')!();
    await vi.waitFor(() => expect(vscode.state.progress.length).toBe(1));
    const shown = vscode.state.progress[0];
    expect(shown.options).toEqual({ location: vscode.ProgressLocation.Notification, title: 'KernelPro: optimizing saxpy_fp64', cancellable: true });
    expect(shown.reports).toEqual([
      { message: undefined, increment: 0 },
      { message: '3/60 evaluations · best 1.50x', increment: 5 },
      { message: '6/60 evaluations · best 1.50x', increment: 5 },
    ]);
    // KernelPro: Cancel (the notification's own Cancel button sends the same).
    await vscode.state.commands.get('kernelpro.cancel')!();
    await running;
    const token = last().requests.at(-1)!.params.workDoneToken;
    expect(last().notifications).toEqual([{ type: 'window/workDoneProgress/cancel', params: { token } }]);
    expect(shown.done).toBe(true);
    expect(vscode.state.messages).toEqual([{ kind: 'info', text: expect.stringMatching(/^KernelPro: Optimize saxpy_fp64 was cancelled after 6 evaluations\./) }]);
    expect(vscode.state.messages[0].text).not.toContain('Apply optimized');
    expect(vscode.state.buttons).toEqual([['Apply the best so far (1.50x faster)']]);
    // Nothing runs any more: Cancel says so.
    await vscode.state.commands.get('kernelpro.cancel')!();
    expect(vscode.state.messages[1]).toEqual({ kind: 'info', text: expect.stringContaining('nothing to cancel') });
  });

  it('the notification\'s Cancel button cancels that run', async () => {
    FakeClient.answers.set('kernelpro.profile', (c, params) => new Promise((resolve) => {
      c.onCancel = (token) => token === params.workDoneToken && resolve({ cancelled: true, message: 'Profiling was cancelled; the findings of the last finished profile (if any) stay.' });
    }));
    await activate(context() as never);
    vscode.state.activeTextEditor = editor(8);
    const running = vscode.state.commands.get('kernelpro.profileFile')!();
    await vi.waitFor(() => expect(vscode.state.progress.length).toBe(1));
    await vscode.state.progress[0].cancel();
    await running;
    expect(vscode.state.messages).toEqual([{ kind: 'info', text: 'KernelPro: Profiling was cancelled; the findings of the last finished profile (if any) stay.' }]);
  });

  it('says in words why Profile could not run, never as JSON; a lens\'s Profile gets the same', async () => {
    const error = 'ncu was not found. Nsight Compute (ncu) ships with the CUDA toolkit on GPU machines; set the `kernelpro.ncu` setting or KERNELPRO_NCU to its path, or add it to PATH.';
    FakeClient.answers.set('kernelpro.profile', async () => ({ error: `Profiling is unavailable: ${error}`, message: `Profiling is unavailable: ${error}` }));
    await activate(context() as never);
    const next = vi.fn();
    await last().clientOptions.middleware.executeCommand('kernelpro.profile', ['file:///w/kernels.cu'], next);
    expect(next).not.toHaveBeenCalled();
    expect(vscode.state.progress.map((p) => p.options.title)).toEqual(['KernelPro: profiling']);
    expect(vscode.state.messages).toEqual([{ kind: 'warning', text: `KernelPro: Profiling is unavailable: ${error}` }]);
    expect(vscode.state.messages[0].text).not.toMatch(/[{}"]/);
    // Other server commands go to the server as they are.
    await last().clientOptions.middleware.executeCommand('kernelpro.showSass', ['file:///w/kernels.cu', 1], next);
    expect(next).toHaveBeenCalledWith('kernelpro.showSass', ['file:///w/kernels.cu', 1]);
  });

  it('ends a profile with its summary', async () => {
    FakeClient.answers.set('kernelpro.profile', async () => ({
      kernels: [{ kernel: 'saxpy_fp64', summary: 'memory-bound', findings: 2 }],
      message: 'Profiled 1 kernel in 14 s, 2 findings. saxpy_fp64: memory-bound.',
    }));
    await activate(context() as never);
    vscode.state.activeTextEditor = editor(8);
    await vscode.state.commands.get('kernelpro.profileFile')!();
    expect(vscode.state.messages).toEqual([{ kind: 'info', text: 'KernelPro: Profiled 1 kernel in 14 s, 2 findings. saxpy_fp64: memory-bound.' }]);
  });

  it('shows SASS for the cursor line beside the editor', async () => {
    await activate(context() as never);
    vscode.state.activeTextEditor = editor(8);
    await vscode.state.commands.get('kernelpro.showSassForLine')!();
    expect(last().requests.at(-1)).toEqual({
      type: 'executeCommand',
      params: { command: 'kernelpro.showSass', arguments: ['file:///w/kernels.cu', 8] },
    });
    // A read-only virtual SASS document (its own language and grammar), not Markdown
    // in a .md tab, nor an Untitled one that asks to be saved.
    const [what, doc] = vscode.state.executed.at(-1) as [string, { uri: { value: string }; content: string; languageId: string }];
    expect(what).toBe('showTextDocument');
    expect(doc.uri.value).toMatch(/^kernelpro-sass:\/SASS kernels\.cu line 9\?/);
    expect(doc.languageId).toBe('kernelpro-sass');
    expect(doc.content).toBe('FFMA R1, R2, R3, R4\n');
  });
});

describe('a server that stops unexpectedly', () => {
  it('restarts with a notice that closes once it runs again; no toast stays up', async () => {
    await activate(context() as never);
    const c = last();
    const closed = () => c.clientOptions.errorHandler.closed();
    expect(closed()).toEqual({ action: 2, handled: true }); // Restart, and no toast of the client's
    const notice = vscode.state.progress.find((p) => p.options.title.includes('restarting'))!;
    expect(notice.done).toBe(false);
    closed(); // a second crash before it is back: still one notice
    expect(vscode.state.progress.filter((p) => p.options.title.includes('restarting'))).toHaveLength(1);
    c.setState(2); // Running
    await new Promise((r) => setTimeout(r, 0));
    expect(notice.done).toBe(true);
    expect(vscode.state.messages.filter((m) => m.kind === 'error')).toEqual([]);
    expect(vscode.state.statusBar.text).toBe('$(chip) KernelPro: NVIDIA H200');
  });

  it('gives up after five crashes in three minutes with one error that names the log', async () => {
    await activate(context() as never);
    const c = last();
    const results = Array.from({ length: 5 }, () => c.clientOptions.errorHandler.closed());
    expect(results.map((r: { action: number }) => r.action)).toEqual([2, 2, 2, 2, 1]);
    await new Promise((r) => setTimeout(r, 0));
    expect(vscode.state.progress.every((p) => !p.options.title.includes('restarting') || p.done)).toBe(true);
    expect(vscode.state.messages).toEqual([{ kind: 'error', text: expect.stringContaining('was not restarted') }]);
    expect(vscode.state.buttons.at(-1)).toEqual(['Show Log']);
  });

  it('a stop the user asked for is no crash', async () => {
    await activate(context() as never);
    await vscode.state.commands.get('kernelpro.restartServer')!();
    expect(clients).toHaveLength(2);
    expect(vscode.state.progress.filter((p) => p.options.title.includes('restarting'))).toEqual([]);
    expect(vscode.state.messages.filter((m) => m.kind === 'error')).toEqual([]);
  });
});

const lines = [
  '', '', '', '', '', '',
  '__global__ void saxpy_fp64(float* y, const float* x, float a, int n) {',
  '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
  '  if (i < n) y[i] = a * x[i] + y[i] * 2.0;',
];
const document = {
  uri: { toString: () => 'file:///w/kernels.cu' },
  languageId: 'cuda-cpp',
  lineAt: (line: number) => ({ text: lines[line] }),
  getWordRangeAtPosition: (p: { line: number; character: number }) => {
    for (const m of lines[p.line].matchAll(/\w+/g)) {
      if (m.index! <= p.character && p.character <= m.index! + m[0].length) return { start: { line: p.line, character: m.index! } };
    }
    return undefined;
  },
};
function editor(line: number) {
  return { document, selection: { active: { line, character: 2 } } };
}
