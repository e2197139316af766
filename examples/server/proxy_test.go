package main

import (
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// faultProxy is a TCP proxy between the server and PostgreSQL that the
// fault tests break on purpose: it can cut connections at random while they
// carry traffic, cut them all at once, or refuse every new one (an outage).
// Only connections through it are ever cut, so other sessions on the same
// PostgreSQL server are never touched.
type faultProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	refuse   atomic.Bool   // close new connections at once
	dropRate atomic.Uint64 // math.Float64bits of the chance that a chunk cuts its connection
	cuts     atomic.Int64  // connections cut on purpose

	mu    sync.Mutex
	pairs map[*proxyPair]struct{}
	wg    sync.WaitGroup
}

type proxyPair struct {
	client, upstream net.Conn
	once             sync.Once
}

func (p *proxyPair) close() {
	p.once.Do(func() {
		p.client.Close()
		p.upstream.Close()
	})
}

// startProxy listens on 127.0.0.1:0 and forwards to target (host:port)
// until the test ends.
func startProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, target: target, pairs: map[*proxyPair]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.CutAll()
		p.wg.Wait()
	})
	return p
}

// proxiedDSN returns dsn with its host and port replaced by the proxy's,
// and the proxy for it.
func proxiedDSN(t testing.TB, dsn string) (string, *faultProxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := startProxy(t, host)
	u.Host = p.ln.Addr().String()
	return u.String(), p
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refuse.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pair := &proxyPair{client: c, upstream: up}
		p.mu.Lock()
		p.pairs[pair] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(pair, up, c) })
		p.wg.Go(func() { p.pipe(pair, c, up) })
	}
}

// pipe copies from src to dst chunk by chunk; before forwarding a chunk it
// may cut the connection (at the drop rate), so that a cut can land
// anywhere: in a query, between a transaction's statements, in its COMMIT
// or in the COMMIT's answer.
func (p *faultProxy) pipe(pair *proxyPair, dst, src net.Conn) {
	defer func() {
		pair.close()
		p.mu.Lock()
		delete(p.pairs, pair)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if rate := p.rate(); rate > 0 && rand.Float64() < rate {
				p.cuts.Add(1)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, a reset, or a cut: the pair is closed either way
			return
		}
	}
}

func (p *faultProxy) rate() float64 {
	return math.Float64frombits(p.dropRate.Load())
}

// SetDropRate makes each forwarded chunk cut its connection with chance rate.
func (p *faultProxy) SetDropRate(rate float64) { p.dropRate.Store(math.Float64bits(rate)) }

// SetRefuse makes the proxy close every new connection at once (on) or
// forward again (off). Turning it on cuts every open connection too: the
// database is gone.
func (p *faultProxy) SetRefuse(on bool) {
	p.refuse.Store(on)
	if on {
		p.CutAll()
	}
}

// CutAll closes every connection through the proxy.
func (p *faultProxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pair := range p.pairs {
		pair.close()
		p.cuts.Add(1)
	}
}

// UpstreamPorts returns the local ports of the proxy's connections to
// PostgreSQL: pg_stat_activity shows them as client_port, which picks out
// this test's backends and no one else's.
func (p *faultProxy) UpstreamPorts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ports []int
	for pair := range p.pairs {
		if a, ok := pair.upstream.LocalAddr().(*net.TCPAddr); ok {
			ports = append(ports, a.Port)
		}
	}
	return ports
}

// Open returns how many connections the proxy carries now.
func (p *faultProxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

func portList(ports []int) string {
	s := ""
	for i, port := range ports {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(port)
	}
	return s
}
