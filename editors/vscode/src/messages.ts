// Server replies in words for people: never JSON, never a cancelled run
// shown as if it had finished.

export interface OptimizeReply {
  kernel?: string;
  title?: string;
  speedup?: number;
  applicable?: boolean;
  cancelled?: boolean;
  evaluations?: number;
  message?: string;
}

export interface ProfileReply {
  cancelled?: boolean;
  error?: string;
  message?: string;
  kernels?: { kernel: string; summary?: string | null; findings: number }[];
}

export interface Shown {
  kind: 'info' | 'warning';
  text: string;
  /** Offer to apply the (best so far) result. */
  apply?: string;
}

function sentence(s: string): string {
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export function optimizeMessage(kernel: string, reply: unknown): Shown {
  const r = (reply && typeof reply === 'object' ? reply : {}) as OptimizeReply;
  const speedup = typeof r.speedup === 'number' ? `${r.speedup.toFixed(2)}x faster` : 'faster';
  let text: string;
  if (r.message) text = r.message;
  else if (r.cancelled) text = `Optimize ${kernel} was cancelled.`;
  else text = sentence(r.title ?? `Optimize ${kernel} finished`);
  const shown: Shown = { kind: 'info', text: `KernelPro: ${text}` };
  if (r.applicable) shown.apply = r.cancelled ? `Apply the best so far (${speedup})` : 'Apply';
  return shown;
}

export function profileMessage(reply: unknown): Shown {
  if (typeof reply === 'string') return { kind: 'info', text: `KernelPro: ${reply}` };
  const r = (reply && typeof reply === 'object' ? reply : {}) as ProfileReply;
  if (r.cancelled) return { kind: 'info', text: `KernelPro: ${r.message ?? 'Profiling was cancelled.'}` };
  if (r.error !== undefined) return { kind: 'warning', text: `KernelPro: ${sentence(r.message ?? `Profiling failed: ${r.error}`)}` };
  if (r.message) return { kind: 'info', text: `KernelPro: ${r.message}` };
  const n = r.kernels?.length ?? 0;
  return { kind: 'info', text: `KernelPro: profiled ${n} kernel${n === 1 ? '' : 's'}.` };
}
