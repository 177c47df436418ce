package attest

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/bcode-dev/bcode/sandbox"
)

// KeyFile is the signing key's name in the state directory: an ed25519
// private key, PKCS #8 in PEM, mode 0600.
const KeyFile = "attest.key"

// maxKeyFile bounds a key file read: a PEM ed25519 key is ~120 bytes.
const maxKeyFile = 64 << 10

// Key is the state directory's signing key.
type Key struct {
	priv ed25519.PrivateKey
	// ID names the public key: its SHA-256 fingerprint as ssh-keygen -l
	// prints it ("SHA256:..."), the envelope's keyid.
	ID   string
	Path string
}

// Public is the key's public half.
func (k *Key) Public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

// PublicPEM is the public key as PEM ("PUBLIC KEY", PKIX), what
// `bcode attest verify --key` reads.
func (k *Key) PublicPEM() []byte { return publicPEM(k.Public()) }

func publicPEM(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub) // never fails for ed25519
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// KeyID is a public key's id: its SHA-256 fingerprint as ssh-keygen -l
// prints it.
func KeyID(pub ed25519.PublicKey) string {
	id, err := dsse.SHA256KeyID(pub)
	if err != nil {
		return "" // only for a key that is not ed25519, which cannot be here
	}
	return id
}

// LoadKey reads the signing key of the state directory dir. With create,
// a missing key is made (and never replaced: two processes making one at
// once agree on the first); without, it is ErrNoKey.
func LoadKey(dir string, create bool) (*Key, error) {
	path := filepath.Join(dir, KeyFile)
	k, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) || !create {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s: bcode task export --attestation makes one", ErrNoKey, dir)
		}
		return k, err
	}
	if err := createKey(path); err != nil {
		return nil, err
	}
	return readKey(path)
}

// readKey reads a private key file, refusing one that is not a regular
// file or that group or others may read or write.
//
// The checks and the read are of one open file: the key is opened once,
// without following a link and without blocking on a fifo
// (sandbox.Confined's Open, which refuses anything but a regular file),
// and its mode is read from that handle, so no file swapped in between
// a check and the read is read.
func readKey(path string) (*Key, error) {
	conf, err := sandbox.OpenConfined(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	f, err := conf.Open(filepath.Base(path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Windows has no mode bits (every writable file reads as 0666): its
	// access is the ACL's, which the user's profile directory restricts.
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%w: %s has mode %04o; it must be 0600 (chmod 600 %s)", ErrKeyExposed, path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrKey, path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%w: %s is over the %d-byte limit", ErrKey, path, maxKeyFile)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: %s holds no PEM \"PRIVATE KEY\" block", ErrKey, path)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, path, err)
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s is a %T, not an ed25519 key", ErrKey, path, parsed)
	}
	k := &Key{priv: priv, Path: path}
	k.ID = KeyID(k.Public())
	return k, nil
}

// createKey writes a new key to a temporary file (0600 from its creation)
// and links it into place, so the key file is never seen half written and
// an existing one is never replaced.
func createKey(path string) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := writeTemp(path, data, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("attest: creating the key %s: %w", path, err)
	}
	return nil
}

// ParsePublicKey reads a public key as PublicPEM writes it.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%w: no PEM \"PUBLIC KEY\" block (bcode attest key prints one)", ErrKey)
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	pub, ok := parsed.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: a %T, not an ed25519 key", ErrKey, parsed)
	}
	return pub, nil
}

// ReadPublicKey reads a public key file (PublicPEM's form).
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	data, err := ReadInput(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	pub, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}

// signerVerifier is an ed25519 key as DSSE signs and verifies with it;
// priv is nil for a verifier.
type signerVerifier struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func (s signerVerifier) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(s.priv, data), nil
}

func (s signerVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(s.pub, data, sig) {
		return ErrSignature
	}
	return nil
}

func (s signerVerifier) KeyID() (string, error) { return KeyID(s.pub), nil }

func (s signerVerifier) Public() crypto.PublicKey { return s.pub }
