// Command netload serves the net group's side-by-side benchmarks:
//
//	netload serve -dir D -size N   an HTTPS server on loopback serving N
//	                               bytes at /body, with a fresh CA (D/ca.pem),
//	                               a policy that reaches it (D/http.json) and
//	                               its URL (D/url); as localhost too, for
//	                               contained commands through capkit's proxy
//	                               (D/run-policy.json, D/url-name); runs
//	                               until killed
//	netload proxy -policy P -addr F
//	                               capkit's policy proxy (net/egress) for
//	                               policy P on a loopback port of the host,
//	                               its address written to F (no container:
//	                               the proxy's own cost); runs until killed
//	netload budget -store S -clients 8 -seconds T -rounds R
//	                               reserve+settle vs bare durable
//	                               insert+commit on S: a budget root
//	                               directory, or the postgres:// URL of a
//	                               server's "postgres" database, where it
//	                               makes fresh databases netload_budget and
//	                               netload_bare
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/net/fetch"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netload serve|budget ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "budget":
		err = budgetBench(os.Args[2:])
	case "proxy":
		err = proxy(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netload:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "directory for ca.pem, http.json and url")
	size := fs.Int("size", 100<<20, "body bytes")
	fs.Parse(args)
	cert, caPEM, err := certificate()
	if err != nil {
		return err
	}
	body := make([]byte, *size)
	rand.Read(body)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	policy := fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.1/32"], "ca_file": "ca.pem"}`, port)
	runPolicy := fmt.Sprintf(`{"format": 1, "hosts": ["localhost"], "ports": [%d], "private_destinations": ["127.0.0.1/32"]}`, port)
	for name, data := range map[string]string{"ca.pem": string(caPEM), "http.json": policy, "url": fmt.Sprintf("https://127.0.0.1:%d/body\n", port),
		"run-policy.json": runPolicy, "url-name": fmt.Sprintf("https://localhost:%d/body\n", port)} {
		if err := os.WriteFile(filepath.Join(*dir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.Write(body)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
	}
	return srv.ServeTLS(ln, "", "")
}

func proxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	policy := fs.String("policy", "", "HTTP policy file")
	addr := fs.String("addr", "", "file the proxy's address is written to")
	fs.Parse(args)
	p, err := fetch.LoadPolicy(context.Background(), *policy)
	if err != nil {
		return err
	}
	px, err := egress.New(p, nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*addr, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	px.Serve(context.Background(), ln)
	return nil
}

// certificate makes a CA and a leaf for 127.0.0.1 and localhost signed
// by it.
func certificate() (tls.Certificate, []byte, error) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netload CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func budgetBench(args []string) error {
	fs := flag.NewFlagSet("budget", flag.ExitOnError)
	store := fs.String("store", "", `budget root directory, or postgres:// URL of a server's "postgres" database`)
	clients := fs.Int("clients", 8, "concurrent clients")
	seconds := fs.Float64("seconds", 5, "seconds of measurement per side, in all")
	rounds := fs.Int("rounds", 8, "slices the seconds are cut into, the sides alternating")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	reserveOnly := fs.Bool("reserve-only", false, "measure reservations without settlements (to see where the time goes)")
	only := fs.String("only", "", "measure one side only, pairs or bare (to profile it)")
	fs.Parse(args)
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	loc, bareLoc, err := locators(ctx, *store)
	if err != nil {
		return err
	}
	bare, err := openBare(ctx, loc, bareLoc)
	if err != nil {
		return err
	}
	defer bare.Close()
	if budget.IsPostgres(loc) {
		// Keep the clients' connections open between transactions, as
		// the budget store does.
		bare.SetMaxIdleConns(*clients)
	}
	b, err := budget.Open(ctx, loc, &budget.Policy{Format: 1, Group: "bench", WindowSeconds: 3600,
		WindowRequests: 1 << 40, WindowBytes: 1 << 50}, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	d := time.Duration(*seconds * float64(time.Second) / float64(max(*rounds, 1)))
	var seq atomic.Int64
	bareOp := func(int) error {
		_, err := bare.ExecContext(ctx, rebind(loc, "INSERT INTO bare (id, v) VALUES (?, ?)"), seq.Add(1), time.Now().UnixNano())
		return err
	}
	pairOp := func(c int) error {
		r, err := b.Reserve(ctx, fmt.Sprintf("client-%d", c), 1000)
		if err != nil {
			return err
		}
		if *reserveOnly {
			return nil
		}
		return b.Settle(ctx, r.ID, 500, budget.Outcome{Status: 200})
	}
	// Short rounds, alternating which side goes first, so that a change
	// in the machine's load falls on both.
	var bareTotal, pairTotal result
	var ratios []float64
	for i := range *rounds {
		var br, pr result
		switch {
		case *only == "pairs":
			pr, err = measure(*clients, d, pairOp)
			br = pr
		case *only == "bare":
			br, err = measure(*clients, d, bareOp)
			pr = br
		case i%2 == 0:
			br, err = measure(*clients, d, bareOp)
			if err == nil {
				pr, err = measure(*clients, d, pairOp)
			}
		default:
			pr, err = measure(*clients, d, pairOp)
			if err == nil {
				br, err = measure(*clients, d, bareOp)
			}
		}
		if err != nil {
			return err
		}
		bareTotal.add(br)
		pairTotal.add(pr)
		ratios = append(ratios, pr.rate()/br.rate())
	}
	if err := b.Flush(ctx); err != nil {
		return err
	}
	slices.Sort(ratios)
	kind := "sqlite"
	if budget.IsPostgres(loc) {
		kind = "postgres"
	}
	fmt.Printf("%s clients=%d rounds=%d bare_tx_per_s=%.0f reserve_settle_per_s=%.0f ratio_pairs=%.2f ratio_tx=%.2f median_round_ratio_pairs=%.2f cpu_us_bare_tx=%.0f cpu_us_pair=%.0f\n",
		kind, *clients, *rounds, bareTotal.rate(), pairTotal.rate(), pairTotal.rate()/bareTotal.rate(), 2*pairTotal.rate()/bareTotal.rate(),
		ratios[len(ratios)/2], bareTotal.cpuPerOp(), pairTotal.cpuPerOp())
	return nil
}

// result is a measurement: operations, wall time, and the CPU time of
// this process and of the local PostgreSQL server's processes.
type result struct {
	n         int64
	wall, cpu time.Duration
}

func (r *result) add(o result) { r.n, r.wall, r.cpu = r.n+o.n, r.wall+o.wall, r.cpu+o.cpu }
func (r result) rate() float64 { return float64(r.n) / r.wall.Seconds() }
func (r result) cpuPerOp() float64 {
	return float64(r.cpu.Microseconds()) / float64(max(r.n, 1))
}

// cpuTime is the CPU time used so far by this process and by every
// process named postgres (a server on another machine counts nothing).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		s := string(data)
		if err != nil || !strings.Contains(s, "(postgres)") {
			continue
		}
		f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		t += time.Duration(u+k) * 10 * time.Millisecond // clock ticks (USER_HZ 100)
	}
	return t
}

