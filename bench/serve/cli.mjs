// What the bench/serve scripts share on the command line: a one-line error with exit 2,
// and --help printed from the script's own header comment.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export function dieWith(tool) {
  return (msg) => {
    process.stderr.write(`${tool}: ${msg}\n`);
    process.exit(2);
  };
}

// Prints the comment lines that open the file at `moduleUrl` (import.meta.url), then exits.
export function printUsage(moduleUrl) {
  const ls = fs.readFileSync(fileURLToPath(moduleUrl), 'utf8').split('\n').slice(1);
  const end = ls.findIndex((l) => !l.startsWith('//'));
  process.stdout.write(ls.slice(0, end).map((l) => l.slice(3)).join('\n') + '\n');
  process.exit(0);
}
