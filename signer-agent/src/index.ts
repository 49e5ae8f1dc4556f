/** The signer agent as a library. */
export { SignerAgent, RefusedError, type AgentAction, type AgentOptions } from "./agent";
export { AuditLog } from "./audit-log";
export { checkIntent, checkStep, defaultPolicy, loadPolicy, PolicyRefusal, type Policy } from "./policy";
export { Preflight, PreflightError } from "./preflight";
export { createKeystore, unlockKeystore, loadKey } from "./keystore";
export { serveAgent } from "./serve";
export { ExecutedByService, KeystoreError, SIGNER_ERROR_CODES, SignerAgentError, type SignerErrorCode } from "./errors";
export { EnvelopeError, readEnvelope, type Envelope } from "./envelope";
export { readPosition, type WalletPosition } from "./position";
export { existingTreasury, registerTreasury, TreasuryRecord } from "./registration";
export { buildSummary, summaryDocument, summaryText } from "./summary";
