// Package envelope writes and reads the BRV1 authenticated envelope: one file
// encrypted with AES-256-GCM under keys derived with HKDF-SHA256 from a
// passphrase, in fixed-size chunks so that encrypting and decrypting stream in
// constant memory. docs/backup-encryption.md gives the format byte by byte and
// a script that decrypts it without Bloodraven.
//
// The format, in short:
//
//	header  "BRV1" | salt (32 random bytes) | nonce prefix (8 random bytes) |
//	        check = HMAC-SHA256(check key, the 44 bytes before it)      76 bytes
//	chunk i AES-256-GCM(chunk key, nonce = prefix | uint32be(i),
//	        additional data = 0x01 for the last chunk, 0x00 otherwise)
//	        of 65,536 plaintext bytes (the last chunk: 0 to 65,536), plus its
//	        16-byte tag
//
// with chunk key = HKDF-SHA256(passphrase, salt, "BRV1 AES-256-GCM chunk key")
// and check key = HKDF-SHA256(passphrase, salt, "BRV1 header check key").
//
// What each part guards:
//   - the salt makes every file's keys its own, so the same passphrase never
//     uses one key and nonce twice across files;
//   - the chunk index in the nonce makes a chunk authenticate only at its own
//     position (reordered, dropped or duplicated chunks fail);
//   - the last-chunk flag in the additional data makes a file cut at a chunk
//     boundary fail: its new last chunk was sealed as "not last";
//   - the header check tells a wrong passphrase from altered data before any
//     chunk is opened, and commits the file to one passphrase (GCM alone is
//     not key-committing). It gives an attacker nothing the first chunk's tag
//     does not already give: both let one test a guessed passphrase offline
//     at the cost of an HKDF. HKDF has no work factor, so the passphrase itself
//     must be high-entropy (32 random bytes); see the document.
//
// A Reader releases a chunk's plaintext only after its tag verified, so it
// never returns unauthenticated bytes; but a file is whole only once Read
// returned io.EOF (the last chunk authenticated). A consumer acting on the
// data before that must be able to undo it.
package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// Magic opens every envelope; it also names the format's version.
const Magic = "BRV1"

// Algorithm is the payload cipher, as the API's encryption.algorithm names it.
const Algorithm = "AES-256-GCM"

// ChunkSize is the plaintext size of every chunk but the last.
const ChunkSize = 64 << 10

// HeaderSize is the size of the header: magic, salt, nonce prefix, check.
const HeaderSize = len(Magic) + saltSize + prefixSize + checkSize

const (
	saltSize   = 32
	prefixSize = 8 // plus a 4-byte chunk counter: GCM's 12-byte nonce
	checkSize  = sha256.Size
	keySize    = 32 // AES-256
	tagSize    = 16 // GCM's tag
	// maxChunks bounds the 32-bit chunk counter (256 TiB at 64 KiB a chunk),
	// so no nonce is ever used twice under one key.
	maxChunks = 1 << 32
)

// The HKDF info strings: each names the version, so a later format never
// derives the same keys from the same passphrase and salt.
const (
	infoChunkKey = "BRV1 AES-256-GCM chunk key"
	infoCheckKey = "BRV1 header check key"
)

// The additional authenticated data of a chunk: whether it is the last one.
var (
	aadMore = []byte{0x00}
	aadLast = []byte{0x01}
)

// The sentinels a Reader's errors wrap (test them with errors.Is).
var (
	// ErrNotEnvelope: the data does not start with the BRV1 magic.
	ErrNotEnvelope = errors.New("not a BRV1 envelope")
	// ErrWrongPassphrase: the header's check does not match this
	// passphrase. An altered header reads the same way: the check covers it.
	ErrWrongPassphrase = errors.New("wrong passphrase for this BRV1 envelope (or its header was altered)")
	// ErrTruncated: the data ends where no envelope can end (inside the
	// header, after a chunk sealed as not the last, or less than a tag into
	// a chunk).
	ErrTruncated = errors.New("BRV1 envelope is truncated")
	// ErrTampered: a chunk does not authenticate. A cut more than 16 bytes
	// into the last chunk reads the same way: it cannot be told from an
	// altered one.
	ErrTampered = errors.New("BRV1 envelope was altered")
)

