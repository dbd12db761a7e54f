/**
 * The current figures: one short table in docs/benchmarks.md, regenerated from the committed bench
 * results in docs/bench/ (one file per part, the latest run of each) by `npm run bench:table`.
 * test/docs/bench-table.test.ts fails when the table is not what this would write.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';

export const BEGIN = '<!-- bench-table:begin -->';
export const END = '<!-- bench-table:end -->';

/** The parts the table quotes, each from its committed file `docs/bench/<part>.json`. */
export const PARTS = ['normal', 'provider-pace', 'readers'] as const;
export type Part = (typeof PARTS)[number];

interface Target {
  name: string;
  value: number;
  limit: number;
  comparison: '>=' | '<=';
  pass: boolean;
  unit: string;
}
interface Summary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}
interface NormalFile {
  startedAt: string;
  machine?: { cores: number; loadavgAtEnd: number[] };
  targets: Target[];
  report: {
    kind: 'normal';
    orders: number;
    phases: { api: { usage: { total: Record<string, { peakRssMb?: number }> } } };
  };
}
interface PaceFile {
  startedAt: string;
  pace: {
    kind: 'provider-pace';
    ordersPerType: number;
    groups: {
      label: string;
      perType: Record<string, { known: Summary; actions: { mean: number; max: number }; overPace: number }>;
    }[];
  };
}
interface ReadersFile {
  startedAt: string;
  reports: {
    kind: 'readers';
    variant: { name: string };
    orders: number;
    seconds: number;
    storms: { route: string; readers: number; perSecond: number; latencyMs: Summary; status5xx: number }[];
  }[];
}
export interface BenchResults {
  normal: NormalFile;
  'provider-pace': PaceFile;
  readers: ReadersFile;
}

/** Which part a bench result file (`bench-results/*.json`) is, or undefined for one the table does not quote. */
export function partOf(json: unknown): Part | undefined {
  const j = json as { report?: { kind?: string }; pace?: { kind?: string }; reports?: { kind?: string }[] };
  if (j.report?.kind === 'normal') return 'normal';
  if (j.pace?.kind === 'provider-pace') return 'provider-pace';
  if (j.reports?.[0]?.kind === 'readers') return 'readers';
  return undefined;
}

export function benchDir(root: string): string {
  return join(root, 'docs', 'bench');
}

export function readResults(root: string): BenchResults {
  const read = (part: Part) => {
    const file = join(benchDir(root), `${part}.json`);
    if (!existsSync(file))
      throw new Error(`${file} is missing: npm run bench:table -- --take <a ${part} result>`);
    const json: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (partOf(json) !== part) throw new Error(`${file} is not the result of the bench's ${part} part`);
    return json;
  };
  return {
    normal: read('normal') as NormalFile,
    'provider-pace': read('provider-pace') as PaceFile,
    readers: read('readers') as ReadersFile,
  };
}

const TYPES = ['mobile_topup', 'internet_topup', 'gift_card'];
const num = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const day = (iso: string) => iso.slice(0, 10);
const sign = { '>=': '≥', '<=': '≤' } as const;
const mark = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

function shown(t: Target): string {
  return t.unit === '×' ? `${num(t.value, 2)} ×` : num(t.value, Number.isInteger(t.value) ? 0 : 1);
}

