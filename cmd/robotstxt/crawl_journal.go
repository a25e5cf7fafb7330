package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/frontier"
)

// A crawl's journal, beside the state file, is what lets an interrupted
// crawl resume: a text file to which the crawl appends a line for each URL
// it queues and each URL it visits, so that it is whole after any exit, a
// kill included (a line cut short by a kill, the last, is dropped). Its
// name is the state file's, with ".crawl-" and a hash of the product token
// and the start URLs: the same command finds it again, another crawl has
// its own. It is removed when the crawl runs to its end.
//
//	robotstxt crawl journal 1
//	agent TOKEN
//	start URL            (each start URL of the command line, sorted)
//	+ URL                queued
//	- URL                visited
//	s N URL              a start URL reached through N-1 redirects to another origin
const journalHeader = "robotstxt crawl journal 1"

// journal appends to a crawl's journal. Its methods are called with
// crawler.mu held.
type journal struct {
	path string
	f    *os.File
	err  error // the first write error: the journal is not written after it
}

// resume is what a journal holds of the runs before.
type resume struct {
	seen    map[string]bool
	queued  []string       // seen and not visited, in the order queued
	starts  map[string]int // the start URLs reached by redirects
	visited int
	at      time.Time // when the journal was last written
}

// errJournal is matched by the errors of a journal that cannot be used.
var errJournal = errors.New("crawl journal unusable")

// journalPath returns the journal of the crawl of agent from starts, kept
// beside the state file statePath.
func journalPath(statePath, agent string, starts []string) string {
	h := sha256.New()
	io.WriteString(h, agent)
	for _, s := range slices.Sorted(slices.Values(starts)) {
		io.WriteString(h, "\n"+s)
	}
	return statePath + ".crawl-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// openJournal opens the journal at path of the crawl of agent from starts,
// creating it if it does not exist, and returns what it holds of the runs
// before (nil if none). A journal of another format, of another crawl or
// damaged is an error that says what to do.
func openJournal(path, agent string, starts []string) (*journal, *resume, error) {
	head := journalHeader + "\nagent " + agent + "\n"
	for _, s := range slices.Sorted(slices.Values(starts)) {
		head += "start " + s + "\n"
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errJournal, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %v", errJournal, err)
	}
	j := &journal{path: path, f: f}
	if fi.Size() == 0 {
		if _, err := f.WriteString(head); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%w: writing %s: %v", errJournal, path, err)
		}
		return j, nil, nil
	}
	r, end, err := readJournal(f, head)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s %v; delete it to start the crawl over", errJournal, path, err)
	}
	r.at = fi.ModTime()
	// Drop a last line cut short, so that the next line starts afresh.
	if end < fi.Size() {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%w: %v", errJournal, err)
		}
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %v", errJournal, err)
	}
	return j, r, nil
}

// readJournal reads a journal whose first lines must be head. It returns
// what it holds and the offset after its last whole line.
func readJournal(f *os.File, head string) (*resume, int64, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	got := make([]byte, 0, len(head))
	for len(got) < len(head) {
		line, err := br.ReadSlice('\n')
		got = append(got, line...)
		if err != nil {
			break
		}
	}
	if string(got) != head {
		first, _, _ := strings.Cut(string(got), "\n")
		if first != journalHeader {
			if strings.HasPrefix(first, "robotstxt crawl journal ") {
				return nil, 0, errors.New("was written by another version of robotstxt")
			}
			return nil, 0, errors.New("is not a crawl journal, or is damaged")
		}
		return nil, 0, errors.New("is the journal of another crawl (its agent or start URLs differ)")
	}
	r := &resume{seen: make(map[string]bool), starts: make(map[string]int)}
	visited := make(map[string]bool)
	var order []string
	end := int64(len(head))
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, 0, fmt.Errorf("has a line too long after byte %d", end)
		}
		if err != nil {
			break // io.EOF: a last line without its newline was cut short
		}
		end += int64(len(line))
		l := string(bytes.TrimSuffix(line, []byte("\n")))
		kind, u, ok := strings.Cut(l, " ")
		if !ok || u == "" || len(u) > frontier.MaxURLLen {
			return nil, 0, fmt.Errorf("is damaged after byte %d", end-int64(len(line)))
		}
		switch kind {
		case "+":
			if !r.seen[u] {
				r.seen[u] = true
				order = append(order, u)
			}
		case "-":
			if !visited[u] {
				visited[u] = true
				r.visited++
			}
		case "s":
			hops, rest, ok := strings.Cut(u, " ")
			h, err := strconv.Atoi(hops)
			if !ok || err != nil || h < 1 {
				return nil, 0, fmt.Errorf("is damaged after byte %d", end-int64(len(line)))
			}
			r.starts[rest] = h
		default:
			return nil, 0, fmt.Errorf("is damaged after byte %d", end-int64(len(line)))
		}
	}
	for _, u := range order {
		if !visited[u] {
			r.queued = append(r.queued, u)
		}
	}
	return r, end, nil
}

// add appends a line of kind ("+", "-" or "s N") for u. It returns the
// first write error, then and after.
func (j *journal) add(kind, u string) error {
	if j == nil {
		return nil
	}
	if j.err == nil {
		if _, err := j.f.WriteString(kind + " " + u + "\n"); err != nil {
			j.err = fmt.Errorf("writing %s: %w", j.path, err)
		}
	}
	return j.err
}

// close closes the journal, synced to the disk, and removes it if keep is
// false.
func (j *journal) close(keep bool) error {
	if j == nil {
		return nil
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	if !keep {
		if rerr := os.Remove(j.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	return err
}

// failure returns the journal's first write error, or nil.
func (j *journal) failure() error {
	if j == nil {
		return nil
	}
	return j.err
}

// otherJournals describes the journals beside the state file statePath
// other than mine: unfinished crawls of other start URLs (or agents), which
// their own command resumes.
func otherJournals(statePath, mine string) []string {
	names, _ := filepath.Glob(statePath + ".crawl-*")
	var out []string
	for _, name := range names {
		if name == mine || len(out) == 5 {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		head := make([]byte, 16<<10)
		n, _ := io.ReadFull(f, head)
		f.Close()
		lines := strings.Split(string(head[:n]), "\n")
		if len(lines) < 3 || lines[0] != journalHeader || !strings.HasPrefix(lines[1], "agent ") {
			continue
		}
		var starts []string
		for _, l := range lines[2 : len(lines)-1] {
			s, ok := strings.CutPrefix(l, "start ")
			if !ok {
				break
			}
			starts = append(starts, s)
		}
		out = append(out, fmt.Sprintf("an unfinished crawl of %s as %s is kept in %s: \"robotstxt crawl -agent %s %s\" resumes it; delete the file to drop it",
			strings.Join(starts, ", "), lines[1][len("agent "):], name, lines[1][len("agent "):], strings.Join(starts, " ")))
	}
	return out
}
