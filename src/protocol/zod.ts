/**
 * The one door to zod: `zod/mini` (the same core, checks and issues as `zod`, without the method
 * classes and the other locales, which were over a third of what a cold verify loaded), with
 * English messages. `zod/mini` configures no locale, so without `en` an issue reads "Invalid
 * input" and describeIssue's "is missing (a string is expected)" could not be told apart; every
 * schema of ours is built from this module, so the locale is set before the first one parses.
 * Import it as a namespace (`import * as z`): the bundle keeps only the functions named.
 */
import { en } from "zod/locales";
import { config } from "zod/mini";

config(en());

export * from "zod/mini";
