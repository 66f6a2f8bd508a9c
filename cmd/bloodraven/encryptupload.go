package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// runEncryptUpload is `bloodraven encrypt-upload`, the backup Job's step
// that stores the staged dump (pkg/backup/upload). Exit codes: 0 stored and
// verified, 1 failed (the reason on stderr), 2 a bad command line.
func runEncryptUpload(argv []string) int {
	a, err := upload.Parse(argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "encrypt-upload:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := upload.Run(ctx, a, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "encrypt-upload: failed:", err)
		return 1
	}
	return 0
}
