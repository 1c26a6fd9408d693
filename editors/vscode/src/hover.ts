// Hover beside clangd / the C/C++ extension: they already explain identifiers,
// so by default KernelPro hovers only where it adds something (a finding's
// line, a kernel's name). The server offers no completion at all.

export type HoverMode = 'auto' | 'always' | 'off';

/** Extensions that already provide C++ hover for cuda-cpp files. */
export const CPP_EXTENSIONS = ['llvm-vs-code-extensions.vscode-clangd', 'ms-vscode.cpptools'];

export function shouldHover(
  mode: HoverMode,
  otherCppActive: boolean,
  onFindingLine: boolean,
  onKernelName: boolean,
): boolean {
  if (mode === 'off') return false;
  if (mode === 'always' || !otherCppActive) return true;
  return onFindingLine || onKernelName;
}
