// The service's health check, GET /api/health, served by the FastAPI service on the same origin
// (the Vite dev server proxies /api to it). 200 with status "ok" when the service and its
// PostgreSQL database both answer; 503 with status "degraded" and a `detail` when the database
// does not. Anything else (no answer, a proxy error page) means the service itself is unreachable.

export const HEALTH_URL = '/api/health';

export interface HealthReport {
  /** "ok" or "degraded". */
  status: string;
  /** "ok" or "unreachable". */
  database: string;
  /** The SatLab service version. */
  version: string;
  /** PostgreSQL server version, when the database answered. */
  postgres?: string;
  /** Why the database is not ok, when it is not. */
  detail?: string;
}

export type HealthResult =
  | { kind: 'ok'; report: HealthReport }
  | { kind: 'degraded'; report: HealthReport; httpStatus: number }
  | { kind: 'unreachable'; reason: string };

function isOptionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

export function isHealthReport(value: unknown): value is HealthReport {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return (
    typeof v.status === 'string' &&
    typeof v.database === 'string' &&
    typeof v.version === 'string' &&
    isOptionalString(v.postgres) &&
    isOptionalString(v.detail)
  );
}

/**
 * Asks the service for its health. Never rejects for a network or HTTP failure (those become
 * `unreachable`); rejects only when `signal` aborts the request.
 */
export async function fetchHealth(signal?: AbortSignal): Promise<HealthResult> {
  let response: Response;
  try {
    response = await fetch(HEALTH_URL, {
      headers: { Accept: 'application/json' },
      cache: 'no-store',
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted) {
      throw error;
    }
    return { kind: 'unreachable', reason: 'No answer from the SatLab service (network error).' };
  }

  let body: unknown;
  try {
    body = await response.json();
  } catch (error) {
    if (signal?.aborted) {
      throw error;
    }
    body = undefined;
  }

  if (!isHealthReport(body)) {
    return {
      kind: 'unreachable',
      reason: `The service answered HTTP ${response.status} without a health report.`,
    };
  }
  if (response.ok && body.status === 'ok' && body.database === 'ok') {
    return { kind: 'ok', report: body };
  }
  return { kind: 'degraded', report: body, httpStatus: response.status };
}
