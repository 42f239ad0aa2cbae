/** Reading the request from a file or stdin, without ever waiting on a terminal. */
import { readFile } from "node:fs/promises";
import { UsageError } from "./errors.js";

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    throw new UsageError("no input: pass a FILE, or pipe the JSON request on stdin");
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function readSource(file: string | undefined): Promise<string> {
  if (file === undefined || file === "-") return readStdin();
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : code;
    throw new UsageError(`cannot read ${file}: ${why ?? "unreadable"}`);
  }
}
