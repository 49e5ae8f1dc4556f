export type Entry = "stack" | "gateway" | "facilitator" | "protection";
export declare const ENTRIES: Record<Entry, string>;
export declare function stackEntries(root: string, env: NodeJS.ProcessEnv): Promise<{ args: Record<Entry, string[]>; how: string }>;
