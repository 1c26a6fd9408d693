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
  const failed = (name: string) => (doctor ?? '').split('\n').some((line) => new RegExp(`^!!\\s+${name}:`).test(line.trim()));
  if (failed('nvcc')) return 'no nvcc';
  // nvcc preprocesses every file with g++: without it nothing compiles either.
  if (failed('host compiler')) return 'no g++';
  return gpuFromDoctor(doctor);
}

/** What a missing compiler's notification says and offers, or nothing when the compilers are there. */
export function missingCompilerNotice(summary: string | undefined): { text: string; buttons: string[] } | undefined {
  if (summary === 'no nvcc') {
    return {
      text:
        'KernelPro: the CUDA compiler (nvcc) was not found, so nothing is compiled, profiled or optimized. ' +
        'Install it (the pinned compiler wheels, into the extension\'s storage: about a minute), or set kernelpro.nvcc.',
      buttons: [INSTALL_CUDA, OPEN_NVCC_SETTING],
    };
  }
  if (summary === 'no g++') {
    return {
      text:
        'KernelPro: nvcc needs a host C++ compiler (g++) on PATH, and none was found, so nothing compiles. ' +
        'Install one (e.g. `sudo apt-get install g++`) or set NVCC_CCBIN, then restart the server. See KernelPro: Show Server Log (doctor) for details.',
      buttons: ['Show Log'],
    };
  }
  return undefined;
}

export const INSTALL_CUDA = 'Install CUDA Compiler';
export const OPEN_NVCC_SETTING = 'Open Settings';

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
