// The settings bcode-ls itself reads (docs/lsp.md, Settings).
import * as vscode from 'vscode';

/** serverSettings are the settings bcode-ls itself reads, as it takes them. */
export function serverSettings(folder: vscode.WorkspaceFolder): { bcode: Record<string, unknown> } {
  const cfg = vscode.workspace.getConfiguration('bcode', folder);
  return {
    bcode: {
      evidenceOnSave: cfg.get<boolean>('evidenceOnSave', true),
      evidenceOnOpen: cfg.get<boolean>('evidenceOnOpen', true),
      notCovered: cfg.get<string>('notCovered', 'line'),
    },
  };
}
