// Entry point: output channels, status bar, client, commands and the events
// that reconfigure or restart the server.
import * as vscode from 'vscode';
import { KernelProClient, UNTRUSTED_MESSAGE } from './client';
import { registerCommands } from './commands';
import { SECRET_KEY } from './secrets';
import { Status } from './status';

let kp: KernelProClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<KernelProClient> {
  const output = vscode.window.createOutputChannel('KernelPro');
  const trace = vscode.window.createOutputChannel('KernelPro Trace');
  const status = new Status();
  context.subscriptions.push(output, trace, status);
  kp = new KernelProClient(context, output, trace, status);
  const client = kp;
  registerCommands(context, client, output);

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('kernelpro.serverPath')) return client.restart();
      // Where the key goes is read only at start-up (the server ignores it in later updates).
      if (['enabled', 'provider', 'endpoint'].some((k) => e.affectsConfiguration(`kernelpro.llm.${k}`))) return client.restart();
      if (e.affectsConfiguration('kernelpro')) return client.pushSettings();
    }),
    // Trust and the key are given at start-up (initializationOptions, env).
    vscode.workspace.onDidGrantWorkspaceTrust(() => client.restart()),
    context.secrets.onDidChange((e) => (e.key === SECRET_KEY ? client.restart() : undefined)),
  );

  if (!vscode.workspace.isTrusted) {
    void vscode.window
      .showInformationMessage(UNTRUSTED_MESSAGE, 'Manage Workspace Trust')
      .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
  }
  await client.start();
  return client;
}

export async function deactivate(): Promise<void> {
  await kp?.stop();
}
