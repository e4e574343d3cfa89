package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/audit/pgstore"
	"github.com/capkit/capkit/audit/trail"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/httpguard"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/dashboard"
)

func newDashboardCmd(env *Env) *cobra.Command {
	var df dashFlags
	var files []string
	var store string
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the audit page over a trail file or the shared store, after the fact",
		Long: `dashboard serves the audit page (docs/observability.md) over a trail that
capkit wrote: the hash-chained files of audit_log (--audit FILE[,FILE...],
rotated files first, read as one chain and followed as they grow), or the
PostgreSQL store of audit_store (--audit-store postgres://...). The page
shows the calls newest first, live as they arrive, with their actor, tool,
outcome, the policy that refused a denial or a limit, bytes and duration;
counts, error rates and latency percentiles per tool and per actor; and
the chain's state. It never shows an argument's value: the trail does not
hold one.

The page binds loopback addresses only, unless --token-file names a file
(mode 600) holding a token every request must carry (as
"Authorization: Bearer TOKEN", or opened once as /?token=TOKEN, which
keeps it in a cookie and drops it from the address). It is read-only.

Examples:
  capkit dashboard --audit /var/log/capkit/audit.jsonl --listen 127.0.0.1:8940
  capkit dashboard --audit-store postgres://capkit@db/audit --listen 0.0.0.0:8940 --token-file ~/.capkit-dash-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (len(files) == 0) == (store == "") {
				return fault.New(fault.InvalidInput, "give --audit FILE[,FILE...] or --audit-store URL (one of them)")
			}
			if df.addr == "" {
				return fault.New(fault.InvalidInput, "--listen HOST:PORT is required, e.g. 127.0.0.1:8940")
			}
			token, err := df.check("--listen")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var src audit.Source
			describe := ""
			if store != "" {
				if src, err = pgstore.OpenReader(ctx, store); err != nil {
					return err
				}
				describe = "the audit store"
			} else {
				if src, err = trail.OpenReader(ctx, files, nil); err != nil {
					return err
				}
				describe = "trail " + strings.Join(files, ", ")
			}
			defer src.Close()
			return stopped(ctx, df.serve(ctx, env, src, token, &dashboard.Options{Describe: describe}, nil))
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&files, "audit", nil, "trail files (audit_log and the rotated ones before it, oldest first; comma-separated or repeated)")
	f.StringVar(&store, "audit-store", "", "the audit store's URL (postgres://...), as audit_store")
	f.StringVar(&df.addr, "listen", "", "serve the page on HOST:PORT (port 0 picks a free one)")
	f.StringVar(&df.tokenFile, "token-file", "", "a file (mode 600) holding the token every request must carry; required beyond loopback")
	return cmd
}

// dashFlags are where the page is served and the file of its token.
type dashFlags struct {
	addr, tokenFile string
}

// check reads the token file, if any, and refuses an address that is not
// loopback without one; flag names the address's flag for messages.
func (df *dashFlags) check(flag string) (string, error) {
	var token string
	if df.tokenFile != "" {
		var err error
		if token, err = readToken(df.tokenFile); err != nil {
			return "", err
		}
	}
	if _, _, err := net.SplitHostPort(df.addr); err != nil {
		return "", fault.New(fault.InvalidInput, "%s %s: want HOST:PORT, e.g. 127.0.0.1:8940", flag, df.addr)
	}
	return token, dashboard.CheckAddress(df.addr, token != "")
}

// serve serves the page over src on df.addr until ctx ends, telling its
// address on standard error.
// serving, when not nil, is called once it serves.
func (df *dashFlags) serve(ctx context.Context, env *Env, src audit.Source, token string, opts *dashboard.Options, serving func()) error {
	host, _, _ := net.SplitHostPort(df.addr)
	opts.Token = token
	if host != "" && net.ParseIP(host) == nil && !httpguard.IsLoopbackHost(host) {
		opts.AllowedHosts = append(opts.AllowedHosts, host)
	}
	d, err := dashboard.New(src, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", df.addr)
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot listen on %s", df.addr)
	}
	return d.Serve(ctx, ln, func(addr net.Addr) {
		name := host
		port := ""
		if tcp, ok := addr.(*net.TCPAddr); ok {
			if name == "" {
				name = tcp.IP.String()
			}
			port = strconv.Itoa(tcp.Port)
		}
		how := ""
		if token != "" {
			how = " (open it once as /?token=TOKEN, the token of " + df.tokenFile + ")"
		}
		fmt.Fprintf(env.Stderr, "capkit: dashboard on http://%s/%s\n", net.JoinHostPort(name, port), how)
		if serving != nil {
			serving()
		}
	})
}

// recentHint says where serve's chained trail is, for the page over its
// events in memory (which are not chained).
func recentHint(auditLog string) string {
	if auditLog == "" {
		return "set audit_log for a hash-chained trail"
	}
	return "the chained trail is " + auditLog + ": read it with capkit dashboard --audit " + auditLog
}

// recentDescribe says what serve's page reads.
func recentDescribe() string {
	return "this server's newest " + limits.Count(limits.DashboardRingEvents) + " events, in memory"
}
