import { describe, expect, it } from 'vitest';
import { shouldHover } from '../src/hover';
import { ENV_KEY, SECRET_KEY, llmKey } from '../src/secrets';
import { gpuFromDoctor, summaryFromDoctor } from '../src/status';
import { kernelAt } from '../src/symbols';
import { secretStorage } from './vscode-mock';

describe('llmKey', () => {
  it('prefers secret storage, then the environment', async () => {
    expect(await llmKey(secretStorage({ [SECRET_KEY]: 'stored' }), { [ENV_KEY]: 'env' })).toBe('stored');
    expect(await llmKey(secretStorage(), { [ENV_KEY]: 'env' })).toBe('env');
    expect(await llmKey(secretStorage(), {})).toBeUndefined();
  });
});

// documentSymbol as kernelpro answers it for tests/fixtures/h200-probe/kernels.cu (abridged).
const range = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 1 } });
const symbols = [
  { name: 'saxpy_fp64', detail: '__global__', kind: 24, range: range(6, 9) },
  { name: 'matmul_naive', detail: '__global__', kind: 24, range: range(16, 24) },
  { name: 'main', detail: 'host', kind: 12, range: range(44, 58) },
];

describe('kernelAt', () => {
  const check = (line: number, expected: string | undefined) =>
    expect(kernelAt(symbols, { line, character: 4 })).toBe(expected);
  it('finds the kernel around the cursor', () => check(20, 'matmul_naive'));
  it('includes the signature line', () => check(6, 'saxpy_fp64'));
  it('ignores host functions and gaps', () => {
    check(50, undefined);
    check(12, undefined);
  });
  it('reads SymbolInformation and nested children too', () => {
    const nested = [{ name: 'ns', detail: 'namespace', range: range(0, 30), children: [{ name: 'k', detail: '__global__', location: { range: range(3, 8) } }] }];
    expect(kernelAt(nested, { line: 5, character: 0 })).toBe('k');
  });
});

describe('shouldHover', () => {
  it.each([
    ['auto', false, false, false, true],
    ['auto', true, false, false, false],
    ['auto', true, true, false, true],
    ['auto', true, false, true, true],
    ['always', true, false, false, true],
    ['off', false, true, true, false],
  ] as const)('%s, other C++ %s, finding %s, kernel %s -> %s', (mode, other, finding, kernel, expected) => {
    expect(shouldHover(mode, other, finding, kernel)).toBe(expected);
  });
});

describe('gpuFromDoctor', () => {
  it('names the GPU when the doctor found one', () => {
    expect(gpuFromDoctor('ok  nvcc: /x/nvcc\nok  GPU: NVIDIA H200 (driver 575.51)\n')).toBe('NVIDIA H200');
  });
  it('says "no GPU" on this machine\'s answer', () => {
    const doctor =
      'ok  nvcc: /work/main/.venv/.../nvcc (Cuda compilation tools, release 13.2)\n' +
      '!!  GPU: no NVIDIA GPU or driver visible (nvidia-smi did not answer)\n' +
      '      fix: run on a GPU machine\n';
    expect(gpuFromDoctor(doctor)).toBe('no GPU');
  });
  it('says "no nvcc" when the compiler is what is missing', () => {
    const doctor = '!!  nvcc: not found\n      fix: Install the CUDA compiler wheels\nok  GPU: NVIDIA H200 (driver 575.51)\n';
    expect(summaryFromDoctor(doctor)).toBe('no nvcc');
    expect(summaryFromDoctor('ok  nvcc: /x/nvcc\nok  GPU: NVIDIA H200 (driver 575.51)\n')).toBe('NVIDIA H200');
  });
});

describe('the SASS view (issue 32)', async () => {
  const { sassDocument } = await import('../src/sassView');
  const { readFileSync } = await import('node:fs');
  const listing =
    'SASS of line 9 in `saxpy_fp64`: 3 instructions: 1 FP64 (F2F)\n```sass\n' +
    '/*0090*/ @!P0 LDG.E R2, desc[UR4][R2.64];                // stall 4\n' +
    '/*00a0*/ F2F.F64.F32 R4, R2;\n```\n' +
    'Costly instructions first; the full listing: the **Show SASS for Line** command.\n\n' +
    '- `LDG.E`: global load — 400 cycles\n';
  it('is SASS with its notes as comments, no Markdown', () => {
    expect(sassDocument(listing)).toBe(
      '// SASS of line 9 in saxpy_fp64: 3 instructions: 1 FP64 (F2F)\n' +
        '/*0090*/ @!P0 LDG.E R2, desc[UR4][R2.64];                // stall 4\n' +
        '/*00a0*/ F2F.F64.F32 R4, R2;\n' +
        '// Costly instructions first; the full listing: the Show SASS for Line command.\n' +
        '\n' +
        '// LDG.E: global load — 400 cycles\n',
    );
  });
  it('has a grammar that tells opcodes, registers, predicates and comments apart', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    const grammar = pkg.contributes.grammars.find((g: { language: string }) => g.language === 'kernelpro-sass');
    expect(pkg.contributes.languages.map((l: { id: string }) => l.id)).toContain('kernelpro-sass');
    const tm = JSON.parse(readFileSync(new URL(`../${grammar.path}`, import.meta.url), 'utf8'));
    // The patterns in their order, as a tokenizer tries them at each position (JS regexes: the grammar's are Oniguruma-compatible).
    const rules = tm.patterns.map((p: { include: string }) => tm.repository[p.include.slice(1)]);
    const tokens = (line: string) => {
      const out: [string, string][] = [];
      let at = 0;
      while (at < line.length) {
        let best: { index: number; text: string; name: string } | undefined;
        for (const r of rules) {
          const re = new RegExp(r.match, 'g');
          re.lastIndex = at;
          const m = re.exec(line);
          if (m && (!best || m.index < best.index)) best = { index: m.index, text: m[0], name: r.name ?? r.captures['1'].name };
        }
        if (!best) break;
        out.push([best.text, best.name.split('.').slice(0, 2).join('.')]);
        at = best.index + Math.max(best.text.length, 1);
      }
      return out;
    };
    expect(tokens('/*0090*/ @!P0 LDG.E R2, desc[UR4][R2.64]; // stall 4')).toEqual([
      ['/*0090*/', 'comment.block'],
      ['@!P0', 'keyword.control'],
      ['LDG.E', 'keyword.other'],
      ['R2', 'variable.other'],
      ['UR4', 'variable.other'],
      ['R2.64', 'variable.other'],
      ['// stall 4', 'comment.line'],
    ]);
    expect(tokens('/*00a0*/ FFMA R1, R2, c[0x0][0x160], RZ ;')).toEqual([
      ['/*00a0*/', 'comment.block'],
      ['FFMA', 'keyword.other'],
      ['R1', 'variable.other'],
      ['R2', 'variable.other'],
      ['c[0x0][0x160]', 'constant.other'],
      ['RZ', 'variable.other'],
    ]);
  });
});
