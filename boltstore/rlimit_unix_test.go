//go:build unix

package boltstore

import (
	"os"
	"syscall"
)

// limitFileSize makes every write of this process that would grow a file
// past the size of the file at path fail (EFBIG), as on a full disk. Go
// ignores the SIGXFSZ that comes with it.
func limitFileSize(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	n := uint64(fi.Size())
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
}
