/** The API's version (spec 9): the OpenAPI document's `info.version` (http/openapi.ts) and the gateway status's `api_version`. */
export const API_VERSION = "2026-06-25";
