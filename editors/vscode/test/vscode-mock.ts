// A stand-in for the `vscode` module: records what the extension asks of the
// editor and lets a test set trust, settings, secrets and the active editor.
type Listener<T> = (e: T) => unknown;

class Emitter<T> {
  listeners: Listener<T>[] = [];
  event = (l: Listener<T>) => {
    this.listeners.push(l);
    return { dispose: () => {} };
  };
  async fire(e: T) {
    for (const l of this.listeners) await l(e);
  }
}

export const state = {
  trusted: true,
  settings: {} as Record<string, unknown>,
  messages: [] as { kind: string; text: string }[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  executed: [] as unknown[][],
  statusBar: { text: '', tooltip: '' as unknown },
  activeTextEditor: undefined as unknown,
  extensions: new Set<string>(),
  configChanged: new Emitter<{ affectsConfiguration: (s: string) => boolean }>(),
  trustGranted: new Emitter<void>(),
  progress: [] as ProgressShown[],
  /** The buttons offered with each of `messages`. */
  buttons: [] as string[][],
  /** The button the user picks on the next messages that offer it (by its label). */
  click: new Set<string>(),
  /** `vscode.env.remoteName`: set in code-server, SSH and containers. */
  remoteName: undefined as string | undefined,
  /** Settings written through getConfiguration().update(). */
  updated: [] as [string, unknown][],
};

/** A withProgress notification: its options, what was reported, and its Cancel button. */
export interface ProgressShown {
  options: { location: number; title: string; cancellable: boolean };
  reports: { message?: string; increment?: number }[];
  cancel: () => Promise<void>;
  done: boolean;
}

export function reset(): void {
  state.trusted = true;
  state.settings = {};
  state.messages = [];
  state.commands = new Map();
  state.executed = [];
  state.activeTextEditor = undefined;
  state.extensions = new Set();
  state.configChanged = new Emitter();
  state.trustGranted = new Emitter();
  state.progress = [];
  state.buttons = [];
  state.click = new Set();
  state.remoteName = undefined;
  state.updated = [];
}

export const env = {
  get remoteName() {
    return state.remoteName;
  },
};

/** Change settings as the Settings editor would, firing the change event. */
export async function changeSettings(changes: Record<string, unknown>): Promise<void> {
  Object.assign(state.settings, changes);
  const keys = Object.keys(changes).map((k) => `kernelpro.${k}`);
  await state.configChanged.fire({
    affectsConfiguration: (s: string) => keys.some((k) => k === s || k.startsWith(`${s}.`)),
  });
}

export const workspace = {
  get isTrusted() {
    return state.trusted;
  },
  getConfiguration: (section: string) => ({
    get: <T>(key: string): T | undefined => {
      if (section !== 'kernelpro') return undefined;
      if (key in state.settings) return state.settings[key] as T;
      // Nested reads (get('llm')) see dotted settings as an object, like VS Code.
      const nested = Object.entries(state.settings).filter(([k]) => k.startsWith(`${key}.`));
      return nested.length ? (Object.fromEntries(nested.map(([k, v]) => [k.slice(key.length + 1), v])) as T) : undefined;
    },
    update: async (key: string, value: unknown) => {
      state.updated.push([key, value]);
    },
  }),
  onDidChangeConfiguration: (l: Listener<{ affectsConfiguration: (s: string) => boolean }>) =>
    state.configChanged.event(l),
  onDidGrantWorkspaceTrust: (l: Listener<void>) => state.trustGranted.event(l),
  textDocuments: [] as { uri: { toString(): string } }[],
  providers: new Map<string, { provideTextDocumentContent(uri: unknown): string }>(),
  registerTextDocumentContentProvider(scheme: string, provider: { provideTextDocumentContent(uri: unknown): string }) {
    this.providers.set(scheme, provider);
    return { dispose: () => this.providers.delete(scheme) };
  },
  /** An untitled document from `init`, or a virtual one from its scheme's provider. */
  openTextDocument: async (init: { language: string; content: string } | Uri) => {
    if (!(init instanceof Uri)) return { ...init, uri: 'untitled:1' };
    const provider = workspace.providers.get(init.value.split(':')[0]);
    return { uri: init, content: provider?.provideTextDocumentContent(init), languageId: 'plaintext' };
  },
};

function message(kind: string) {
  return async (text: string, ...buttons: unknown[]) => {
    state.messages.push({ kind, text });
    const offered = buttons.filter((b) => typeof b === 'string') as string[];
    state.buttons.push(offered);
    return offered.find((b) => state.click.has(b));
  };
}

export const window = {
  get activeTextEditor() {
    return state.activeTextEditor;
  },
  createOutputChannel: (name: string) => ({ name, lines: [] as string[], appendLine(l: string) { this.lines.push(l); }, show() {}, dispose() {} }),
  createStatusBarItem: () => {
    const item = { text: '', tooltip: '', name: '', command: '', backgroundColor: undefined, show() {}, dispose() {} };
    state.statusBar = item;
    return item;
  },
  showErrorMessage: message('error'),
  showWarningMessage: message('warning'),
  showInformationMessage: message('info'),
  showInputBox: async () => undefined,
  withProgress: async <T>(
    options: ProgressShown['options'],
    task: (p: { report(v: { message?: string; increment?: number }): void }, t: unknown) => Promise<T>,
  ): Promise<T> => {
    const cancelled = new Emitter<void>();
    const shown: ProgressShown = { options, reports: [], cancel: () => cancelled.fire(), done: false };
    state.progress.push(shown);
    try {
      return await task({ report: (v) => shown.reports.push(v) }, { onCancellationRequested: cancelled.event });
    } finally {
      shown.done = true;
    }
  },
  showTextDocument: async (doc: unknown) => {
    state.executed.push(['showTextDocument', doc]);
  },
};

export const commands = {
  registerCommand: (id: string, run: (...args: unknown[]) => unknown) => {
    state.commands.set(id, run);
    return { dispose: () => state.commands.delete(id) };
  },
  executeCommand: async (...args: unknown[]) => {
    state.executed.push(args);
    const own = state.commands.get(args[0] as string);
    if (own) return own(...args.slice(1));
  },
};

export const languages = {
  setTextDocumentLanguage: async <T extends object>(doc: T, languageId: string) => ({ ...doc, languageId }),
};

export const extensions = {
  getExtension: (id: string) => (state.extensions.has(id) ? { isActive: true } : undefined),
};

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export class EventEmitter<T> {
  private readonly inner = new Emitter<T>();
  event = this.inner.event;
  fire(e: T) {
    void this.inner.fire(e);
  }
  dispose() {}
}
export enum ProgressLocation {
  Notification = 15,
}
export class Uri {
  constructor(readonly value: string) {}
  static parse(value: string) {
    return new Uri(value);
  }
  static joinPath(base: Uri, ...parts: string[]) {
    return new Uri([base.value, ...parts].join('/'));
  }
  get fsPath() {
    return this.value.replace(/^file:\/\//, '');
  }
  toString() {
    return this.value;
  }
}
export class Range {
  constructor(
    readonly startLine: number,
    readonly startCharacter: number,
    readonly endLine: number,
    readonly endCharacter: number,
  ) {}
}
export enum ViewColumn {
  Beside = -2,
}
export class ThemeColor {
  constructor(readonly id: string) {}
}

/** The secrets half of an ExtensionContext, backed by a Map. */
export function secretStorage(initial: Record<string, string> = {}) {
  const values = new Map(Object.entries(initial));
  const changed = new Emitter<{ key: string }>();
  return {
    values,
    get: async (k: string) => values.get(k),
    store: async (k: string, v: string) => {
      values.set(k, v);
      await changed.fire({ key: k });
    },
    delete: async (k: string) => {
      values.delete(k);
      await changed.fire({ key: k });
    },
    onDidChange: changed.event,
  };
}
export enum ConfigurationTarget {
  Global = 1,
}
