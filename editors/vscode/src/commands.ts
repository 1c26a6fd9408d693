// The extension's commands. The server's own commands (kernelpro.optimize,
// kernelpro.profile, ... used by code lenses) are registered by the client.
import * as vscode from 'vscode';
import { DocumentSymbolRequest, ExecuteCommandRequest } from 'vscode-languageclient/node';
import type { KernelProClient } from './client';
import { UNTRUSTED_MESSAGE } from './client';
import { SECRET_KEY } from './secrets';
import { optimizeMessage, profileMessage, type Shown } from './messages';
import { SASS_SCHEME, SassView } from './sassView';
import { kernelAt } from './symbols';

/** A server command's text answer (showSass), or a word when it has none. */
function describe(result: unknown): string {
  if (typeof result === 'string') return result;
  const title = (result as { title?: unknown } | null)?.title;
  return typeof title === 'string' ? title : 'done';
}

/** Shows a rendered reply; resolves to the button chosen, if any. */
function show(shown: Shown): Thenable<string | undefined> {
  const buttons = shown.apply ? [shown.apply] : [];
  return shown.kind === 'warning'
    ? vscode.window.showWarningMessage(shown.text, ...buttons)
    : vscode.window.showInformationMessage(shown.text, ...buttons);
}

/** Applies the server's "Apply optimized KERNEL" code action, the same edit Quick Fix offers. */
async function applyOptimized(uri: string, kernel: string): Promise<void> {
  const target = vscode.Uri.parse(uri);
  const doc = await vscode.workspace.openTextDocument(target);
  const whole = new vscode.Range(0, 0, doc.lineCount, 0);
  const actions =
    (await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', target, whole)) ?? [];
  const action = actions.find((a) => a.title.startsWith(`Apply optimized ${kernel}`));
  if (action?.edit && !action.disabled) {
    await vscode.workspace.applyEdit(action.edit);
  } else {
    void vscode.window.showWarningMessage(
      `KernelPro: the result for ${kernel} cannot be applied: ${action?.disabled?.reason ?? 'it is no longer offered'}.`,
    );
  }
}

export function registerCommands(
  context: vscode.ExtensionContext,
  kp: KernelProClient,
  output: vscode.OutputChannel,
): void {
  const cudaEditor = (): vscode.TextEditor | undefined => {
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.languageId === 'cuda-cpp' && kp.client) return editor;
    void vscode.window.showWarningMessage('KernelPro: open a .cu file with the server running first.');
    return undefined;
  };
  const needsTrust = (): boolean => {
    if (kp.trusted) return false;
    void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE);
    return true;
  };
  const serverCommand = (command: string, args: unknown[]) =>
    kp.client!.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });

  // Optimize and Profile, from the palette and from code lenses alike (the
  // client's middleware sends the lenses' commands here): a cancellable
  // notification, then the reply in words.
  const failed = (what: string) => (e: unknown) =>
    void vscode.window.showErrorMessage(`KernelPro: ${what} failed: ${(e as Error)?.message ?? e}`);
  const optimize = async (uri: string, kernel: string): Promise<unknown> => {
    try {
      const reply = await kp.jobs.run(`KernelPro: optimizing ${kernel}`, 'kernelpro.optimize', [uri, kernel]);
      void show(optimizeMessage(kernel, reply)).then((choice) => (choice ? applyOptimized(uri, kernel) : undefined));
      return reply;
    } catch (e) {
      failed(`optimize ${kernel}`)(e);
      return undefined;
    }
  };
  const profile = async (uri: string): Promise<unknown> => {
    try {
      const reply = await kp.jobs.run('KernelPro: profiling', 'kernelpro.profile', [uri]);
      void show(profileMessage(reply));
      return reply;
    } catch (e) {
      failed('profile')(e);
      return undefined;
    }
  };
  kp.serverCommands.set('kernelpro.optimize', (args) => optimize(String(args[0]), String(args[1])));
  kp.serverCommands.set('kernelpro.profile', (args) => profile(String(args[0])));

  const register = (id: string, run: () => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run));

  register('kernelpro.optimizeAtCursor', async () => {
    const editor = cudaEditor();
    if (!editor || needsTrust()) return;
    const uri = editor.document.uri.toString();
    const symbols = await kp.client!.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri } });
    const pos = editor.selection.active;
    const kernel = kernelAt(symbols as never, { line: pos.line, character: pos.character });
    if (!kernel) {
      void vscode.window.showWarningMessage('KernelPro: the cursor is not inside a __global__ kernel.');
      return;
    }
    await optimize(uri, kernel);
  });

  register('kernelpro.profileFile', async () => {
    const editor = cudaEditor();
    if (!editor || needsTrust()) return;
    await profile(editor.document.uri.toString());
  });

  register('kernelpro.cancel', () => {
    const n = kp.jobs.cancelAll();
    if (n === 0) void vscode.window.showInformationMessage('KernelPro: nothing to cancel (no optimize or profile is running).');
  });

  const sassView = new SassView();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(SASS_SCHEME, sassView));
  register('kernelpro.showSassForLine', async () => {
    const editor = cudaEditor();
    if (!editor) return;
    const line = editor.selection.active.line;
    const source = editor.document.uri.toString();
    const sass = await serverCommand('kernelpro.showSass', [source, line]);
    await sassView.show(source, line, describe(sass));
  });

  register('kernelpro.restartServer', () => kp.restart());
  register('kernelpro.showOutput', () => output.show());

  register('kernelpro.setLlmKey', async () => {
    const key = await vscode.window.showInputBox({
      prompt: 'LLM API key for KernelPro (kept in VS Code secret storage; empty to remove)',
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key) await context.secrets.store(SECRET_KEY, key);
    else await context.secrets.delete(SECRET_KEY);
  });

  // The pinned compiler wheels into the extension's own storage (the server
  // does the work: `kernelpro.installCuda`), then the nvcc setting points there.
  register('kernelpro.installCompiler', async () => {
    if (!kp.client) {
      void vscode.window.showWarningMessage('KernelPro: the server is not running; see KernelPro: Show Server Log.');
      return;
    }
    const dir = vscode.Uri.joinPath(context.globalStorageUri, 'cuda').fsPath;
    const reply = (await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'KernelPro: installing the CUDA compiler (a minute or two)' },
      () => serverCommand('kernelpro.installCuda', [dir]),
    )) as { nvcc?: string; message?: string; error?: string } | undefined;
    if (reply?.nvcc) {
      await vscode.workspace.getConfiguration('kernelpro').update('nvcc', reply.nvcc, vscode.ConfigurationTarget.Global);
      // The status bar and the lenses follow at once (the setting's change event asks again too).
      await kp.refreshStatus();
      void vscode.window.showInformationMessage(`KernelPro: ${reply.message ?? 'the CUDA compiler is installed.'}`);
    } else {
      void vscode.window.showErrorMessage(`KernelPro: ${reply?.message ?? 'installing the CUDA compiler failed.'}`);
    }
  });
}
