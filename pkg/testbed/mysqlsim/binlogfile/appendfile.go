package binlogfile

import "os"

// appendFile is the file a log is appending to, with what was appended but
// not yet written: the binary log and the relay log both write in two steps
// (write(2) on Flush, fsync on Sync), as their durability settings decide.
type appendFile struct {
	cur  *os.File
	size int64  // bytes of the current file written to the OS
	buf  []byte // appended, not yet written
}

// Flush writes the buffer to the current file (write(2), no fsync).
func (a *appendFile) Flush() error {
	if len(a.buf) == 0 || a.cur == nil {
		return nil
	}
	n, err := a.cur.Write(a.buf)
	a.size += int64(n)
	a.buf = a.buf[n:]
	return err
}

// Sync flushes and fsyncs the current file.
func (a *appendFile) Sync() error {
	if err := a.Flush(); err != nil {
		return err
	}
	if a.cur == nil {
		return nil
	}
	return a.cur.Sync()
}
