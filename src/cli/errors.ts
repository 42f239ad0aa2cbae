/** A problem with how the command was called or with its input files: exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
