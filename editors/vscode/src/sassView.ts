// Show SASS for Line in a read-only virtual document (scheme kernelpro-sass):
// nothing to save, nothing asked on close, one tab per source line.
import * as vscode from 'vscode';

export const SASS_SCHEME = 'kernelpro-sass';

export class SassView implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The virtual document for `line` (0-based) of `source`, holding `text`. */
  uriFor(source: string, line: number): vscode.Uri {
    const name = source.split('/').pop() || 'kernel.cu';
    // The .md ending makes it a Markdown document; the query keeps two files apart.
    return vscode.Uri.parse(`${SASS_SCHEME}:/SASS ${decodeURIComponent(name)} line ${line + 1}.md?${encodeURIComponent(source)}`);
  }

  async show(source: string, line: number, text: string): Promise<void> {
    const uri = this.uriFor(source, line);
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
  }
}
