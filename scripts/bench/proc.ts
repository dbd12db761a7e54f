/**
 * CPU time and memory of the bench's processes. pidusage reads each one's CPU seconds and RSS; the
 * lifetime peak (VmHWM) is not among its figures, so it is read from /proc/<pid>/status here. A
 * monitor keeps the peak RSS it samples per process within a window, so each bench phase reports
 * its own peak next to the lifetime VmHWM.
 */
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import pidusage from 'pidusage';

const MB = 1024 * 1024;

export interface ProcSample {
  /** User + system CPU seconds since the process started (all its threads). */
  cpuSeconds: number;
  rssMb: number;
  /** Lifetime peak RSS (VmHWM; NaN where /proc is not there). */
  hwmMb: number;
}

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024;
}

/** The process's counters, or undefined when it is gone. */
export async function readProc(pid: number | undefined): Promise<ProcSample | undefined> {
  if (!pid) return undefined;
  try {
    const [usage, hwmMb] = await Promise.all([pidusage(pid), peakRssMb(pid)]);
    return { cpuSeconds: usage.ctime / 1000, rssMb: usage.memory / MB, hwmMb };
  } catch {
    return undefined;
  }
}

/** Busy CPU seconds of the whole machine (all cores) since boot. */
export function machineBusySeconds(): number {
  return cpus().reduce((sum, { times }) => sum + times.user + times.nice + times.sys + times.irq, 0) / 1000;
}

export interface PhaseUsage {
  cpuSeconds: number;
  /** Highest VmRSS sampled during the phase. */
  peakRssMb: number;
  /** VmHWM at the end of the phase (lifetime peak). */
  hwmMb: number;
}

export interface PhaseMark {
  stop(): Promise<Record<string, PhaseUsage>>;
}

/** Samples a fixed set of named processes every `intervalMs`; phases may overlap. */
export class ProcMonitor {
  readonly #pids: Record<string, number | undefined>;
  readonly #open = new Set<Map<string, number>>();
  readonly #timer: NodeJS.Timeout;
  #sampling: Promise<void> | undefined;
  /** Time series of every sample while `recordSeries(true)`, for the scale run. */
  readonly series: { at: number; rssMb: Record<string, number>; cpuSeconds: Record<string, number> }[] = [];
  #recordSeries = false;

  constructor(pids: Record<string, number | undefined>, intervalMs = 250) {
    this.#pids = pids;
    this.#timer = setInterval(() => void this.#sample(), intervalMs);
    this.#timer.unref();
  }

  names(): string[] {
    return Object.keys(this.#pids).filter((name) => this.#pids[name]);
  }

  recordSeries(on: boolean): void {
    this.#recordSeries = on;
  }

  /** One sample of every process; a tick that comes while one is under way joins it. */
  #sample(): Promise<void> {
    this.#sampling ??= this.#read().finally(() => (this.#sampling = undefined));
    return this.#sampling;
  }

  /** Every named process's counters (missing when it is gone). */
  async #readAll(): Promise<Map<string, ProcSample | undefined>> {
    const names = this.names();
    const samples = await Promise.all(names.map((name) => readProc(this.#pids[name])));
    return new Map(names.map((name, i) => [name, samples[i]]));
  }

  async #read(): Promise<void> {
    const rssMb: Record<string, number> = {};
    const cpuSeconds: Record<string, number> = {};
    for (const [name, sample] of await this.#readAll()) {
      if (!sample) continue;
      rssMb[name] = sample.rssMb;
      cpuSeconds[name] = sample.cpuSeconds;
      for (const peaks of this.#open) peaks.set(name, Math.max(peaks.get(name) ?? 0, sample.rssMb));
    }
    if (this.#recordSeries) this.series.push({ at: Date.now(), rssMb, cpuSeconds });
  }

  /** Starts a phase: its CPU is counted from now, its peak RSS from the samples taken until stop(). */
  async phase(): Promise<PhaseMark> {
    const peaks = new Map<string, number>();
    this.#open.add(peaks);
    await this.#sample();
    const start = await this.#readAll();
    const machineStart = machineBusySeconds();
    return {
      stop: async () => {
        await this.#sample();
        this.#open.delete(peaks);
        const machineEnd = machineBusySeconds();
        const end = await this.#readAll();
        const usage: Record<string, PhaseUsage> = {};
        for (const [name, after] of end) {
          const before = start.get(name);
          if (!before || !after) continue;
          usage[name] = {
            cpuSeconds: after.cpuSeconds - before.cpuSeconds,
            peakRssMb: peaks.get(name) ?? after.rssMb,
            hwmMb: after.hwmMb,
          };
        }
        // What the rest of the machine (other users of these 2 cores) took meanwhile: the noise.
        const ours = Object.values(usage).reduce((sum, u) => sum + u.cpuSeconds, 0);
        usage.others = {
          cpuSeconds: Math.max(0, machineEnd - machineStart - ours),
          peakRssMb: NaN,
          hwmMb: NaN,
        };
        return usage;
      },
    };
  }

  close(): void {
    clearInterval(this.#timer);
    // pidusage keeps each process's /proc file open between reads.
    pidusage.clear();
  }
}
