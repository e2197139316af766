package sqlite

import (
	"os"
	"strconv"
	"sync"
	"time"
)

// SQLite's write lock is not fair. A server under write load releases it
// only for moments between two group commits, and another process waiting
// for it polls with growing sleeps (up to 100 ms), so an admin command
// beside a busy server (revoking a leaked key, say) could wait for seconds
// or fail with "database is busy". A store opened WithPriorityWrites says,
// while it opens and from its first write until it closes, that it wants
// the lock: it keeps a file beside the database ("<db>-priority"), and the
// committers of other stores on the database wait before their next
// transaction while the file is fresh, so that the waiting process gets the
// lock at its next poll. A store that only reads (an audit, say) holds
// nobody back.

// priorityStale is how old (since it was last refreshed) a priority file may
// be before it is ignored: a process that died holding one delays the
// others' writes by this much at most.
const priorityStale = 3 * time.Second

// priorityRefresh is how often a priority store refreshes its file.
const priorityRefresh = time.Second

// WithPriorityWrites marks the store as a short-lived administrator of a
// database that a server may be using heavily: while it opens, and from its
// first write until it closes, the writes of other stores on the same
// database (in any process) pause between their transactions, so that this
// store's writes get the lock without waiting for a gap. Write, and Close
// it promptly: the others wait meanwhile.
func WithPriorityWrites() Option {
	return func(c *config) { c.priority = true }
}

// priorityFile is the file of a SQLite database's priority writer.
func priorityFile(dbPath string) string { return dbPath + "-priority" }

// priorityClaim is a priority store's hold on its file.
type priorityClaim struct {
	path string
	stop chan struct{}
	done sync.WaitGroup
}

// claimPriority writes the priority file and keeps it fresh until release.
func claimPriority(path string) (*priorityClaim, error) {
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	c := &priorityClaim{path: path, stop: make(chan struct{})}
	c.done.Go(func() {
		t := time.NewTicker(priorityRefresh)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case now := <-t.C:
				_ = os.Chtimes(path, now, now)
			}
		}
	})
	return c, nil
}

func (c *priorityClaim) release() {
	close(c.stop)
	c.done.Wait()
	_ = os.Remove(c.path)
}

// waitForPriority returns once no other store holds a fresh priority claim
// on the database: at once, after one stat, when none does.
func (d *db) waitForPriority() {
	if d.priorityPath == "" || d.priorityWriter {
		return
	}
	for {
		fi, err := os.Stat(d.priorityPath)
		if err != nil || time.Since(fi.ModTime()) > priorityStale {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// claimWrite claims the lock's next turn for a priority store about to
// write, from its first write until it closes (a store with no claim file,
// or none that can be written, waits for a gap as any other would).
func (d *db) claimWrite() {
	if !d.priorityWriter || d.priorityPath == "" {
		return
	}
	d.priorityMu.Lock()
	defer d.priorityMu.Unlock()
	if d.priority != nil || d.closing {
		return
	}
	if c, err := claimPriority(d.priorityPath); err == nil {
		d.priority = c
	}
}
