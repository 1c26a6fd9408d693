// Optimize and Profile as cancellable notifications. The language client
// shows server-created progress in the status bar, where Cancel is never
// offered; so the extension gives the server its own work-done token and
// shows that token's progress itself. `KernelPro: Cancel` cancels them all.
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  type LanguageClient,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from 'vscode-languageclient/node';

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/** The part of the LanguageClient a job uses. */
export type JobClient = Pick<LanguageClient, 'sendRequest' | 'sendNotification' | 'onProgress'>;

export class Jobs {
  /** Running jobs: token → how to cancel it. */
  private readonly running = new Map<string, () => void>();
  private next = 0;

  constructor(private readonly client: () => JobClient | undefined) {}

  get count(): number {
    return this.running.size;
  }

  /** Runs server command `command` under a cancellable notification titled `title`. */
  run(title: string, command: string, args: unknown[]): Thenable<unknown> {
    const client = this.client();
    if (!client) return Promise.reject(new Error('the KernelPro server is not running'));
    const token = `kernelpro-job-${process.pid}-${++this.next}`;
    const options = { location: vscode.ProgressLocation.Notification, title, cancellable: true };
    return vscode.window.withProgress(options, async (progress, cancellation) => {
      let shown = 0;
      const sub = client.onProgress(WorkDoneProgress.type, token, (value: ProgressValue) => {
        if (value.kind === 'end') return;
        // VS Code adds increments; the server reports totals.
        const pct = value.percentage;
        const increment = pct === undefined ? undefined : Math.max(0, pct - shown);
        if (pct !== undefined) shown = Math.max(shown, pct);
        progress.report({ message: value.message, increment });
      });
      const cancel = () => void client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
      const onCancel = cancellation.onCancellationRequested(cancel);
      this.running.set(token, cancel);
      try {
        return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken: token });
      } finally {
        sub.dispose();
        onCancel.dispose();
        this.running.delete(token);
      }
    });
  }

  /** Asks the server to stop every running job; returns how many there were. */
  cancelAll(): number {
    const n = this.running.size;
    for (const cancel of this.running.values()) cancel();
    return n;
  }
}
