/**
 * CPU time and memory of processes from /proc (Linux): utime + stime of /proc/<pid>/stat, and
 * VmRSS / VmHWM (peak resident set) of /proc/<pid>/status. A sampler keeps the peak RSS seen per
 * process within a window, so each bench phase reports its own peak next to the lifetime VmHWM.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

const CLK_TCK = clockTicksPerSecond();

export interface ProcSample {
  /** User + system CPU seconds since the process started (all its threads). */
  cpuSeconds: number;
  rssMb: number;
  /** Lifetime peak RSS (VmHWM). */
  hwmMb: number;
}

/** The process's counters, or undefined when it is gone (or /proc is not there). */
export function readProc(pid: number | undefined): ProcSample | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may hold spaces and parentheses: count fields from the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    const ticks = Number(rest[11]) + Number(rest[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { cpuSeconds: ticks / CLK_TCK, rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Busy CPU seconds of the whole machine (all cores) since boot, from /proc/stat. */
export function machineBusySeconds(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal …
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / CLK_TCK;
  } catch {
    return undefined;
  }
}

export interface PhaseUsage {
  cpuSeconds: number;
  /** Highest VmRSS sampled during the phase. */
  peakRssMb: number;
  /** VmHWM at the end of the phase (lifetime peak). */
  hwmMb: number;
}

export interface PhaseMark {
  stop(): Record<string, PhaseUsage>;
}

/** Samples a fixed set of named processes every `intervalMs`; phases may overlap. */
export class ProcMonitor {
  readonly #pids: Record<string, number | undefined>;
  readonly #open = new Set<Map<string, number>>();
  readonly #timer: NodeJS.Timeout;
  /** Time series of every sample while `recordSeries(true)`, for the scale run. */
  readonly series: { at: number; rssMb: Record<string, number>; cpuSeconds: Record<string, number> }[] = [];
  #recordSeries = false;

  constructor(pids: Record<string, number | undefined>, intervalMs = 250) {
    this.#pids = pids;
    this.#timer = setInterval(() => this.#sample(), intervalMs);
    this.#timer.unref();
  }

  names(): string[] {
    return Object.keys(this.#pids).filter((name) => this.#pids[name]);
  }

  recordSeries(on: boolean): void {
    this.#recordSeries = on;
  }

  #sample(): void {
    const rssMb: Record<string, number> = {};
    const cpuSeconds: Record<string, number> = {};
    for (const name of this.names()) {
      const sample = readProc(this.#pids[name]);
      if (!sample) continue;
      rssMb[name] = sample.rssMb;
      cpuSeconds[name] = sample.cpuSeconds;
      for (const peaks of this.#open) peaks.set(name, Math.max(peaks.get(name) ?? 0, sample.rssMb));
    }
    if (this.#recordSeries) this.series.push({ at: Date.now(), rssMb, cpuSeconds });
  }

  /** Starts a phase: its CPU is counted from now, its peak RSS from the samples taken until stop(). */
  phase(): PhaseMark {
    const peaks = new Map<string, number>();
    this.#open.add(peaks);
    this.#sample();
    const start = new Map(this.names().map((name) => [name, readProc(this.#pids[name])]));
    const machineStart = machineBusySeconds();
    return {
      stop: () => {
        this.#sample();
        this.#open.delete(peaks);
        const machineEnd = machineBusySeconds();
        const usage: Record<string, PhaseUsage> = {};
        for (const name of this.names()) {
          const before = start.get(name);
          const after = readProc(this.#pids[name]);
          if (!before || !after) continue;
          usage[name] = {
            cpuSeconds: after.cpuSeconds - before.cpuSeconds,
            peakRssMb: peaks.get(name) ?? after.rssMb,
            hwmMb: after.hwmMb,
          };
        }
        // What the rest of the machine (other users of these 2 cores) took meanwhile: the noise.
        if (machineStart !== undefined && machineEnd !== undefined) {
          const ours = Object.values(usage).reduce((sum, u) => sum + u.cpuSeconds, 0);
          usage.others = {
            cpuSeconds: Math.max(0, machineEnd - machineStart - ours),
            peakRssMb: NaN,
            hwmMb: NaN,
          };
        }
        return usage;
      },
    };
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
