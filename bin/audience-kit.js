#!/usr/bin/env node
import { hidePasswordsFromProcessList } from '../dist/cli/process-title.js';
import { main } from '../dist/cli/main.js';

hidePasswordsFromProcessList(process.argv);
process.exitCode = await main(process.argv.slice(2));
