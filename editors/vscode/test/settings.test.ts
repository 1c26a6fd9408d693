import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_ONLY_SETTINGS, MACHINE_SETTINGS, initializationOptions, openSettingsCommand, serverSettings } from '../src/settings';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const properties: Record<string, { default: unknown }> = pkg.contributes.configuration.properties;

/** A ConfigReader over flat dotted keys, as VS Code's configuration answers get(). */
function reader(values: Record<string, unknown>) {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

/** Every leaf of the settings object as a dotted key. */
function leaves(o: object, prefix = ''): string[] {
  return Object.entries(o).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) ? leaves(v, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

const defaults = {
  trusted: true,
  nvcc: null,
  ncu: null,
  arch: 'sm_90',
  includePaths: [],
  extraFlags: [],
  compileTimeoutSecs: 60,
  blockSize: 256,
  profileOnSave: false,
  clockControl: 'none',
  runner: [],
  runTimeoutSecs: 10,
  profileTimeoutSecs: 300,
  profileBackend: 'auto',
  llm: { enabled: false, provider: 'openai', endpoint: null, model: null },
  optimize: { budget: 60, timeSecs: 600, evaluator: 'gpu', energy: true, devices: [0], profileOriginal: true },
};

describe('serverSettings', () => {
  it('gives protocol.md defaults when nothing is set', () => {
    expect(serverSettings(reader({}), true)).toEqual(defaults);
  });

  it('maps dotted settings to the nested protocol object', () => {
    const s = serverSettings(
      reader({
        nvcc: '/cuda/bin/nvcc',
        arch: 'sm_80',
        extraFlags: ['-O3'],
        runner: ['srun', '-G1'],
        'llm.enabled': true,
        'llm.provider': 'anthropic',
        'llm.model': 'm',
        'optimize.evaluator': 'stub:1.5',
        'optimize.budget': 4,
        'optimize.devices': [0, 1],
        serverPath: '/x/kernelpro',
      }),
      true,
    );
    expect(s).toEqual({
      ...defaults,
      nvcc: '/cuda/bin/nvcc',
      arch: 'sm_80',
      extraFlags: ['-O3'],
      runner: ['srun', '-G1'],
      llm: { enabled: true, provider: 'anthropic', endpoint: null, model: 'm' },
      optimize: { budget: 4, timeSecs: 600, evaluator: 'stub:1.5', energy: true, devices: [0, 1], profileOriginal: true },
    });
  });

  it('turns off running and the LLM in an untrusted workspace', () => {
    const s = serverSettings(reader({ profileOnSave: true, 'llm.enabled': true }), false);
    expect([s.trusted, s.profileOnSave, s.llm.enabled]).toEqual([false, false, false]);
  });

  it('sends the LLM key only to a trusted workspace, only in initializationOptions', () => {
    expect(initializationOptions(reader({}), true, 'sk-1').llmKey).toBe('sk-1');
    expect(initializationOptions(reader({}), false, 'sk-1')).not.toHaveProperty('llmKey');
    expect(initializationOptions(reader({}), true, undefined)).not.toHaveProperty('llmKey');
    expect(serverSettings(reader({ llmKey: 'sk-1' }), true)).not.toHaveProperty('llmKey');
  });
});

describe('package.json', () => {
  it('contributes every server setting, with the protocol default', () => {
    const serverKeys = leaves(defaults).filter((k) => k !== 'trusted');
    const contributed = Object.keys(properties).map((k) => k.replace(/^kernelpro\./, ''));
    expect(contributed.sort()).toEqual([...serverKeys, ...CLIENT_ONLY_SETTINGS].sort());
    for (const key of serverKeys) {
      const fallback = key.split('.').reduce<any>((o, k) => o[k], defaults);
      expect([key, properties[`kernelpro.${key}`].default]).toEqual([key, fallback]);
    }
  });

  it('has no setting for the key or for trust', () => {
    expect(Object.keys(properties).filter((k) => /key|secret|trust/i.test(k))).toEqual([]);
  });

  it('restricts, in untrusted workspaces, the settings that choose what runs or where data goes', () => {
    const trust = pkg.capabilities.untrustedWorkspaces;
    expect(trust.supported).toBe('limited');
    for (const key of trust.restrictedConfigurations) expect(properties).toHaveProperty([key]);
    expect(trust.restrictedConfigurations).toEqual(
      expect.arrayContaining([
        'kernelpro.serverPath',
        'kernelpro.nvcc',
        'kernelpro.ncu',
        'kernelpro.runner',
        'kernelpro.extraFlags',
        'kernelpro.llm.endpoint',
      ]),
    );
  });

  it('takes where the key goes from user settings only: the LLM routing settings are machine-scoped', () => {
    for (const key of ['kernelpro.llm.enabled', 'kernelpro.llm.provider', 'kernelpro.llm.endpoint']) {
      expect((properties[key] as { scope?: string }).scope).toBe('machine');
    }
  });

  it('starts on CUDA files and offers the four commands', () => {
    expect(pkg.activationEvents).toEqual(['onLanguage:cuda-cpp']);
    // cuda-cpp for .cu/.cuh; kernelpro-sass (Show SASS's documents) claims no file.
    expect(pkg.contributes.languages).toEqual([
      { id: 'cuda-cpp', extensions: ['.cu', '.cuh'] },
      { id: 'kernelpro-sass', aliases: ['NVIDIA SASS', 'sass-nvidia'] },
    ]);
    const titles = pkg.contributes.commands.map((c: { title: string }) => c.title);
    expect(titles).toEqual(
      expect.arrayContaining(['Optimize Kernel at Cursor', 'Profile File', 'Show SASS for Line', 'Restart Server']),
    );
  });
});

describe('openSettingsCommand', () => {
  it('lists exactly the machine-scoped settings of package.json', () => {
    const props = pkg.contributes.configuration.properties as Record<string, { scope?: string }>;
    const machine = Object.entries(props)
      .filter(([, p]) => p.scope === 'machine' || p.scope === 'machine-overridable')
      .map(([k]) => k.replace(/^kernelpro\./, ''));
    expect([...MACHINE_SETTINGS].sort()).toEqual(machine.sort());
  });
  it('opens the Remote tab for a machine setting in a remote window (code-server)', () => {
    expect(openSettingsCommand('serverPath', 'localhost:8080')).toEqual({
      command: 'workbench.action.openRemoteSettings',
      args: { query: 'kernelpro.serverPath' },
    });
  });
  it('opens the User tab locally, and for settings of any scope', () => {
    expect(openSettingsCommand('serverPath', undefined).command).toBe('workbench.action.openSettings');
    expect(openSettingsCommand('arch', 'localhost:8080')).toEqual({
      command: 'workbench.action.openSettings',
      args: { query: 'kernelpro.arch' },
    });
  });
});
