// The client's protocol traffic against the real server over stdio: what
// vscode-languageclient sends (initializationOptions from our settings mapping,
// didOpen/didSave of a cuda-cpp file) and what must come back.
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CodeAction,
  CodeActionRequest,
  CodeLensRequest,
  ConfigurationRequest,
  createProtocolConnection,
  DidOpenTextDocumentNotification,
  DidSaveTextDocumentNotification,
  DocumentSymbolRequest,
  ExecuteCommandRequest,
  HoverRequest,
  InitializedNotification,
  InitializeRequest,
  type ProtocolConnection,
  PublishDiagnosticsNotification,
  type PublishDiagnosticsParams,
  RegistrationRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageserver-protocol/node';
import { initializationOptions, serverSettings } from '../src/settings';

const repo = resolve(__dirname, '../../..');
const server = process.env.KERNELPRO_BIN ?? join(repo, 'target/debug/kernelpro');
// The H200 probe's kernels.cu with a launch spec above saxpy_fp64, so optimize can run.
const fixture = process.env.KP_FIXTURE ?? join(repo, 'editors/fixtures/kernels_spec.cu');
// CI sets KP_REQUIRE_SERVER=1 so that a missing binary fails instead of skipping.
const available = existsSync(server) || process.env.KP_REQUIRE_SERVER === '1';

// A small search with the stub evaluator: real compiles, fake timings.
const settings = {
  get: <T>(key: string) => ({ 'optimize.evaluator': 'stub:1.5', 'optimize.budget': 4 })[key] as T | undefined,
};

