// Which kernel encloses a position, from the server's documentSymbol answer.

interface Position {
  line: number;
  character: number;
}
interface Range {
  start: Position;
  end: Position;
}
export interface SymbolLike {
  name: string;
  detail?: string;
  range?: Range;
  location?: { range: Range };
  children?: SymbolLike[];
}

function contains(r: Range, p: Position): boolean {
  if (p.line < r.start.line || p.line > r.end.line) return false;
  if (p.line === r.start.line && p.character < r.start.character) return false;
  return !(p.line === r.end.line && p.character > r.end.character);
}

function isKernel(s: SymbolLike): boolean {
  const detail = (s.detail ?? '').toLowerCase();
  return detail.includes('__global__') || detail.includes('kernel');
}

function* flatten(symbols: SymbolLike[]): Generator<SymbolLike> {
  for (const s of symbols) {
    yield s;
    yield* flatten(s.children ?? []);
  }
}

/** The innermost kernel whose range holds `pos`, if any. */
export function kernelAt(symbols: SymbolLike[] | null | undefined, pos: Position): string | undefined {
  let best: { name: string; start: number } | undefined;
  for (const s of flatten(symbols ?? [])) {
    const range = s.range ?? s.location?.range;
    if (range && isKernel(s) && contains(range, pos) && (!best || range.start.line >= best.start)) {
      best = { name: s.name, start: range.start.line };
    }
  }
  return best?.name;
}
