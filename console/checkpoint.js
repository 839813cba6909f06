// The tenant's newest signed checkpoint (docs/investigations.md, "Proving the history"),
// its signature checked here, in the browser, against the service's verifier key with
// WebCrypto's Ed25519 (where the browser has it): what the Integrity panel shows.
import { api, APIError } from './api.js';

const bytes = (base64) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

/** `{state: 'verified' | 'bad' | 'unchecked' | 'none', origin, size, root, message}`. */
export async function newestCheckpoint() {
  let note;
  let key;
  try {
    [note, key] = await Promise.all([
      api.get('/checkpoints/latest', { text: true }),
      api.get('/checkpoints/key', { text: true }),
    ]);
  } catch (error) {
    if (error instanceof APIError && error.status === 404) return { state: 'none', message: error.message };
    throw error;
  }
  // `<name>+<key ID>+<base64 of 0x01 and the key>`: the key's base64 may hold a '+'.
  key = key.trim();
  const first = key.indexOf('+');
  const name = key.slice(0, first);
  const publicKey = bytes(key.slice(key.indexOf('+', first + 1) + 1)).slice(1);
  const split = note.lastIndexOf('\n\n');
  const text = note.slice(0, split + 1);
  const [origin, size, root] = text.split('\n');
  const line = note.slice(split + 2).split('\n').find((l) => l.startsWith(`\u2014 ${name} `));
  if (!line) return { state: 'bad', origin, size: Number(size), root, message: `not signed by ${name}` };
  const signature = bytes(line.split(' ')[2]).slice(4);
  let verified = null;
  try {
    const cryptoKey = await crypto.subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
    verified = await crypto.subtle.verify({ name: 'Ed25519' }, cryptoKey, signature, new TextEncoder().encode(text));
  } catch {
    verified = null; // this browser has no Ed25519 in WebCrypto
  }
  const state = verified === null ? 'unchecked' : verified ? 'verified' : 'bad';
  return { state, origin, size: Number(size), root, key };
}
