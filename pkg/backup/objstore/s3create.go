package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// errSizeMismatch: the reader yielded a different number of bytes than the size given.
var errSizeMismatch = errors.New("reader length differs from the size given")

// Create stores r under key, never overwriting. An object that fits one part is one PUT with
// If-None-Match: *; a larger one is a multipart upload through minio.Core, so that the condition
// is sent on CompleteMultipartUpload, where the object comes into being (minio-go's PutObject
// sends it only on the upload's creation, where versitygw, among others, does not check it).
// Every failure aborts the upload, so nothing is left under the key.
func (s *s3Store) Create(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	if err := validateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.create(ctx, key, r, size)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("create %s: %w", s.Location(key), err)
	}
	return info, nil
}

func (s *s3Store) create(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	partSize, err := s.limits.planPartSize(size, s.partSize, s.maxParts)
	if err != nil {
		return ObjectInfo{}, err
	}
	bufSize := partSize
	if size >= 0 && size < partSize {
		bufSize = size
	}
	buf := s.buffer(bufSize)
	defer s.release(buf)
	pr := &partReader{r: r}
	n, last, err := pr.next(buf[:bufSize])
	if err != nil {
		return ObjectInfo{}, err
	}
	if !last && size >= 0 && int64(n) >= size {
		return ObjectInfo{}, fmt.Errorf("%w: %d bytes given, more read", errSizeMismatch, size)
	}
	if last {
		if size >= 0 && int64(n) != size {
			return ObjectInfo{}, fmt.Errorf("%w: %d bytes given, %d read", errSizeMismatch, size, n)
		}
		return s.putSingle(ctx, key, buf[:n])
	}
	up := &multipartUpload{s: s, key: s.objectKey(key), size: size, maxParts: s.maxParts}
	return up.run(ctx, pr, buf[:partSize], n, false)
}

// buffer returns a part buffer of at least n bytes, reusing the store's pool for full parts.
func (s *s3Store) buffer(n int64) []byte {
	if n == s.partSize {
		if p, ok := s.bufs.Get().(*[]byte); ok && int64(len(*p)) == n {
			return *p
		}
	}
	return make([]byte, n)
}

func (s *s3Store) release(buf []byte) {
	if int64(len(buf)) == s.partSize {
		s.bufs.Put(&buf)
	}
}

// conditionalOpts are the options of every write: If-None-Match: *, and the payload's SHA-256
// that putSingle and putPart compute signed into the request (DisableContentSha256 only turns
// off minio-go's own chunk-by-chunk streaming signature, which would hash the data a second
// time); the server checks the body against it. A non-empty writeID is stored with the object
// (see ownWrite); the completion of a multipart upload carries none, its creation did.
func conditionalOpts(writeID string) minio.PutObjectOptions {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", DisableContentSha256: true}
	if writeID != "" {
		opts.UserMetadata = map[string]string{writeIDMeta: writeID}
	}
	opts.SetMatchETagExcept("*")
	return opts
}

// writeIDMeta names the user metadata (x-amz-meta-bloodraven-write-id) holding the random id of
// the Create that stored an object.
const writeIDMeta = "Bloodraven-Write-Id"

func newWriteID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ownWrite tells a refusal caused by this very write from one caused by another writer. minio-go
// retries a request whose answer was lost (a dropped connection, a 502 from a proxy); when the
// lost answer was a success, the retry finds the object it stored itself and gets 412 (or, for a
// completion, NoSuchUpload). The object's write id says whose it is.
func (s *s3Store) ownWrite(ctx context.Context, objectKey, writeID string) (ObjectInfo, bool) {
	info, err := s.core.StatObject(ctx, s.bucket, objectKey, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, false
	}
	for k, v := range info.UserMetadata {
		if strings.EqualFold(k, writeIDMeta) && v == writeID {
			return ObjectInfo{Key: s.relKey(objectKey), Size: info.Size, ETag: strings.Trim(info.ETag, `"`)}, true
		}
	}
	return ObjectInfo{}, false
}

func (s *s3Store) putSingle(ctx context.Context, key string, data []byte) (ObjectInfo, error) {
	id := newWriteID()
	info, err := s.core.PutObject(ctx, s.bucket, s.objectKey(key), bytes.NewReader(data), int64(len(data)),
		"", payloadHash(data), conditionalOpts(id))
	if err != nil {
		err = mapErr(err)
		if errors.Is(err, ErrExists) {
			if own, ok := s.ownWrite(ctx, s.objectKey(key), id); ok && own.Size == int64(len(data)) {
				return own, nil
			}
		}
		return ObjectInfo{}, err
	}
	return ObjectInfo{Key: key, Size: int64(len(data)), ETag: strings.Trim(info.ETag, `"`)}, nil
}

// payloadHash is the SHA-256 the request signature covers (x-amz-content-sha256): the server
// refuses a body that does not match it, so no Content-MD5 is sent on top.
func payloadHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// partReader fills part buffers from a stream and knows whether a part is the last one by
// reading one byte ahead, so a stream of exactly n parts is not mistaken for a longer one.
type partReader struct {
	r       io.Reader
	ahead   byte
	hasNext bool
	total   int64
}

