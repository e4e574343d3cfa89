// Command netload serves the net group's side-by-side benchmarks:
//
//	netload serve -dir D -size N   an HTTPS server on loopback serving N
//	                               bytes at /body, with a fresh CA (D/ca.pem),
//	                               a policy that reaches it (D/http.json) and
//	                               its URL (D/url); runs until killed
//	netload budget -store S -clients 8 -seconds T
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/capkit/capkit/net/budget"
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
	for name, data := range map[string]string{"ca.pem": string(caPEM), "http.json": policy, "url": fmt.Sprintf("https://127.0.0.1:%d/body\n", port)} {
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

// certificate makes a CA and a leaf for 127.0.0.1 signed by it.
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
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
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
	seconds := fs.Float64("seconds", 5, "seconds per measurement")
	fs.Parse(args)
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
	b, err := budget.Open(ctx, loc, &budget.Policy{Format: 1, Group: "bench", WindowSeconds: 3600,
		WindowRequests: 1 << 40, WindowBytes: 1 << 50}, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	d := time.Duration(*seconds * float64(time.Second))
	var seq atomic.Int64
	bareRate, err := measure(*clients, d, func(int) error {
		_, err := bare.ExecContext(ctx, rebind(loc, "INSERT INTO bare (id, v) VALUES (?, ?)"), seq.Add(1), time.Now().UnixNano())
		return err
	})
	if err != nil {
		return err
	}
	pairRate, err := measure(*clients, d, func(c int) error {
		r, err := b.Reserve(ctx, fmt.Sprintf("client-%d", c), 1000)
		if err != nil {
			return err
		}
		return b.Settle(ctx, r.ID, 500, budget.Outcome{Status: 200})
	})
	if err != nil {
		return err
	}
	kind := "sqlite"
	if budget.IsPostgres(loc) {
		kind = "postgres"
	}
	fmt.Printf("%s clients=%d bare_tx_per_s=%.0f reserve_settle_per_s=%.0f ratio_pairs=%.2f ratio_tx=%.2f\n",
		kind, *clients, bareRate, pairRate, pairRate/bareRate, 2*pairRate/bareRate)
	return nil
}

// measure runs op on clients goroutines for d and returns operations per
// second.
func measure(clients int, d time.Duration, op func(client int) error) (float64, error) {
	var n atomic.Int64
	var first error
	var once sync.Once
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
	return float64(n.Load()) / time.Since(start).Seconds(), first
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