describe.skipIf(!available)(`kernelpro lsp (${server})`, () => {
  let proc: ChildProcess;
  let conn: ProtocolConnection;
  const published: PublishDiagnosticsParams[] = [];
  const shownMessages: string[] = [];
  const progress: { token: string; value: { kind: string; cancellable?: boolean } }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kp-proto-'));
  const file = join(dir, 'kernels.cu');
  const uri = pathToFileURL(file).href;
  const lines = readFileSync(fixture, 'utf8').split('\n');
  const fp64Line = lines.findIndex((l) => l.includes('* 2.0;'));
  const kernelLine = lines.findIndex((l) => l.includes('void saxpy_fp64('));

  /** The first publish for `uri`, after `after` publishes, that satisfies `ok`; gives up after 90 s. */
  function diagnostics(after: number, ok: (p: PublishDiagnosticsParams) => boolean, what: string) {
    const deadline = Date.now() + 90_000;
    return new Promise<PublishDiagnosticsParams>((done, fail) => {
      const look = () => {
        const hit = published.slice(after).find((p) => p.uri === uri && ok(p));
        if (hit) done(hit);
        else if (Date.now() > deadline) fail(new Error(`no ${what}; publishes so far: ${JSON.stringify(published)}`));
        else setTimeout(look, 50);
      };
      look();
    });
  }

  beforeAll(async () => {
    copyFileSync(fixture, file);
    proc = spawn(server, ['lsp'], { stdio: ['pipe', 'pipe', 'inherit'] });
    conn = createProtocolConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    conn.onNotification(PublishDiagnosticsNotification.type, (p) => published.push(p));
    conn.onRequest(ConfigurationRequest.type, (p) => p.items.map(() => serverSettings(settings, true)));
    conn.onRequest(WorkDoneProgressCreateRequest.type, () => null);
    conn.onRequest(RegistrationRequest.type, () => null);
    conn.onNotification('window/showMessage', (p: { message: string }) => shownMessages.push(p.message));
    conn.onNotification('$/progress', (p: { token: string; value: { kind: string; cancellable?: boolean } }) => progress.push(p));
    conn.listen();
    const init = await conn.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      clientInfo: { name: 'Visual Studio Code', version: '1.90.0' },
      rootUri: pathToFileURL(dir).href,
      capabilities: {
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
        window: { workDoneProgress: true },
        textDocument: { publishDiagnostics: { relatedInformation: true }, hover: { contentFormat: ['markdown'] } },
      },
      initializationOptions: initializationOptions(settings, true, undefined),
      workspaceFolders: [{ uri: pathToFileURL(dir).href, name: 'w' }],
    });
    expect(init.serverInfo?.name).toBe('kernelpro');
    // Every setting the extension sends is one the server knows (it warns on others).
    await new Promise((r) => setTimeout(r, 200));
    expect(shownMessages.filter((m) => m.includes('unknown setting'))).toEqual([]);
    await conn.sendNotification(InitializedNotification.type, {});
  });

  afterAll(async () => {
    await conn?.sendRequest(ShutdownRequest.type).catch(() => undefined);
    proc?.kill();
  });

  it('publishes findings after open and after save', async () => {
    await conn.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: 'cuda-cpp', version: 1, text: readFileSync(file, 'utf8') },
    });
    await diagnostics(0, () => true, 'publish after didOpen');
    const beforeSave = published.length;
    const progressBefore = progress.length;
    await conn.sendNotification(DidSaveTextDocumentNotification.type, { textDocument: { uri } });
    // A save publishes twice (the compile step, then the SASS step): wait for
    // the settled one, with the SASS finding that saxpy_fp64 multiplies by the double literal 2.0.
    const onFp64 = (p: PublishDiagnosticsParams) => p.diagnostics.some((d) => d.range.start.line === fp64Line && d.source === 'kernelpro');
    const saved = await diagnostics(beforeSave, onFp64, 'the SASS step\'s findings after didSave');
    // ... and for the analysis's progress to end: the SASS map is in place for Show SASS.
    const analysed = () => progress.slice(progressBefore).some((p) => String(p.token).startsWith('kernelpro-analysis:') && p.value.kind === 'end');
    for (let waited = 0; !analysed() && waited < 90_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const sources = new Set(saved.diagnostics.map((d) => d.source));
    expect([...sources].every((s) => ['nvcc', 'kernelpro', 'ncu', 'spec'].includes(s!))).toBe(true);
  });

  it('lists kernels and puts Profile / Optimize lenses above each', async () => {
    const symbols = (await conn.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri } })) as { name: string; detail?: string }[];
    expect(symbols.filter((s) => s.detail === '__global__').map((s) => s.name)).toEqual([
      'saxpy_fp64',
      'strided_copy',
      'matmul_naive',
      'transpose_conflicts',
      'divergent',
    ]);
    const lenses = await conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
    const above = (line: number) => lenses!.filter((l) => l.range.start.line === line).map((l) => l.command?.command);
    expect(above(kernelLine)).toContain('kernelpro.optimize');
    // Profile where it can run; where doctor finds no GPU or ncu (issue 32) the lens says what is
    // missing and explains on click instead of failing.
    const profile = lenses!.find((l) => l.range.start.line === kernelLine && /Profile/.test(l.command?.title ?? ''));
    if (profile?.command?.command === 'kernelpro.explain') {
      expect(profile.command.title).toMatch(/^▶ Profile: no /);
      expect(String(profile.command.arguments?.[0])).toMatch(/^profiling cannot run here: no .*To fix it: /);
    } else {
      expect(profile?.command?.command).toBe('kernelpro.profile');
    }
  });

  it('hovers a kernel name with its resources', async () => {
    const hover = await conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: { line: kernelLine, character: 18 } });
    expect(JSON.stringify(hover?.contents)).toContain('saxpy_fp64');
  });

  it('answers Show SASS for a line and the doctor, as the extension asks them', async () => {
    const sass = await conn.sendRequest(ExecuteCommandRequest.type, { command: 'kernelpro.showSass', arguments: [uri, fp64Line] });
    expect(sass).toEqual(expect.stringContaining('```sass'));
    const doctor = await conn.sendRequest(ExecuteCommandRequest.type, { command: 'kernelpro.doctor', arguments: [] });
    expect(doctor).toEqual(expect.stringMatching(/^ok\s+nvcc:/m));
  });

  it('optimizes with the stub evaluator and offers the result as a code action edit', async () => {
    const result = await conn.sendRequest(ExecuteCommandRequest.type, {
      command: 'kernelpro.optimize',
      arguments: [uri, 'saxpy_fp64'],
    });
    expect(result).toMatchObject({ kernel: 'saxpy_fp64', speedup: 1.5 });
    const at = { line: kernelLine, character: 18 };
    const actions = (await conn.sendRequest(CodeActionRequest.type, {
      textDocument: { uri },
      range: { start: at, end: at },
      context: { diagnostics: [] },
    })) as CodeAction[];
    const apply = actions.find((a) => a.title.startsWith('Apply optimized saxpy_fp64'));
    expect(apply?.edit?.changes?.[uri] ?? apply?.edit?.documentChanges).toBeTruthy();
  });

  it('profiles on the extension\'s own cancellable token and answers in words, naming VS Code\'s settings', async () => {
    const reply = (await conn.sendRequest(ExecuteCommandRequest.type, {
      command: 'kernelpro.profile',
      arguments: [uri],
      workDoneToken: 'kp-profile-1',
    })) as { message?: string; error?: string };
    const mine = progress.filter((p) => p.token === 'kp-profile-1').map((p) => p.value);
    expect(typeof reply.message).toBe('string');
    if (/cannot run here/.test(reply.message ?? '')) {
      // Doctor knows what is missing (issue 32): said at once, nothing started, in VS Code's setting names.
      expect(mine).toEqual([]);
      expect(reply.message).toMatch(/^Profiling cannot run here: no /);
      if (reply.message?.includes('(ncu)')) expect(reply.message).toContain('`kernelpro.ncu`');
    } else {
      expect(mine[0]).toMatchObject({ kind: 'begin', cancellable: true });
      expect(mine.at(-1)?.kind).toBe('end');
    }
    expect(reply.message).not.toMatch(/^\{/);
    // Without ncu here, the reason names VS Code's setting (clientInfo says which editor this is).
    if (reply.error && reply.message?.includes('ncu was not found')) expect(reply.message).toContain('`kernelpro.ncu`');
  });
});
