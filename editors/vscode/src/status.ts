// The status bar item: the server's state and the GPU it uses.
import * as vscode from 'vscode';

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing' | 'restricted';

const ICONS: Record<ServerState, string> = {
  starting: '$(sync~spin)',
  running: '$(chip)',
  stopped: '$(debug-stop)',
  missing: '$(error)',
  restricted: '$(shield)',
};

/**
 * The GPU from `kernelpro doctor`'s answer: its line reads "ok  GPU: NAME (...)"
 * when one is usable, "!!  GPU: why not" otherwise.
 */
export function gpuFromDoctor(doctor: string | undefined): string | undefined {
  for (const line of (doctor ?? '').split('\n')) {
    const m = /^(\S*)\s+GPU[^:]*:\s*(.+)$/.exec(line.trim());
    if (m) return m[1] === 'ok' ? m[2].replace(/\s*\(.*\)$/, '').trim() : 'no GPU';
  }
  return undefined;
}

/**
 * What the status bar says after "KernelPro": "no nvcc" when the compiler is
 * missing (nothing is compiled, whatever the GPU), else the GPU.
 */
export function summaryFromDoctor(doctor: string | undefined): string | undefined {
  const nvccMissing = (doctor ?? '').split('\n').some((line) => /^!!\s+nvcc:/.test(line.trim()));
  return nvccMissing ? 'no nvcc' : gpuFromDoctor(doctor);
}

export class Status {
  readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('kernelpro.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'KernelPro';
    this.item.command = 'kernelpro.showOutput';
    this.item.show();
  }

  set(state: ServerState, detail?: string, gpu?: string): void {
    // Restricted mode runs nothing on a GPU: say that, not which GPU there is.
    const what = state === 'restricted' ? 'restricted' : gpu;
    this.item.text = `${ICONS[state]} KernelPro${what ? `: ${what}` : ''}`;
    this.item.tooltip = `KernelPro server: ${state}${detail ? `\n${detail}` : ''}`;
    this.item.backgroundColor =
      state === 'missing' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
