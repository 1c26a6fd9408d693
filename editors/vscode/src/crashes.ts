// What the extension shows when the server stops unexpectedly. The language
// client's own error toast cannot be closed by code, so it stayed up after the
// server had restarted and was working again (issue 22, item 4). Instead: a
// notification that closes itself once the server runs again, and a toast
// that stays only when KernelPro gives up restarting.
import * as vscode from 'vscode';

/** At most this many restarts within `CRASH_WINDOW_MS`, as the language client's default. */
export const MAX_RESTARTS = 4;
export const CRASH_WINDOW_MS = 3 * 60 * 1000;

/** Whether to restart after a crash at `now`, given the earlier crashes' times (kept in `crashes`). */
export function shouldRestart(crashes: number[], now: number): boolean {
  crashes.push(now);
  while (crashes.length && now - crashes[0] > CRASH_WINDOW_MS) crashes.shift();
  return crashes.length <= MAX_RESTARTS;
}

export const RESTARTING_MESSAGE = 'KernelPro: the server stopped unexpectedly and is restarting…';
export const GAVE_UP_MESSAGE =
  `KernelPro: the server stopped ${MAX_RESTARTS + 1} times within 3 minutes and was not restarted. ` +
  'Its log (KernelPro output) says why; run "KernelPro: Restart Server" once it is fixed.';

/** The one "restarting" notification; it closes when the server is running again. */
export class RestartNotice {
  private close: (() => void) | undefined;

  /** Shows the notice (once, however many crashes come before the server is back). */
  show(): void {
    if (this.close) return;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: RESTARTING_MESSAGE, cancellable: false },
      () =>
        new Promise<void>((resolve) => {
          this.close = resolve;
        }),
    );
  }

  /** The server runs again (or was stopped on purpose): the notice goes away. */
  dismiss(): void {
    this.close?.();
    this.close = undefined;
  }

  get shown(): boolean {
    return this.close !== undefined;
  }
}