// next fills buf and reports how many bytes it holds and whether the stream ended with it.
func (p *partReader) next(buf []byte) (int, bool, error) {
	n := 0
	if p.hasNext && len(buf) > 0 {
		buf[0] = p.ahead
		n = 1
		p.hasNext = false
	}
	m, err := io.ReadFull(p.r, buf[n:])
	n += m
	p.total += int64(n)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return n, true, nil
	case err != nil:
		return 0, false, fmt.Errorf("reading the object's data: %w", err)
	}
	var one [1]byte
	for {
		k, err := p.r.Read(one[:])
		if k == 1 {
			p.ahead, p.hasNext = one[0], true
			return n, false, nil
		}
		if errors.Is(err, io.EOF) {
			return n, true, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("reading the object's data: %w", err)
		}
	}
}

// multipartUpload is one conditional multipart upload in flight.
type multipartUpload struct {
	s        *s3Store
	key      string // the object key, prefix included
	size     int64  // -1 = unknown
	maxParts int
	id       string
	writeID  string
	parts    []minio.CompletePart
}

// run uploads the first part (already in buf[:n]; last says whether it is the only one) and the
// rest of pr, then completes the upload with If-None-Match: *. Anything but a successful
// completion aborts the upload. While one part is sent, the next is read into a second buffer,
// so a slow source (encryption) and the network overlap; no part is sent before the previous
// one was accepted, and none is in flight when run returns.
func (u *multipartUpload) run(ctx context.Context, pr *partReader, buf []byte, n int, last bool) (info ObjectInfo, err error) {
	s := u.s
	// The condition on creation lets a store that checks there (MinIO) refuse early; the one on
	// completion is the one that counts.
	u.writeID = newWriteID()
	u.id, err = s.core.NewMultipartUpload(ctx, s.bucket, u.key, conditionalOpts(u.writeID))
	if err != nil {
		return ObjectInfo{}, mapErr(err)
	}
	defer func() {
		if err != nil {
			u.abort(ctx)
		}
	}()
	cur, next := buf, []byte(nil)
	if !last {
		next = s.buffer(int64(len(buf)))
		defer s.release(next)
	}
	for partNumber := 1; ; partNumber++ {
		if !last && partNumber == u.maxParts {
			return ObjectInfo{}, fmt.Errorf("%w: more than %d parts of %d bytes (%d bytes) and the stream goes on; "+
				"nothing was stored", ErrTooLarge, u.maxParts, len(buf), int64(u.maxParts)*int64(len(buf)))
		}
		if u.size >= 0 && pr.total > u.size {
			return ObjectInfo{}, fmt.Errorf("%w: %d bytes given, more read", errSizeMismatch, u.size)
		}
		sent := u.startPart(ctx, partNumber, cur[:n])
		if last {
			if err := <-sent; err != nil {
				return ObjectInfo{}, err
			}
			break
		}
		var readErr error
		n, last, readErr = pr.next(next)
		if err := <-sent; err != nil {
			return ObjectInfo{}, err
		}
		if readErr != nil {
			return ObjectInfo{}, readErr
		}
		cur, next = next, cur
	}
	if u.size >= 0 && pr.total != u.size {
		return ObjectInfo{}, fmt.Errorf("%w: %d bytes given, %d read", errSizeMismatch, u.size, pr.total)
	}
	return u.complete(ctx, pr.total)
}

// startPart sends one part in the background; the channel yields its outcome once.
func (u *multipartUpload) startPart(ctx context.Context, partNumber int, data []byte) <-chan error {
	sent := make(chan error, 1)
	go func() { sent <- u.putPart(ctx, partNumber, data) }()
	return sent
}

// putPart uploads one part and records it; run calls it for one part at a time, only while the
// part limit is not reached, except for the last part, which may be the limit's own.
func (u *multipartUpload) putPart(ctx context.Context, partNumber int, data []byte) error {
	part, err := u.s.core.PutObjectPart(ctx, u.s.bucket, u.key, u.id, partNumber, bytes.NewReader(data),
		int64(len(data)), minio.PutObjectPartOptions{Sha256Hex: payloadHash(data), DisableContentSha256: true})
	if err != nil {
		return fmt.Errorf("part %d: %w", partNumber, mapErr(err))
	}
	u.parts = append(u.parts, minio.CompletePart{PartNumber: partNumber, ETag: part.ETag})
	return nil
}

// complete commits the upload. AWS S3 answers 409 ConditionalRequestConflict when another
// conditional write of the key is in progress and says to retry; the retry then sees the other
// writer's object (412) or succeeds.
func (u *multipartUpload) complete(ctx context.Context, total int64) (ObjectInfo, error) {
	s := u.s
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var res minio.UploadInfo
		res, err = s.core.CompleteMultipartUpload(ctx, s.bucket, u.key, u.id, u.parts, conditionalOpts(""))
		if err == nil {
			return ObjectInfo{Key: s.relKey(u.key), Size: total, ETag: strings.Trim(res.ETag, `"`)}, nil
		}
		resp := minio.ToErrorResponse(err)
		if resp.StatusCode == http.StatusPreconditionFailed || resp.Code == "NoSuchUpload" {
			if own, ok := s.ownWrite(ctx, u.key, u.writeID); ok && own.Size == total {
				return own, nil
			}
		}
		if resp.StatusCode != http.StatusConflict {
			break
		}
		select {
		case <-ctx.Done():
			return ObjectInfo{}, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return ObjectInfo{}, mapErr(err)
}

// abort removes the upload's parts, also when ctx is already cancelled.
func (u *multipartUpload) abort(ctx context.Context) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = u.s.core.AbortMultipartUpload(actx, u.s.bucket, u.key, u.id)
}
