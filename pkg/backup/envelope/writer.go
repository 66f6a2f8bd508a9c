package envelope

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
)

// writer buffers one chunk of plaintext and seals it in place once the next
// byte arrives (then it is not the last) or at Close (then it is).
type writer struct {
	dst   io.Writer
	keys  *keys
	buf   []byte // plaintext of the pending chunk; capacity ChunkSize+tagSize
	index uint64 // index of the pending chunk
	err   error  // sticky: a failed write or Close
	done  bool
}

// NewWriter encrypts everything written to it into dst; Close writes the final (authenticated) chunk
// and must be called. Memory is constant (one chunk).
// The passphrase goes through Passphrase first. NewWriter writes the header to
// dst at once; Close does not close dst.
func NewWriter(dst io.Writer, passphrase []byte) (io.WriteCloser, error) {
	return newWriter(dst, passphrase, rand.Reader)
}

// newWriter takes the salt and nonce prefix from random, so that a test can
// reproduce the document's worked example.
func newWriter(dst io.Writer, passphrase []byte, random io.Reader) (*writer, error) {
	p, err := Passphrase(passphrase)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, saltSize+prefixSize)
	if _, err := io.ReadFull(random, salt); err != nil {
		return nil, fmt.Errorf("reading random salt: %w", err)
	}
	hdr, err := header(p, salt[:saltSize], salt[saltSize:])
	if err != nil {
		return nil, err
	}
	k, err := deriveKeys(p, hdr)
	if err != nil {
		return nil, err
	}
	if _, err := dst.Write(hdr); err != nil {
		return nil, fmt.Errorf("writing the envelope header: %w", err)
	}
	return &writer{dst: dst, keys: k, buf: make([]byte, 0, ChunkSize+tagSize)}, nil
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.done {
		return 0, errors.New("envelope: write after Close")
	}
	n := 0
	for len(p) > 0 {
		if len(w.buf) == ChunkSize {
			// More data follows a full chunk: it is not the last one.
			if err := w.seal(aadMore); err != nil {
				return n, err
			}
		}
		c := copy(w.buf[len(w.buf):ChunkSize], p)
		w.buf = w.buf[:len(w.buf)+c]
		p, n = p[c:], n+c
	}
	return n, nil
}

// Close seals the pending chunk as the last one. A second Close returns the
// first one's result.
func (w *writer) Close() error {
	if w.done || w.err != nil {
		return w.err
	}
	w.done = true
	return w.seal(aadLast)
}

// seal encrypts the pending chunk in place and writes it.
func (w *writer) seal(aad []byte) error {
	if w.index >= maxChunks {
		w.err = errTooLong
		return w.err
	}
	ct := w.keys.aead.Seal(w.buf[:0], w.keys.nonce(w.index), w.buf, aad)
	if _, err := w.dst.Write(ct); err != nil {
		w.err = fmt.Errorf("writing envelope chunk %d: %w", w.index, err)
		return w.err
	}
	w.index++
	w.buf = w.buf[:0]
	return nil
}
