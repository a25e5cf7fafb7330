//go:build !unix

package boltstore

import "errors"

func limitFileSize(path string) error { return errors.New("no RLIMIT_FSIZE on this system") }
