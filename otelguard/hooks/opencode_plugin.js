// otelguard: the loop guard for opencode's tool calls. Installed by `otelguard install-hook opencode`
// (removed by `otelguard uninstall-hook opencode`). opencode has no shell hooks, so this plugin runs
// `otelguard hook opencode` before and after every tool call: a block is thrown (the model gets the
// reason as the tool's error), a reminder is appended to the tool's output. Any failure of otelguard
// lets the call through.
import { spawn } from "node:child_process";

const OTELGUARD = __OTELGUARD_COMMAND__; // the command, as an argument list
const TIMEOUT_MS = 10000;

function ask(payload) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(OTELGUARD[0], [...OTELGUARD.slice(1), "hook", "opencode"], {
        stdio: ["pipe", "pipe", "ignore"],
      });
    } catch {
      resolve({});
      return;
    }
    let out = "";
    const timer = setTimeout(() => child.kill(), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => {
      clearTimeout(timer);
      resolve({});
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : {});
      } catch {
        resolve({});
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

export const OtelGuard = async () => {
  const started = new Map();
  return {
    "tool.execute.before": async (input, output) => {
      started.set(input.callID, Date.now());
      const answer = await ask({ event: "before", input, output: { args: output.args } });
      if (answer.block) throw new Error(answer.block);
    },
    "tool.execute.after": async (input, output) => {
      const began = started.get(input.callID);
      started.delete(input.callID);
      const duration_ms = began === undefined ? undefined : Date.now() - began;
      const answer = await ask({ event: "after", input, output, duration_ms });
      if (answer.context && typeof output.output === "string") output.output += "\n\n" + answer.context;
    },
  };
};
