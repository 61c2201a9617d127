/**
 * HTTP client of the ERP business system (the fake in `test/fakes/src/erp` speaks the same API). Every
 * answer is parsed at this boundary; every failure becomes a `ProviderError` with a shared kind. All
 * calls are reads, so nothing can have happened when one fails:
 *   400 → invalid_arguments · 401/403 → forbidden · 404 → not_found
 *   429, 5xx, connection failures, deadline, an unreadable body → unavailable
 */
import { ProviderError } from "@gatehouse/provider-sdk";
import { z } from "zod";

/** A material master record as the ERP returns it. */
export const ErpMaterial = z.object({
  id: z.string(),
  description: z.string(),
  baseUnit: z.string(),
  materialGroup: z.string(),
  plants: z.array(z.string()),
});
export type ErpMaterial = z.infer<typeof ErpMaterial>;

/** The stock of a material in a plant as the ERP returns it; quantities in `baseUnit`. */
export const ErpStockLevel = z.object({
  materialId: z.string(),
  plant: z.string(),
  baseUnit: z.string(),
  unrestricted: z.number(),
  qualityInspection: z.number(),
  blocked: z.number(),
  asOf: z.string(),
});
export type ErpStockLevel = z.infer<typeof ErpStockLevel>;

const ErpErrorBody = z.object({ error: z.string().optional(), message: z.string().optional() }).loose();

/** Who reads in the ERP and the caller's deadline. */
export interface ErpCallOptions {
  user: string;
  signal?: AbortSignal;
}

/** The ERP operations the provider needs. */
export interface ErpClient {
  readMaterial(materialId: string, options: ErpCallOptions): Promise<ErpMaterial>;
  readStock(materialId: string, plant: string, options: ErpCallOptions): Promise<ErpStockLevel>;
  /** Resolves when the ERP answers its health route within `signal`; throws `unavailable` otherwise. */
  ping(signal: AbortSignal): Promise<void>;
}

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

/** Maps a non-2xx ERP answer to a kind, keeping the ERP's own message for the human. */
function httpFailure(status: number, body: unknown, what: string): ProviderError {
  const parsed = ErpErrorBody.safeParse(body);
  const detail = parsed.success ? (parsed.data.message ?? parsed.data.error ?? "") : "";
  const message = `ERP refused ${what} with HTTP ${status}${detail ? `: ${detail}` : ""}`;
  if (status === 400) return new ProviderError("invalid_arguments", message);
  if (status === 401 || status === 403) return new ProviderError("forbidden", message);
  if (status === 404) return new ProviderError("not_found", message);
  return new ProviderError("unavailable", message);
}

/** A client of the ERP at `baseUrl` (env `ERP_URL`), using the global fetch; the user goes in `X-ERP-User`. */
export function createErpClient(baseUrl: string): ErpClient {
  const root = baseUrl.replace(/\/+$/, "");

  async function get<T>(
    what: string,
    path: string,
    schema: z.ZodType<T>,
    options: ErpCallOptions,
  ): Promise<T> {
    let response: Response;
    let payload: unknown;
    try {
      response = await fetch(`${root}${path}`, {
        headers: { accept: "application/json", "x-erp-user": options.user },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      payload = await response.json().catch(() => undefined);
    } catch (error) {
      const reason = options.signal?.aborted
        ? "did not answer in time"
        : `unreachable (${causeCode(error) ?? "no code"})`;
      throw new ProviderError("unavailable", `ERP ${reason} during ${what}`, { cause: error });
    }
    if (!response.ok) throw httpFailure(response.status, payload, what);
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      throw new ProviderError("unavailable", `ERP answered ${what} with an unexpected body`, {
        cause: parsed.error,
      });
    }
    return parsed.data;
  }

  const material = (id: string) => `/api/materials/${encodeURIComponent(id)}`;
  return {
    readMaterial: (materialId, options) => get("read material", material(materialId), ErpMaterial, options),
    readStock: (materialId, plant, options) =>
      get(
        "read stock",
        `${material(materialId)}/stock?plant=${encodeURIComponent(plant)}`,
        ErpStockLevel,
        options,
      ),
    async ping(signal) {
      try {
        const response = await fetch(`${root}/api/health`, { signal });
        await response.body?.cancel();
        if (!response.ok)
          throw new ProviderError("unavailable", `ERP health answered HTTP ${response.status}`);
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        throw new ProviderError("unavailable", `ERP unreachable (${causeCode(error) ?? "no answer"})`, {
          cause: error,
        });
      }
    },
  };
}
