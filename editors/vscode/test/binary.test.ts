import { describe, expect, it } from 'vitest';
import { type BinaryLookup, findServer } from '../src/binary';

function check(lookup: Partial<BinaryLookup> & { executables: string[] }, expected: unknown) {
  const { executables, ...rest } = lookup;
  const result = findServer({
    setting: undefined,
    extensionPath: '/ext',
    platform: 'linux',
    arch: 'x64',
    envPath: '/usr/local/bin:/usr/bin',
    isExecutable: (f) => executables.includes(f),
    ...rest,
  });
  expect(result).toEqual(expected);
}

describe('findServer', () => {
  it('takes the setting first', () =>
    check(
      { setting: '/opt/kp/kernelpro', executables: ['/opt/kp/kernelpro', '/ext/server/linux-x64/kernelpro'] },
      { path: '/opt/kp/kernelpro', source: 'setting' },
    ));

  it('says so when the setting names no executable, without falling back', () =>
    check(
      { setting: '/nope/kernelpro', executables: ['/usr/bin/kernelpro'] },
      {
        error: 'kernelpro.serverPath is set to "/nope/kernelpro", which is not an executable file.',
        tried: ['/nope/kernelpro'],
      },
    ));

  it('then the binary bundled for the platform', () =>
    check(
      { arch: 'arm64', executables: ['/ext/server/linux-arm64/kernelpro', '/usr/bin/kernelpro'] },
      { path: '/ext/server/linux-arm64/kernelpro', source: 'bundled' },
    ));

  it('then PATH, in order', () =>
    check(
      { executables: ['/usr/bin/kernelpro', '/usr/local/bin/kernelpro'] },
      { path: '/usr/local/bin/kernelpro', source: 'PATH' },
    ));

  it('uses kernelpro.exe and ; on Windows', () =>
    check(
      { platform: 'win32', envPath: 'C:\\a;C:\\tools', executables: ['C:\\tools/kernelpro.exe'] },
      { path: 'C:\\tools/kernelpro.exe', source: 'PATH' },
    ));

  it('explains how to get the server when there is none', () =>
    check(
      { executables: [] },
      {
        error:
          'The KernelPro server (kernelpro) was not found. Set "kernelpro.serverPath" to it, ' +
          'or build it in the KernelPro checkout with `cargo build --release -p kernelpro` ' +
          'and put target/release on PATH.',
        tried: ['/ext/server/linux-x64/kernelpro', '/usr/local/bin/kernelpro', '/usr/bin/kernelpro'],
      },
    ));
});

describe('the build command in the message', () => {
  it('names the package cargo builds the server from', async () => {
    const { readFileSync } = await import('node:fs');
    const result = findServer({
      setting: undefined,
      extensionPath: '/ext',
      platform: 'linux',
      arch: 'x64',
      envPath: '',
      isExecutable: () => false,
    });
    const pkg = /cargo build --release -p (\S+)`/.exec('error' in result ? result.error : '')?.[1];
    const manifest = readFileSync(new URL('../../../server/cli/Cargo.toml', import.meta.url), 'utf8');
    expect(pkg).toBeDefined();
    expect(manifest).toMatch(new RegExp(`^name = "${pkg}"$`, 'm'));
    expect(manifest).toMatch(/^name = "kernelpro"$/m);
  });
});
