package objstore

import "fmt"

// S3's multipart limits (the AWS S3 user guide's "Amazon S3 multipart upload limits"): at most
// 10,000 parts, each 5 MiB to 5 GiB except the last, which may be smaller. Some S3-compatible
// stores allow fewer parts (1,000 is common); S3Config.MaxParts says how many the store takes.
const (
	MaxPartsLimit   = 10000
	MinPartSize     = 5 << 20
	MaxPartSize     = 5 << 30
	DefaultPartSize = 16 << 20
	partSizeUnit    = 1 << 20
)

// partLimits are the bounds a configured part size is checked against. Production stores use
// s3Limits; the package's own tests lower the minimum to exercise the 1,000-part refusal with
// small parts (a refused upload is aborted before completion, the only step that checks it).
type partLimits struct {
	minPartSize, maxPartSize int64
	maxParts                 int
}

var s3Limits = partLimits{minPartSize: MinPartSize, maxPartSize: MaxPartSize, maxParts: MaxPartsLimit}

// checkPartConfig validates a configured part size and count against the limits.
func (l partLimits) checkPartConfig(partSize int64, maxParts int) error {
	if maxParts < 1 || maxParts > l.maxParts {
		return fmt.Errorf("maxParts %d is outside 1..%d", maxParts, l.maxParts)
	}
	if partSize < l.minPartSize || partSize > l.maxPartSize {
		return fmt.Errorf("partSize %d is outside %d..%d bytes", partSize, l.minPartSize, l.maxPartSize)
	}
	return nil
}

// planPartSize returns the part size for an object of size bytes (-1 = unknown). An unknown size
// uses the configured part size, so a stream can reach at most maxParts × partSize bytes (Create
// refuses it with ErrTooLarge before writing past that). A known size that would need more than
// maxParts parts gets larger parts, rounded up to whole MiB, up to the store's largest part; a
// size even that cannot hold is ErrTooLarge before anything is written.
func (l partLimits) planPartSize(size, partSize int64, maxParts int) (int64, error) {
	if size < 0 {
		return partSize, nil
	}
	if size <= partSize*int64(maxParts) {
		return partSize, nil
	}
	need := (size + int64(maxParts) - 1) / int64(maxParts)
	need = (need + partSizeUnit - 1) / partSizeUnit * partSizeUnit
	if need > l.maxPartSize {
		return 0, fmt.Errorf("%w: %d bytes need parts of %d bytes with at most %d parts; the largest part is %d bytes",
			ErrTooLarge, size, need, maxParts, l.maxPartSize)
	}
	return need, nil
}
