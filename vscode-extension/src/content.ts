// Serving bcode-pack: and bcode-mutant: documents: vscode-languageclient
// asks the server with workspace/textDocumentContent (LSP 3.18); when that
// fails or answers nothing, the extension asks again with bcode-ls's plain
// bcode/documentContent request, so a preview opens either way.

export async function contentWithFallback(
  uri: string,
  viaLsp: () => PromiseLike<string | null | undefined> | string | null | undefined,
  viaRequest: (uri: string) => Promise<string>,
): Promise<string> {
  let first: unknown;
  try {
    const text = await viaLsp();
    if (typeof text === 'string') return text;
  } catch (e) {
    first = e;
  }
  try {
    return await viaRequest(uri);
  } catch (e) {
    const why = first instanceof Error ? ` (workspace/textDocumentContent: ${first.message})` : '';
    throw new Error(`bcode-ls has no document ${uri}: ${(e as Error).message}${why}`);
  }
}
