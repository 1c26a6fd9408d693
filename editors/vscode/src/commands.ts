// The extension's commands. The server's own commands (kernelpro.optimize,
// kernelpro.profile, ... used by code lenses) are registered by the client.
import * as vscode from 'vscode';
import { DocumentSymbolRequest, ExecuteCommandRequest } from 'vscode-languageclient/node';
import type { KernelProClient } from './client';
import { UNTRUSTED_MESSAGE } from './client';
import { SECRET_KEY } from './secrets';
import { kernelAt } from './symbols';

/** A server command's answer in one line: its text, its `title`, or its JSON. */
function describe(result: unknown): string {
  if (result === null || result === undefined) return 'done';
  if (typeof result === 'string') return result;
  const title = (result as { title?: unknown }).title;
  return typeof title === 'string' ? title : JSON.stringify(result);
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
    const result = await serverCommand('kernelpro.optimize', [uri, kernel]);
    void vscode.window.showInformationMessage(
      `KernelPro: optimize ${kernel}: ${describe(result)}. Apply it from the Quick Fix menu.`,
    );
  });

  register('kernelpro.profileFile', async () => {
    const editor = cudaEditor();
    if (!editor || needsTrust()) return;
    const result = await serverCommand('kernelpro.profile', [editor.document.uri.toString()]);
    void vscode.window.showInformationMessage(`KernelPro: profile: ${describe(result)}`);
  });

  register('kernelpro.showSassForLine', async () => {
    const editor = cudaEditor();
    if (!editor) return;
    const line = editor.selection.active.line;
    const sass = await serverCommand('kernelpro.showSass', [editor.document.uri.toString(), line]);
    const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: describe(sass) });
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true });
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
}
