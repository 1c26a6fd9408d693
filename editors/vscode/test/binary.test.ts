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
          'The KernelPro server (kernelpro) was not found. Set "kernelpro.serverPath", ' +
          'or build it with `cargo build --release -p kernelpro-cli` and put it on PATH.',
        tried: ['/ext/server/linux-x64/kernelpro', '/usr/local/bin/kernelpro', '/usr/bin/kernelpro'],
      },
    ));
});
