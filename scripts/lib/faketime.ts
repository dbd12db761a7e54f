/**
 * libfaketime as Debian installs it (package libfaketime, pulled in by `faketime`; CI installs it,
 * .ci/run): the library a worker is started under (LD_PRELOAD, FAKETIME) to run with its clock off.
 */
import { existsSync } from 'node:fs';

export function libfaketime(): string | undefined {
  const arch = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
  return [
    `/usr/lib/${arch}-linux-gnu/faketime/libfaketimeMT.so.1`,
    '/usr/lib/faketime/libfaketimeMT.so.1',
  ].find((path) => existsSync(path));
}
