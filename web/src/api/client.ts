// The typed client: openapi-fetch over the paths generated from the API's OpenAPI spec
// (src/api/schema.d.ts, `npm run gen:api`). The token lives in sessionStorage (gone when the tab
// closes); every request carries it as `Authorization: Bearer`.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
export type Who = Schemas['WhoAmI'];
export type ScenarioOut = Schemas['ScenarioOut'];
export type RevisionOut = Schemas['RevisionOut'];
export type ExperimentOut = Schemas['ExperimentOut'];
export type RunOut = Schemas['RunOut'];
export type Estimate = Schemas['Estimate'];
export type PlanOut = Schemas['PlanOut'];
export type FileOut = Schemas['FileOut'];
export type ExperimentIn = Schemas['ExperimentIn'];
export type MetricAggregate = Schemas['MetricAggregate'];
export type AggregateRow = Schemas['AggregateRow'];
export type Results = Schemas['ResultsOut'];
export type ComparedMetric = Schemas['ComparedMetric'];
export type Comparison = Schemas['ComparisonOut'];
export type Verdict = Schemas['VerdictOut'];
export type SeriesInfo = Schemas['SeriesInfo'];
export type SeriesBuckets = Schemas['SeriesBuckets'];
export type SweepValue = AggregateRow['sweep_value'];

export const TOKEN_KEY = 'satlab.token';

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export const UNAUTHORIZED_EVENT = 'satlab:unauthorized';

export const api = createClient<paths>({ baseUrl: globalThis.location.origin });
api.use({
  onRequest({ request }) {
    const t = getToken();
    if (t && !request.headers.has('Authorization')) request.headers.set('Authorization', `Bearer ${t}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) globalThis.dispatchEvent(new Event(UNAUTHORIZED_EVENT));
    return response;
  },
});

/** An API error: the status, the detail and the `field: reason` lines of a 422. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: string[] = [],
  ) {
    super(message);
  }
}

function toApiError(status: number, body: unknown): ApiError {
  if (body && typeof body === 'object') {
    const b = body as { detail?: unknown; errors?: unknown };
    const errors = Array.isArray(b.errors) ? b.errors.map(String) : [];
    const detail = typeof b.detail === 'string' ? b.detail : errors.join('\n') || `HTTP ${status}`;
    return new ApiError(status, detail, errors);
  }
  return new ApiError(status, `HTTP ${status}`);
}

/** Unwraps an openapi-fetch result: the data, or an ApiError. */
export async function ok<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await p;
  if (!r.response.ok || r.data === undefined) throw toApiError(r.response.status, r.error);
  return r.data;
}

/** For the endpoints the spec types as a free-form object or text: fetch with the token. */
export async function raw(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const t = getToken();
  if (t) headers.set('Authorization', `Bearer ${t}`);
  const res = await fetch(path, { ...init, headers });
  if (res.status === 401) globalThis.dispatchEvent(new Event(UNAUTHORIZED_EVENT));
  if (!res.ok) {
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      body = undefined;
    }
    throw toApiError(res.status, body);
  }
  return res;
}

export async function rawJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await (await raw(path, init)).json()) as T;
}

export function canSubmit(who: Who | null): boolean {
  return who?.role === 'submitter' || who?.role === 'admin';
}
