/** The bench's process accounting: a phase's CPU seconds and peak RSS of a process it watches. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { ProcMonitor, readProc } from '../../scripts/bench/proc';

/**
 * A child that says "ready", then on any input touches 64 MB and spins until it has used 0.4 s of
 * its own CPU (CPU time, not wall time, so a busy machine only makes it slower), says "done" and
 * holds the memory until its stdin closes.
 */
const childCode = `
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  globalThis.held = Buffer.alloc(64 * 1024 * 1024, 1);
  const start = process.cpuUsage();
  while (process.cpuUsage(start).user + process.cpuUsage(start).system < 400_000);
  process.stdout.write('done\\n');
});
process.stdin.on('end', () => process.exit(0));
`;

describe('bench ProcMonitor', () => {
  it("counts a phase's CPU seconds and peak RSS of a watched process, and the rest as others", async () => {
    const child = spawn(process.execPath, ['-e', childCode], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = child.stdout.setEncoding('utf8');
    await once(lines, 'data');
    const monitor = new ProcMonitor({ child: child.pid, gone: 2 ** 22 + 1 }, 20);
    try {
      const before = await readProc(child.pid);
      assert.ok(before && before.rssMb < 60, `child RSS before: ${before?.rssMb}`);
      const phase = await monitor.phase();
      child.stdin.write('go\n');
      await once(lines, 'data');
      const usage = await phase.stop();
      assert.deepEqual(Object.keys(usage).sort(), ['child', 'others']);
      const { cpuSeconds, peakRssMb, hwmMb } = usage.child!;
      assert.ok(cpuSeconds >= 0.38 && cpuSeconds < 5, `child CPU seconds: ${cpuSeconds}`);
      assert.ok(peakRssMb >= before.rssMb + 60, `child peak RSS: ${peakRssMb} MB`);
      assert.ok(hwmMb >= peakRssMb - 1, `VmHWM ${hwmMb} MB against peak ${peakRssMb} MB`);
      assert.ok(usage.others!.cpuSeconds >= 0);
    } finally {
      monitor.close();
      child.stdin.end();
      await once(child, 'exit');
    }
    assert.equal(await readProc(child.pid), undefined, 'a process that is gone has no sample');
  });
});
