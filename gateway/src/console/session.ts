/**
 * The operator's session: signed in with a Safe owner's wallet (an EIP-4361 message the gateway issues, signed
 * with personal_sign), kept in sessionStorage until it expires or the operator signs out.
 */
import { api } from "./api";
import { toHex, wallet } from "./wallet";

const SESSION = "console.operator_session";

export interface Session {
  session_key: string;
  safe: `0x${string}`;
  owner: `0x${string}`;
  treasury_id: string;
  expires_at: string;
  threshold: number;
}

/** the session in force, or null (none, or expired) */
export const session = (): Session | null => {
  const s = JSON.parse(sessionStorage.getItem(SESSION) ?? "null") as Session | null;
  return s && s.expires_at > new Date().toISOString() ? s : null;
};

/** forget the session (signed out, or ended by the gateway) */
export const forgetSession = (): void => sessionStorage.removeItem(SESSION);

export async function signIn(safe: string): Promise<void> {
  const [owner] = (await wallet().request({ method: "eth_requestAccounts" })) as string[];
  if (!owner) throw new Error("the wallet gave no account");
  const statement = await api(`/api/v1/console/sign-in?owner=${encodeURIComponent(owner)}&safe=${encodeURIComponent(safe)}`);
  const signature = await wallet().request({ method: "personal_sign", params: [toHex(statement.message), owner] });
  const s = await api("/api/v1/console/sessions", { method: "POST", body: { owner, safe, nonce: statement.nonce, issued_at: statement.issued_at, signature } });
  sessionStorage.setItem(SESSION, JSON.stringify(s));
}
