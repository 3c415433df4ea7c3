// Runs a Flamenco 3 job-type script's compileJob() with stand-ins for the Manager's authoring API (author.Task,
// author.Command, frameChunker, path, print, formatTimestampLocal) and prints the compiled tasks as JSON.
// Usage: node flamenco_harness.js JOB_TYPE.js SETTINGS_JSON
const fs = require("fs");
const vm = require("vm");
const nodePath = require("path");

function frameChunker(frames, chunkSize) {
    // Flamenco's chunker for the "a-b" ranges used here: consecutive chunks of chunkSize frames.
    const m = /^(\d+)-(\d+)$/.exec(frames);
    const first = parseInt(m[1]), last = parseInt(m[2]);
    const out = [];
    for (let a = first; a <= last; a += chunkSize) {
        const b = Math.min(a + chunkSize - 1, last);
        out.push(a === b ? `${a}` : `${a}-${b}`);
    }
    return out;
}

const tasks = [];
const author = {
    Task(name, type) {
        const task = { name: name, type: type, commands: [], dependencies: [] };
        task.addCommand = (c) => task.commands.push(c);
        task.addDependency = (t) => task.dependencies.push(t.name);
        return task;
    },
    Command(type, params) { return { type: type, params: params }; },
};
const context = {
    author: author,
    frameChunker: frameChunker,
    path: { join: nodePath.join, dirname: nodePath.dirname, basename: nodePath.basename },
    print: () => {},
    formatTimestampLocal: () => "2026-11-26_120000",
};
vm.createContext(context);
vm.runInContext(fs.readFileSync(process.argv[2], "utf8"), context);
const job = { settings: JSON.parse(process.argv[3]), created: new Date(0), addTask: (t) => tasks.push(t) };
try {
    vm.runInContext("compileJob", context)(job);
} catch (e) {
    console.log(JSON.stringify({ error: String(e) }));
    process.exit(0);
}
console.log(JSON.stringify({ settings: job.settings, tasks: tasks.map((t) => ({
    name: t.name, type: t.type, commands: t.commands, dependencies: t.dependencies })) }));
