/**
 * What a service reads of a request and writes on its answer, without the HTTP framework's types (the HTTP
 * layer's request and response have these members): the method, path, URL, parsed body and headers; the
 * answer's locals (where the credential travels) and its headers.
 */
export interface RequestView {
  readonly method: string;
  readonly path: string;
  readonly originalUrl: string;
  readonly body?: unknown;
  header(name: string): string | undefined;
}

export interface AnswerView {
  readonly locals: Record<string, unknown>;
  setHeader(name: string, value: string): unknown;
}
