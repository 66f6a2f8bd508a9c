package envelope

import (
	"crypto/hmac"
	"fmt"
	"io"
)

// reader opens one chunk at a time. Whether a chunk is the last is decided by
// the data, not by the ciphertext: a full chunk followed by more bytes must
// authenticate as "not last", anything that ends the data as "last".
type reader struct {
	src   io.Reader
	keys  *keys
	ct    []byte // ciphertext of the chunk being read, plus one byte of lookahead
	ahead bool   // ct[0] holds the lookahead byte read with the previous chunk
	pt    []byte // authenticated plaintext not yet returned
	// ptBuf backs pt. It is apart from ct because a failed Open clears its
	// output, and openLast may need the ciphertext for a second Open.
	ptBuf []byte
	index uint64 // index of the next chunk to open
	err   error  // sticky: io.EOF after the last chunk, or the failure
}

// NewReader decrypts src; Read returns an error wrapping one of the sentinels below on a bad input,
// never unauthenticated plaintext.
// NewReader reads and checks the header at once, so ErrNotEnvelope,
// ErrWrongPassphrase and ErrTruncated (a cut header) come from it; the chunks'
// ErrTampered and ErrTruncated come from Read. The passphrase goes through
// Passphrase first.
func NewReader(src io.Reader, passphrase []byte) (io.Reader, error) {
	p, err := Passphrase(passphrase)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, HeaderSize)
	n, err := io.ReadFull(src, hdr)
	switch {
	case n < len(Magic) && (err == io.EOF || err == io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: the data is %d bytes long", ErrNotEnvelope, n)
	case n >= len(Magic) && !IsEnvelope(hdr):
		return nil, fmt.Errorf("%w: the data starts with %q", ErrNotEnvelope, hdr[:len(Magic)])
	case err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("%w: it ends %d bytes into the %d-byte header", ErrTruncated, n, HeaderSize)
	case err != nil:
		return nil, fmt.Errorf("reading the envelope header: %w", err)
	}
	want, err := headerCheck(p, hdr[:HeaderSize-checkSize])
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(want, hdr[HeaderSize-checkSize:]) {
		return nil, ErrWrongPassphrase
	}
	k, err := deriveKeys(p, hdr)
	if err != nil {
		return nil, err
	}
	return &reader{
		src:   src,
		keys:  k,
		ct:    make([]byte, ChunkSize+tagSize+1),
		ptBuf: make([]byte, 0, ChunkSize),
	}, nil
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.pt) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		r.err = r.next()
	}
	n := copy(p, r.pt)
	r.pt = r.pt[n:]
	return n, nil
}

// next reads and opens chunk r.index into r.pt. It returns io.EOF once the
// last chunk is open (its plaintext, possibly empty, is in r.pt).
func (r *reader) next() error {
	if r.index >= maxChunks {
		return errTooLong
	}
	start := 0
	if r.ahead {
		start = 1
	}
	n, err := io.ReadFull(r.src, r.ct[start:])
	n += start
	switch {
	case err == nil: // a full chunk and one more byte: not the last chunk
		return r.openMore()
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return r.openLast(n)
	default:
		return fmt.Errorf("reading envelope chunk %d: %w", r.index, err)
	}
}

// openMore opens a full chunk that more data follows.
func (r *reader) openMore() error {
	full := ChunkSize + tagSize
	pt, err := r.keys.aead.Open(r.ptBuf[:0], r.keys.nonce(r.index), r.ct[:full], aadMore)
	if err != nil {
		return fmt.Errorf("%w: chunk %d (at byte %d) does not authenticate", ErrTampered, r.index, r.offset())
	}
	r.pt = pt
	r.ct[0], r.ahead = r.ct[full], true
	r.index++
	return nil
}

// openLast opens the n bytes that end the data as the last chunk. If they
// authenticate as "not last" instead, the file was cut after them.
func (r *reader) openLast(n int) error {
	ct := r.ct[:n]
	if n < tagSize {
		return fmt.Errorf("%w: it ends %d bytes into chunk %d (at byte %d), before the chunk's tag", ErrTruncated, n, r.index, r.offset())
	}
	nonce := r.keys.nonce(r.index)
	pt, err := r.keys.aead.Open(r.ptBuf[:0], nonce, ct, aadLast)
	if err == nil {
		r.pt = pt
		r.index++
		return io.EOF
	}
	if n == ChunkSize+tagSize {
		if _, err := r.keys.aead.Open(r.ptBuf[:0], nonce, ct, aadMore); err == nil {
			return fmt.Errorf("%w: it ends after chunk %d (at byte %d), which was written as not the last chunk", ErrTruncated, r.index, r.offset()+int64(n))
		}
	}
	return fmt.Errorf("%w: the last chunk, %d (at byte %d), does not authenticate (altered, or cut inside the chunk)", ErrTampered, r.index, r.offset())
}

// offset is where chunk r.index starts in the envelope.
func (r *reader) offset() int64 {
	return int64(HeaderSize) + int64(r.index)*(ChunkSize+tagSize)
}
