// Starts, stops and configures the language client for `kernelpro lsp`.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import {
  CloseAction,
  CodeLensRequest,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type Middleware,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { findServer } from './binary';
import { GAVE_UP_MESSAGE, RestartNotice, shouldRestart } from './crashes';
import { CPP_EXTENSIONS, type HoverMode, shouldHover } from './hover';
import { ENV_KEY, llmKey } from './secrets';
import { initializationOptions, openSettingsCommand, serverSettings } from './settings';
import { Jobs } from './jobs';
import { INSTALL_CUDA, OPEN_NVCC_SETTING, type Status, missingCompilerNotice, summaryFromDoctor } from './status';

export const DOCUMENT_SELECTOR = [{ scheme: 'file', language: 'cuda-cpp' }];

export const UNTRUSTED_MESSAGE =
  'KernelPro is in restricted mode: this workspace is not trusted, so nothing is compiled, ' +
  'run or sent to an LLM. Trust the workspace to see compiler, SASS and profiler findings.';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('kernelpro');
}

/** Hover only where KernelPro adds to clangd / cpptools (see hover.ts). */
function hoverMiddleware(client: () => LanguageClient | undefined): Middleware['provideHover'] {
  return (document, position, token, next) => {
    const otherCpp = CPP_EXTENSIONS.some((id) => vscode.extensions.getExtension(id)?.isActive);
    const findings = client()?.diagnostics?.get(document.uri) ?? [];
    const onFinding = findings.some((d) => d.range.start.line <= position.line && position.line <= d.range.end.line);
    const word = document.getWordRangeAtPosition(position);
    const line = document.lineAt(position.line).text;
    const onKernel = !!word && /__global__/.test(line.slice(0, word.start.character));
    const mode = config().get<HoverMode>('hover') ?? 'auto';
    return shouldHover(mode, otherCpp, onFinding, onKernel) ? next(document, position, token) : null;
  };
}