/** The table's markdown (unformatted; prettier aligns it). */
export function benchTable(results: BenchResults): string {
  const rows: string[][] = [];
  const { normal } = results;
  const targets = new Map(normal.targets.map((t) => [t.name, t]));
  const normalRow = (name: string, figure: string) => {
    const t = targets.get(name);
    if (t)
      rows.push([
        'normal',
        figure,
        shown(t),
        `${sign[t.comparison]} ${t.limit}${t.unit ? ` ${t.unit}` : ''}`,
        mark(t.pass),
      ]);
  };
  normalRow('intake throughput vs raw start', 'intake throughput, ours vs a raw workflow start');
  normalRow('intake p99 latency vs raw start', 'intake p99 latency, ours vs a raw workflow start');
  normalRow('end-to-end completion vs minimal workflow', 'orders completed per second vs a minimal workflow');
  normalRow('Temporal CPU per order vs minimal workflow', 'Temporal CPU per order vs a minimal workflow');
  for (const [metric, figure] of [
    ['history events (max)', 'history events of a normal order (mobile / internet / gift card)'],
    ['provider calls (max)', 'provider calls of a normal order (mobile / internet / gift card)'],
    ['billable actions (max)', 'billable actions of a normal order (mobile / internet / gift card)'],
  ] as const) {
    const each = TYPES.map((type) => targets.get(`${type} ${metric}`)).filter((t) => t !== undefined);
    if (each.length === 0) continue;
    rows.push([
      'normal',
      figure,
      each.map((t) => num(t.value)).join(' / '),
      `${sign[each[0]!.comparison]} ${each[0]!.limit}`,
      mark(each.every((t) => t.pass)),
    ]);
  }
  normalRow(
    'Temporal CPU per order with webhooks vs without',
    'Temporal CPU per order, with webhooks vs without',
  );
  normalRow(
    'webhook delivery p99 beside a 10 s endpoint vs idle',
    'webhook delivery p99 beside a 10 s endpoint vs idle',
  );
  normalRow(
    'closed-order read, workers frozen, vs describe',
    'a closed order’s read, no worker, vs a raw describe',
  );
  const rss = normal.report.phases.api.usage.total.worker?.peakRssMb;
  if (rss !== undefined) rows.push(['normal', 'worker peak RSS, MB', num(rss), '', '']);

  const pace = results['provider-pace'].pace.groups.at(-1)!;
  const perType = TYPES.map((type) => pace.perType[type]).filter((f) => f !== undefined);
  const notInternet = perType.filter((_, i) => TYPES[i] !== 'internet_topup');
  rows.push([
    'provider-pace',
    'settled at the provider → known, p90 s (mobile / internet / gift card)',
    perType.map((f) => num(f.known.p90, 1)).join(' / '),
    '≤ 5',
    mark(perType.every((f) => f.known.p90 <= 5)),
  ]);
  rows.push([
    'provider-pace',
    'billable actions per order, max (mobile / internet / gift card)',
    perType.map((f) => num(f.actions.max)).join(' / '),
    '≤ 5 (mobile, gift card)',
    mark(notInternet.every((f) => f.actions.max <= 5)),
  ]);
  rows.push([
    'provider-pace',
    'orders checked more often than the pace allows',
    num(perType.reduce((sum, f) => sum + f.overPace, 0)),
    '0',
    mark(perType.every((f) => f.overPace === 0)),
  ]);

  const readers =
    results.readers.reports.find((r) => r.variant.name === 'after') ?? results.readers.reports.at(-1)!;
  for (const storm of readers.storms) {
    const pass = storm.perSecond >= 100 && storm.latencyMs.p99 <= 500 && storm.status5xx === 0;
    rows.push([
      'readers',
      `${storm.route}: req/s, p99 ms, 5xx (${storm.readers} readers)`,
      `${num(storm.perSecond)}, ${num(storm.latencyMs.p99)}, ${storm.status5xx}`,
      '≥ 100, ≤ 500, 0',
      mark(pass),
    ]);
  }

  const sources = [
    `normal: ${normal.report.orders} orders, ${day(normal.startedAt)}` +
      (normal.machine
        ? `, ${normal.machine.cores} cores, load average at the end ${num(normal.machine.loadavgAtEnd[0]!, 1)}`
        : ''),
    `provider-pace: ${results['provider-pace'].pace.ordersPerType} orders of each type, ${day(results['provider-pace'].startedAt)}`,
    `readers (${readers.variant.name}): ${readers.orders} orders, ${readers.seconds} s per route, ${day(results.readers.startedAt)}`,
  ];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [
    `Runs: ${sources.join('; ')}.`,
    '',
    line(['part', 'figure', 'current', 'target', 'result']),
    line(['---', '---', '---', '---', '---']),
    ...rows.map(line),
  ].join('\n');
}

/** The document with the table between its markers, formatted as `npm run lint` wants it. */
export async function withBenchTable(doc: string, results: BenchResults, path: string): Promise<string> {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`the document has no ${BEGIN} … ${END}`);
  const next = `${doc.slice(0, begin + BEGIN.length)}\n\n${benchTable(results)}\n\n${doc.slice(end)}`;
  return format(next, { ...(await resolveConfig(path)), filepath: path });
}