// measure runs op on clients goroutines for d.
func measure(clients int, d time.Duration, op func(client int) error) (result, error) {
	var n atomic.Int64
	var first error
	var once sync.Once
	c0 := cpuTime()
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := op(c); err != nil {
					once.Do(func() { first = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return result{n: n.Load(), wall: time.Since(start), cpu: cpuTime() - c0}, first
}

// locators returns where the budget and the bare inserts go: the root
// directory and a database file inside it with the budget's durability
// settings, or two fresh PostgreSQL databases.
func locators(ctx context.Context, store string) (string, string, error) {
	if !budget.IsPostgres(store) {
		if err := os.MkdirAll(store, 0o700); err != nil {
			return "", "", err
		}
		return store, filepath.Join(store, "bare.db"), nil
	}
	admin, err := sql.Open("pgx", store)
	if err != nil {
		return "", "", err
	}
	defer admin.Close()
	for _, db := range []string{"netload_budget", "netload_bare"} {
		for _, q := range []string{"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db} {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				return "", "", err
			}
		}
	}
	u, err := url.Parse(store)
	if err != nil {
		return "", "", err
	}
	u.Path = "/netload_budget"
	b := u.String()
	u.Path = "/netload_bare"
	return b, u.String(), nil
}

func openBare(ctx context.Context, loc, bareLoc string) (*sql.DB, error) {
	var db *sql.DB
	var err error
	if budget.IsPostgres(loc) {
		db, err = sql.Open("pgx", bareLoc)
	} else {
		// The budget store's settings: WAL, synchronous=FULL, one
		// connection, immediate transactions.
		db, err = sql.Open("sqlite", "file:"+bareLoc+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(30000)&_txlock=immediate")
		if err == nil {
			db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS bare (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func rebind(loc, q string) string {
	if budget.IsPostgres(loc) {
		return strings.Replace(strings.Replace(q, "?", "$1", 1), "?", "$2", 1)
	}
	return q
}