export class KernelProClient {
  client: LanguageClient | undefined;
  /** Optimize / profile runs, each with its own cancellable notification. */
  readonly jobs = new Jobs(() => this.client);
  /** Server commands the extension runs itself (commands.ts), code lenses' included. */
  readonly serverCommands = new Map<string, (args: unknown[]) => Promise<unknown>>();
  /** Shown while the server restarts after a crash; closes once it runs again. */
  readonly restartNotice = new RestartNotice();
  /** When the server stopped unexpectedly (the last few minutes'). */
  private readonly crashes: number[] = [];
  /** stop() was asked for: the server's exit is no crash. */
  private stopping = false;
  /** The missing-compiler notification was shown for this summary ("no nvcc"): once until it changes. */
  private noticeShownFor: string | undefined;
  /** How many times doctor was asked: only the latest asking's answer is shown (see refreshStatus). */
  private doctorAsked = 0;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
    private readonly trace: vscode.OutputChannel,
    private readonly status: Status,
  ) {}

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  async start(): Promise<void> {
    const found = findServer({
      setting: config().get<string | null>('serverPath'),
      extensionPath: this.context.extensionPath,
      platform: process.platform,
      arch: process.arch,
      envPath: process.env.PATH,
      isExecutable,
    });
    if ('error' in found) {
      this.status.set('missing', found.error);
      this.output.appendLine(`${found.error}\nLooked at:\n  ${found.tried.join('\n  ')}`);
      const choice = await vscode.window.showErrorMessage(found.error, 'Open Settings', 'Show Log');
      if (choice === 'Open Settings') {
        const open = openSettingsCommand('serverPath', vscode.env.remoteName);
        await vscode.commands.executeCommand(open.command, open.args);
      } else if (choice === 'Show Log') {
        this.output.show();
      }
      return;
    }
    this.output.appendLine(`Starting ${found.path} lsp (from ${found.source}; trusted: ${this.trusted})`);

    const trusted = this.trusted;
    const key = trusted ? await llmKey(this.context.secrets, process.env) : undefined;
    // An untrusted workspace's server gets no key, not even the inherited one.
    const env = { ...process.env };
    if (!trusted) delete env[ENV_KEY];
    const serverOptions: ServerOptions = { command: found.path, args: ['lsp'], options: { env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      initializationOptions: initializationOptions(config(), trusted, key),
      outputChannel: this.output,
      traceOutputChannel: this.trace,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // Our own messages (crashes.ts): the client's toasts stay up after the server recovers.
      errorHandler: {
        error: (_error, _message, count) => ({
          action: count && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => this.serverClosed(),
      },
      middleware: {
        provideHover: hoverMiddleware(() => this.client),
        // Lenses come from the same analysis as the findings: ask for them again
        // once it is published, or they stay as they were before the compile.
        handleDiagnostics: (uri, diagnostics, next) => {
          next(uri, diagnostics);
          const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
          if (doc) this.client?.getFeature(CodeLensRequest.method)?.getProvider(doc)?.onDidChangeCodeLensEmitter.fire();
        },
        // A lens's Optimize / Profile gets the same cancellable notification
        // and message as the palette's.
        executeCommand: (command, args, next) => {
          const run = this.serverCommands.get(command);
          return run ? run(args) : next(command, args);
        },
        // The server offers no completion; never add any beside clangd / cpptools.
        provideCompletionItem: () => [],
        workspace: {
          // workspace/configuration "kernelpro" is the server's view, with trust.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) return answers;
            return params.items.map((item, i) =>
              item.section === 'kernelpro' ? serverSettings(config(), this.trusted) : answers[i],
            );
          },
        },
      },
    };
    const client = new LanguageClient('kernelpro', 'KernelPro', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Starting) this.status.set('starting');
      if (e.newState === State.Stopped) this.status.set('stopped');
      // Back after a crash: the notice goes, the status bar says so again.
      if (e.newState === State.Running && this.restartNotice.shown) {
        this.restartNotice.dismiss();
        this.output.appendLine('The server is running again.');
        void this.gpu().then((gpu) =>
          this.status.set(this.trusted ? 'running' : 'restricted', this.trusted ? undefined : UNTRUSTED_MESSAGE, gpu),
        );
      }
    });
    this.status.set('starting');
    try {
      await client.start();
    } catch (e) {
      // The client has already shown its own error; keep the reason at hand.
      this.status.set('stopped', `The server failed to start: ${e}`);
      this.output.appendLine(`The server failed to start: ${e}`);
      return;
    }
    if (trusted) await this.refreshStatus();
    else this.status.set('restricted', UNTRUSTED_MESSAGE);
  }

  /**
   * Asks doctor again and shows its live state: at start, after a settings
   * change and after an install, so the status bar never keeps saying
   * "no nvcc" once the compiler is there. A missing compiler gets one
   * notification with an install button (again only after it was found and lost).
   * Answers can come back out of order (doctor runs each tool's `--version`: a
   * real nvcc is slower to answer than a path that names nothing), so an answer
   * older than the latest asked is dropped: the status bar never goes back to
   * the state of a setting that has since changed.
   */
  async refreshStatus(): Promise<void> {
    if (!this.client || !this.trusted) return;
    const asked = ++this.doctorAsked;
    const summary = await this.gpu();
    if (!this.client || asked !== this.doctorAsked) return;
    this.status.set('running', undefined, summary);
    const notice = missingCompilerNotice(summary);
    if (!notice) {
      this.noticeShownFor = undefined;
      return;
    }
    if (this.noticeShownFor === summary) return;
    this.noticeShownFor = summary;
    void Promise.resolve(vscode.window.showWarningMessage(notice.text, ...notice.buttons)).then(async (choice) => {
      if (choice === INSTALL_CUDA) await vscode.commands.executeCommand('kernelpro.installCompiler');
      else if (choice === OPEN_NVCC_SETTING) {
        const open = openSettingsCommand('nvcc', vscode.env.remoteName);
        await vscode.commands.executeCommand(open.command, open.args);
      } else if (choice === 'Show Log') this.output.show();
    });
  }

  /** The GPU the server sees (or "no nvcc"), from `kernelpro.doctor`. */
  private async gpu(): Promise<string | undefined> {
    try {
      const doctor = await this.client?.sendRequest(ExecuteCommandRequest.type, {
        command: 'kernelpro.doctor',
        arguments: [],
      });
      if (typeof doctor === 'string') this.output.appendLine(doctor);
      return summaryFromDoctor(typeof doctor === 'string' ? doctor : undefined);
    } catch (e) {
      this.output.appendLine(`kernelpro.doctor failed: ${e}`);
      return undefined;
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.restartNotice.dismiss();
    this.stopping = true;
    try {
      if (client?.isRunning()) await client.stop();
    } finally {
      this.stopping = false;
    }
  }

  /** The server's connection closed: restart it (with a notice that closes once it
   * is back), unless it keeps stopping; then one error that stays, with the log. */
  serverClosed(): { action: CloseAction; handled: boolean } {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    if (shouldRestart(this.crashes, Date.now())) {
      this.output.appendLine('The server stopped unexpectedly; restarting it.');
      this.restartNotice.show();
      return { action: CloseAction.Restart, handled: true };
    }
    this.restartNotice.dismiss();
    this.output.appendLine(GAVE_UP_MESSAGE);
    this.status.set('stopped', GAVE_UP_MESSAGE);
    void Promise.resolve(vscode.window.showErrorMessage(GAVE_UP_MESSAGE, 'Show Log')).then((choice) => {
      if (choice === 'Show Log') this.output.show();
    });
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Settings changed: the server takes them without a restart; doctor is asked again (a new nvcc path). */
  async pushSettings(): Promise<void> {
    await this.client?.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { kernelpro: serverSettings(config(), this.trusted) },
    });
    await this.refreshStatus();
  }
}
