package upload

import (
	"strconv"

	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// AttemptDir is the key prefix, relative to the store's root (the profile's
// prefix or the claim's mount), of one attempt of one backup:
// <backupName>-<backupUID>/<attempt>/. The UID keeps a recreated backup of
// the same name apart; the attempt keeps a retry apart from its own partial
// output. The dump's files keep mysqlsh's names in it, so the location is a
// dump directory as mysqlsh wrote it, plus the stamp.
func AttemptDir(backupName, backupUID string, attempt int) string {
	return backupName + "-" + backupUID + "/" + strconv.Itoa(attempt) + "/"
}

// StampKey is the key of an attempt's backup stamp (stamp.Name, which no
// dump file can be named).
func StampKey(backupName, backupUID string, attempt int) string {
	return AttemptDir(backupName, backupUID, attempt) + stamp.Name
}

// DumpKey is the key of one dump file, named as in the dump directory.
func DumpKey(backupName, backupUID string, attempt int, file string) string {
	return AttemptDir(backupName, backupUID, attempt) + file
}

func (a Args) attemptDir() string      { return AttemptDir(a.BackupName, a.BackupUID, a.Attempt) }
func (a Args) stampKey() string        { return StampKey(a.BackupName, a.BackupUID, a.Attempt) }
func (a Args) dumpKey(f string) string { return DumpKey(a.BackupName, a.BackupUID, a.Attempt, f) }
