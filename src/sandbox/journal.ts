/**
 * The sandbox's state file (SANDBOX_STATE_FILE): an append-only journal of JSON lines, one per
 * committed change, written synchronously before the answer leaves. A restarted sandbox replays it,
 * so the chaos run can kill the sandbox (even with SIGKILL) and start it again without losing a
 * committed send or the counters that prove nothing was sent twice.
 *
 * Written with writeSync and no fsync: the line is in the operating system's cache when the
 * answer goes out, which survives the death of the process, not of the machine. Enough for a test
 * double; a line torn by a crash mid-write is dropped (and cut off) on the next start.
 */
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';

/** What a committed change looks like on disk; `t` names the kind. */
export type JournalRecord = { t: string } & Record<string, unknown>;

export class Journal {
  readonly #fd: number;
  #closed = false;

  private constructor(fd: number) {
    this.#fd = fd;
  }

  /**
   * Opens (or creates, readable by its owner only: it holds what a provider's database holds,
   * phone numbers included) the journal at `path` and returns the records already in it.
   */
  static open(path: string): { journal: Journal; records: JournalRecord[] } {
    const fd = openSync(path, 'a+', 0o600);
    const text = readFileSync(fd, 'utf8');
    const records: JournalRecord[] = [];
    let goodLength = 0;
    let offset = 0;
    let lineNumber = 0;
    while (offset < text.length) {
      const end = text.indexOf('\n', offset);
      lineNumber++;
      if (end === -1) break; // a torn last line: never completed, never acknowledged
      const line = text.slice(offset, end);
      offset = end + 1;
      if (line.trim() === '') {
        goodLength = Buffer.byteLength(text.slice(0, offset));
        continue;
      }
      records.push(parseLine(line, path, lineNumber));
      goodLength = Buffer.byteLength(text.slice(0, offset));
    }
    // Cut a torn tail off, or the next append would be glued to it.
    if (goodLength < Buffer.byteLength(text)) ftruncateSync(fd, goodLength);
    return { journal: new Journal(fd), records };
  }

  append(record: JournalRecord): void {
    if (this.#closed) throw new Error('the sandbox state file is closed');
    writeSync(this.#fd, `${JSON.stringify(record)}\n`);
  }

  /** Forget everything written so far (POST /admin/reset), then write `records`. */
  restart(records: JournalRecord[]): void {
    ftruncateSync(this.#fd, 0);
    for (const record of records) this.append(record);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}

function parseLine(line: string, path: string, lineNumber: number): JournalRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // Lines are never quoted: they hold phone numbers.
    throw new Error(`sandbox state file ${path}: line ${lineNumber} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || typeof (value as { t?: unknown }).t !== 'string') {
    throw new Error(`sandbox state file ${path}: line ${lineNumber} is not a journal record`);
  }
  return value as JournalRecord;
}
