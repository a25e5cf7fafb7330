package main

import (
	"github.com/f9014239/robots"
	"github.com/f9014239/robots/boltstore"
)

// The errors of openStore that stateError explains.
var (
	errLocked  = boltstore.ErrLocked
	errCorrupt = boltstore.ErrCorrupt
)

// stateStore is the state file of a crawl: a boltstore, which keeps the
// robots.txt cache and the paces, pauses and back-offs of the origins.
type stateStore struct{ st *boltstore.Store }

// openStore opens the state file at path, creating it if it does not
// exist; within a second, with an error matching errLocked, if another
// process has it.
func openStore(path string) (*stateStore, error) {
	st, err := boltstore.Open(path)
	if err != nil {
		return nil, err
	}
	return &stateStore{st}, nil
}

// use makes tr keep its robots.txt cache and its paces in s.
func (s *stateStore) use(tr *robots.Transport) { tr.Store, tr.Pacer = s.st, s.st }

// Close writes what is not written yet and closes the file.
func (s *stateStore) Close() error { return s.st.Close() }
