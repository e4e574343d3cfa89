package gateway

import (
	"cmp"
	"slices"

	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// ToolStatus is an upstream tool an operator should look at: listed and
// not approved (StateNew: awaiting review), or approved and not offered
// (StateChanged, StateMissing, StateUnusable: withdrawn until reviewed
// again).
type ToolStatus struct {
	Upstream string `json:"upstream"`
	// Tool is the upstream's name of the tool (its text, clipped);
	// Public the name it is offered as, for an approved one.
	Tool   string    `json:"tool"`
	Public string    `json:"public,omitempty"`
	State  ToolState `json:"state"`
	// Reason is why a withdrawn tool is not offered.
	Reason string `json:"reason,omitempty"`
}

// Status lists the tools awaiting review or withdrawn, as of each running
// upstream's last listing (an upstream not started yet has listed
// nothing), upstream by upstream, at most limits.DashboardMaxUpstreamTools.
// A tool withdrawn for one share key (a session's process) and offered
// for another is listed once, withdrawn.
func (g *Gateway) Status() []ToolStatus {
	var out []ToolStatus
	for _, name := range g.Upstreams() {
		u := g.ups[name]
		u.mu.Lock()
		conns := make([]*conn, 0, len(u.conns))
		for _, c := range u.conns {
			conns = append(conns, c)
		}
		u.mu.Unlock()
		seen := map[string]bool{}
		var mine []ToolStatus
		for _, c := range conns {
			c.mu.Lock()
			for tool, err := range c.statuses {
				if err != nil && !seen[tool] {
					seen[tool] = true
					mine = append(mine, ToolStatus{Upstream: name, Tool: tool, Public: u.approved[tool].Public, State: c.states[tool], Reason: err.Error()})
				}
			}
			for _, tool := range c.unapproved {
				if !seen[tool] {
					seen[tool] = true
					mine = append(mine, ToolStatus{Upstream: name, Tool: clip.N(tool, 200), State: StateNew})
				}
			}
			c.mu.Unlock()
		}
		slices.SortFunc(mine, func(a, b ToolStatus) int { return cmp.Compare(a.Tool, b.Tool) })
		out = append(out, mine...)
		if len(out) >= limits.DashboardMaxUpstreamTools {
			return out[:limits.DashboardMaxUpstreamTools]
		}
	}
	return out
}
