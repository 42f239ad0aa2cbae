/** The one door to zod: `zod/mini` with the English locale (describeIssue reads it); `z`. */
import { en } from "zod/locales";
import { config } from "zod/mini";

config(en());

export * from "zod/mini";