// passphraseSpace is the whitespace Passphrase strips: ASCII only, so that
// every implementation (Python's bytes.strip() included) strips the same bytes.
const passphraseSpace = " \t\n\v\f\r"

// Passphrase strips surrounding whitespace (seed 004 PassphraseSecretRef.key); empty after that is an error.
// Whitespace is ASCII space, tab, newline, vertical tab, form feed and carriage
// return; other bytes, such as a UTF-8 no-break space, are part of the
// passphrase. The result is a copy.
func Passphrase(raw []byte) ([]byte, error) {
	p := bytes.Trim(raw, passphraseSpace)
	if len(p) == 0 {
		return nil, errors.New("the passphrase is empty (after stripping surrounding whitespace)")
	}
	return bytes.Clone(p), nil
}

// IsEnvelope reports whether the first bytes of a file are a BRV1 header.
// It checks the magic only: a plaintext file can start with "BRV1" too (a
// tab-separated dump chunk whose first value is "BRV1..."), so only NewReader
// with the passphrase proves that a file is an envelope.
func IsEnvelope(prefix []byte) bool {
	return len(prefix) >= len(Magic) && string(prefix[:len(Magic)]) == Magic
}

// EncryptedSize is the size of the envelope of plain bytes of plaintext, for
// a store that wants an object's size before it is written.
func EncryptedSize(plain int64) int64 {
	chunks := plain / ChunkSize
	if plain%ChunkSize != 0 || plain == 0 {
		chunks++ // the last chunk: partial, or empty for an empty file
	}
	return int64(HeaderSize) + plain + chunks*tagSize
}

// keys holds what a header and a passphrase determine.
type keys struct {
	aead   cipher.AEAD
	prefix [prefixSize]byte
}

// header lays out the 76-byte header for salt and prefix under passphrase.
func header(passphrase, salt, prefix []byte) ([]byte, error) {
	h := make([]byte, 0, HeaderSize)
	h = append(h, Magic...)
	h = append(h, salt...)
	h = append(h, prefix...)
	check, err := headerCheck(passphrase, h)
	if err != nil {
		return nil, err
	}
	return append(h, check...), nil
}

// headerCheck is HMAC-SHA256 under the check key of the header's first 44
// bytes (magic, salt, prefix).
func headerCheck(passphrase, unchecked []byte) ([]byte, error) {
	salt := unchecked[len(Magic) : len(Magic)+saltSize]
	checkKey, err := hkdf.Key(sha256.New, passphrase, salt, infoCheckKey, keySize)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, checkKey)
	mac.Write(unchecked)
	return mac.Sum(nil), nil
}

// deriveKeys builds the chunk cipher of a checked header.
func deriveKeys(passphrase, hdr []byte) (*keys, error) {
	salt := hdr[len(Magic) : len(Magic)+saltSize]
	chunkKey, err := hkdf.Key(sha256.New, passphrase, salt, infoChunkKey, keySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(chunkKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &keys{aead: aead}
	copy(k.prefix[:], hdr[len(Magic)+saltSize:])
	return k, nil
}

// nonce is the nonce of chunk i: the file's prefix, then i as big-endian uint32.
func (k *keys) nonce(i uint64) []byte {
	n := make([]byte, 0, prefixSize+4)
	n = append(n, k.prefix[:]...)
	return append(n, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
}

// errTooLong refuses a file whose chunk counter would wrap.
var errTooLong = fmt.Errorf("a BRV1 envelope holds at most %d chunks (256 TiB)", uint64(maxChunks))
