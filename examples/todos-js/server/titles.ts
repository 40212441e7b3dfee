import { PorticoError } from "portico";

/** A todo title: trimmed, one line, not empty. */
export function cleanTitle(title: unknown): string {
  if (typeof title !== "string" || title.trim() === "") {
    throw new PorticoError("invalid-title", "A todo needs a title", { got: typeof title });
  }
  return title.trim().replace(/\s+/g, " ");
}
