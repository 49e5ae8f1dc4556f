/**
 * The page the console draws into, and what every view of it shares: the element it fills, text escaped for
 * HTML, and an error shown at the top of a view (role "alert").
 */

/** the element each view fills (index.html's <main id="app">) */
export const app = document.getElementById("app")!;

/** any value as text safe inside HTML, attributes included */
export const esc = (v: unknown): string =>
  String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function showError(where: HTMLElement, err: unknown): void {
  const box = document.createElement("div");
  box.className = "error";
  box.setAttribute("role", "alert");
  box.dataset.testid = "error";
  box.textContent = `Error - ${err instanceof Error ? err.message : String(err)}`;
  where.prepend(box);
}
