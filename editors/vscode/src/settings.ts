// The server's settings object (protocol.md: initializationOptions and the
// "kernelpro" workspace/configuration section) built from VS Code settings.
// Their defaults and descriptions are defined once, in the server
// (server/config/src/settings_doc.rs generates package.json's); the tests
// check that these fallbacks are package.json's defaults.

/** The part of vscode.WorkspaceConfiguration we read. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

export interface ServerSettings {
  trusted: boolean;
  nvcc: string | null;
  ncu: string | null;
  arch: string;
  includePaths: string[];
  extraFlags: string[];
  compileTimeoutSecs: number;
  blockSize: number;
  profileOnSave: boolean;
  clockControl: string;
  runner: string[];
  runTimeoutSecs: number;
  profileTimeoutSecs: number;
  profileBackend: string;
  llm: { enabled: boolean; provider: string; endpoint: string | null; model: string | null };
  optimize: { budget: number; timeSecs: number; evaluator: string; energy: boolean; devices: number[]; profileOriginal: boolean };
}

/** Settings only the client reads; they never reach the server. */
export const CLIENT_ONLY_SETTINGS = ['serverPath', 'hover', 'trace.server'];

function or<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/** `trusted` comes from workspace trust, never from a setting. */
export function serverSettings(c: ConfigReader, trusted: boolean): ServerSettings {
  return {
    trusted,
    nvcc: c.get<string | null>('nvcc') || null,
    ncu: c.get<string | null>('ncu') || null,
    arch: or(c.get<string>('arch'), 'sm_90'),
    includePaths: or(c.get<string[]>('includePaths'), []),
    extraFlags: or(c.get<string[]>('extraFlags'), []),
    compileTimeoutSecs: or(c.get<number>('compileTimeoutSecs'), 60),
    blockSize: or(c.get<number>('blockSize'), 256),
    profileOnSave: trusted && or(c.get<boolean>('profileOnSave'), false),
    clockControl: or(c.get<string>('clockControl'), 'none'),
    runner: or(c.get<string[]>('runner'), []),
    runTimeoutSecs: or(c.get<number>('runTimeoutSecs'), 10),
    profileTimeoutSecs: or(c.get<number>('profileTimeoutSecs'), 300),
    profileBackend: or(c.get<string>('profileBackend'), 'auto'),
    llm: {
      enabled: trusted && or(c.get<boolean>('llm.enabled'), false),
      provider: or(c.get<string>('llm.provider'), 'openai'),
      endpoint: c.get<string | null>('llm.endpoint') || null,
      model: c.get<string | null>('llm.model') || null,
    },
    optimize: {
      budget: or(c.get<number>('optimize.budget'), 60),
      timeSecs: or(c.get<number>('optimize.timeSecs'), 600),
      evaluator: or(c.get<string>('optimize.evaluator'), 'gpu'),
      energy: or(c.get<boolean>('optimize.energy'), true),
      devices: or(c.get<number[]>('optimize.devices'), [0]),
      profileOriginal: or(c.get<boolean>('optimize.profileOriginal'), true),
    },
  };
}

/**
 * initializationOptions: the settings plus the LLM key, which is sent only
 * to a trusted workspace's server and only here (never in settings).
 */
export function initializationOptions(
  c: ConfigReader,
  trusted: boolean,
  llmKey: string | undefined,
): ServerSettings & { llmKey?: string } {
  const settings = serverSettings(c, trusted);
  return trusted && llmKey ? { ...settings, llmKey } : settings;
}

/** Settings whose scope is the machine (package.json's `machine` / `machine-overridable`). */
export const MACHINE_SETTINGS = ['serverPath', 'nvcc', 'ncu', 'llm.enabled', 'llm.provider', 'llm.endpoint'];

/**
 * The command that opens the Settings UI where `key` (without `kernelpro.`) is
 * set: in a remote window (code-server, SSH, containers: `vscode.env.remoteName`
 * set) a machine setting lives in the Remote tab, where the User tab says
 * "No Settings Found"; elsewhere the User tab.
 */
export function openSettingsCommand(
  key: string,
  remoteName: string | undefined,
): { command: string; args: { query: string } } {
  const query = `kernelpro.${key}`;
  const remote = !!remoteName && MACHINE_SETTINGS.includes(key);
  return { command: remote ? 'workbench.action.openRemoteSettings' : 'workbench.action.openSettings', args: { query } };
}
