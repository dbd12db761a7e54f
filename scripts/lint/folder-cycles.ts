/**
 * `npm run lint` (lint:folders): no cycle between the folders of the product. Reads
 * dependency-cruiser's JSON graph of contract/ and src/ on standard input (`depcruise --output-type
 * json contract src`), collapses every module into its folder — `contract`, `src/<area or
 * platform folder>`, and `src` for the files at src/'s top (config, logging) — and fails on any cycle
 * between folders, naming the imports that make it. The module-level rules (cycles, crossings only
 * through a folder's index.ts or workflows.ts, workflow-safe code) are .dependency-cruiser.cjs's.
 *
 * `--graph` prints the folders' import graph (one edge a line, with its number of imports) instead.
 */
import { readFileSync } from 'node:fs';

interface Cruised {
  modules: {
    source: string;
    dependencies: { resolved: string; coreModule: boolean; couldNotResolve: boolean }[];
  }[];
}

/** The folder a module of the product belongs to; undefined outside contract/ and src/. */
export function folderOf(path: string): string | undefined {
  if (path.startsWith('contract/')) return 'contract';
  const inFolder = /^src\/([^/]+)\//.exec(path);
  if (inFolder) return `src/${inFolder[1]}`;
  return path.startsWith('src/') ? 'src' : undefined;
}

/** Folder → folder → the imports (from > to) between them. */
export function folderGraph(cruised: Cruised): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const module of cruised.modules) {
    const from = folderOf(module.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const dependency of module.dependencies) {
      const to =
        dependency.coreModule || dependency.couldNotResolve ? undefined : folderOf(dependency.resolved);
      if (!to || to === from) continue;
      const edges = graph.get(from)!;
      edges.set(to, [...(edges.get(to) ?? []), `${module.source} > ${dependency.resolved}`]);
    }
  }
  return graph;
}

/** The strongly connected components of more than one folder (Tarjan): each is a cycle. */
export function folderCycles(graph: Map<string, Map<string, string[]>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    for (const to of graph.get(node)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (stack.includes(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

function main(): number {
  const graph = folderGraph(JSON.parse(readFileSync(0, 'utf8')) as Cruised);
  if (process.argv.includes('--graph')) {
    for (const [from, edges] of [...graph].sort(([a], [b]) => a.localeCompare(b)))
      for (const [to, imports] of [...edges].sort(([a], [b]) => a.localeCompare(b)))
        console.log(`${from} -> ${to} (${imports.length})`);
    return 0;
  }
  const cycles = folderCycles(graph);
  for (const cycle of cycles) {
    console.error(`error folder cycle: ${cycle.join(', ')}`);
    for (const from of cycle)
      for (const [to, imports] of graph.get(from) ?? [])
        if (cycle.includes(to)) console.error(`  ${from} -> ${to}: ${imports.slice(0, 3).join('; ')}`);
  }
  if (cycles.length > 0) return 1;
  console.error(`✔ no cycle between folders (${graph.size} folders)`);
  return 0;
}

if (require.main === module) process.exit(main());
