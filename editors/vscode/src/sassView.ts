// Show SASS for Line in a read-only virtual document (scheme kernelpro-sass,
// language kernelpro-sass with its own TextMate grammar): the listing as SASS,
// its titles and the opcode notes as comments; nothing to save, nothing asked
// on close, one tab per source line.
import * as vscode from 'vscode';

export const SASS_SCHEME = 'kernelpro-sass';
export const SASS_LANGUAGE = 'kernelpro-sass';

/**
 * The server's listing (Markdown: a title line per kernel, a ```sass block,
 * then one `- \`OP\`: meaning` line per opcode) as a SASS document: code as
 * it is, everything else as `//` comments, Markdown marks removed.
 */
export function sassDocument(markdown: string): string {
  const out: string[] = [];
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) {
      inCode = !inCode;
      continue;
    }
    if (inCode) {
      out.push(line);
      continue;
    }
    const text = line
      .replace(/^- /, '')
      .replace(/\*\*(.*?)\*\*/g, '$1')
      .replace(/`([^`]*)`/g, '$1')
      .trimEnd();
    out.push(text ? `// ${text}` : '');
  }
  while (out.length && out[out.length - 1] === '') out.pop();
  return `${out.join('\n')}\n`;
}

export class SassView implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The virtual document for `line` (0-based) of `source`. */
  uriFor(source: string, line: number): vscode.Uri {
    const name = source.split('/').pop() || 'kernel.cu';
    // The query keeps two files of one name apart.
    return vscode.Uri.parse(`${SASS_SCHEME}:/SASS ${decodeURIComponent(name)} line ${line + 1}?${encodeURIComponent(source)}`);
  }

  async show(source: string, line: number, markdown: string): Promise<void> {
    const uri = this.uriFor(source, line);
    this.texts.set(uri.toString(), sassDocument(markdown));
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== SASS_LANGUAGE) doc = await vscode.languages.setTextDocumentLanguage(doc, SASS_LANGUAGE);
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
  }
}
