/**
 * The one door to zod: `zod/mini` (smaller cold start) with the English locale set, without which
 * every issue reads "Invalid input" and describeIssue cannot tell a missing field. Import as `z`.
 */
import { en } from "zod/locales";
import { config } from "zod/mini";

config(en());

export * from "zod/mini";
