// Where the server binary comes from: the setting, the binary bundled for this
// platform, or PATH, in that order.
import * as path from 'node:path';

export interface BinaryLookup {
  setting: string | null | undefined;
  extensionPath: string;
  platform: string; // process.platform
  arch: string; // process.arch
  envPath: string | undefined;
  isExecutable: (file: string) => boolean;
}

export type BinaryResult =
  | { path: string; source: 'setting' | 'bundled' | 'PATH' }
  | { error: string; tried: string[] };

/** Folder name of the bundled binary: server/<platform>-<arch>/kernelpro. */
export function bundledDir(platform: string, arch: string): string {
  return `${platform}-${arch}`;
}

export function findServer(l: BinaryLookup): BinaryResult {
  const exe = l.platform === 'win32' ? 'kernelpro.exe' : 'kernelpro';
  if (l.setting) {
    if (l.isExecutable(l.setting)) return { path: l.setting, source: 'setting' };
    return {
      error: `kernelpro.serverPath is set to "${l.setting}", which is not an executable file.`,
      tried: [l.setting],
    };
  }
  const tried: string[] = [];
  const bundled = path.join(l.extensionPath, 'server', bundledDir(l.platform, l.arch), exe);
  tried.push(bundled);
  if (l.isExecutable(bundled)) return { path: bundled, source: 'bundled' };
  const sep = l.platform === 'win32' ? ';' : ':';
  for (const dir of (l.envPath ?? '').split(sep).filter(Boolean)) {
    const candidate = path.join(dir, exe);
    tried.push(candidate);
    if (l.isExecutable(candidate)) return { path: candidate, source: 'PATH' };
  }
  return {
    error:
      'The KernelPro server (kernelpro) was not found. Set "kernelpro.serverPath" to it, ' +
      'or build it in the KernelPro checkout with `cargo build --release -p kernelpro` ' +
      'and put target/release on PATH.',
    tried,
  };
}
