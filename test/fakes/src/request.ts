/** Reading requests the same way in every fake business system. */
import { z } from "zod";

/** The first value of a request header (Node gives repeated headers as a list). */
export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The 400 answer for a body or query that failed its zod schema, naming each field (z.prettifyError). */
export function invalid(error: z.ZodError): {
  statusCode: 400;
  body: { error: "invalid_request"; message: string };
} {
  return { statusCode: 400, body: { error: "invalid_request", message: z.prettifyError(error) } };
}
