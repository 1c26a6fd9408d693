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
