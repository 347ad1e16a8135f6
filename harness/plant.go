package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
)

// The cache breakers a Plant can plant: the two ways a prompt cache is
// broken without any error.
const (
	// PlantToolsReordered sends the tool list in another order from
	// Plant.FromTurn on (the first two tools swapped), as MCP servers that
	// connect in a different order do.
	PlantToolsReordered = "tools_reordered"
	// PlantSystemTimestamp appends a time to the system prompt of every
	// request from Plant.FromTurn on, so the prompt changes every turn.
	PlantSystemTimestamp = "system_timestamp"
)

// CacheBreakers lists the cache breakers a Plant may name.
var CacheBreakers = []string{PlantToolsReordered, PlantSystemTimestamp}

// PlantTag is the session_start tag that records a session's Plant, so
// that a replay plants the same fault and reproduces the requests as they
// were sent.
const PlantTag = "eval_plant"

// Plant is a fault planted in the requests a session sends, to prove
// that what should see it does (an eval scenario's plant:): the runtime
// applies it before it records a request (agent.Config.Plant), so the
// trajectory shows the fault as sent.
type Plant struct {
	// CacheBreaker is PlantToolsReordered or PlantSystemTimestamp.
	CacheBreaker string
	// FromTurn is the first turn (from 1) whose request carries the fault.
	FromTurn int
}

// Apply changes the request of turn as the plant says. The timestamp is
// made from the turn, not the clock, so a run is reproducible (and a
// replay plants the same one) and still sends a different system prompt
// every turn.
func (pl Plant) Apply(turn int, req *llm.Request) {
	if turn < pl.FromTurn {
		return
	}
	switch pl.CacheBreaker {
	case PlantToolsReordered:
		if len(req.Tools) >= 2 {
			req.Tools = append([]llm.ToolDef{req.Tools[1], req.Tools[0]}, req.Tools[2:]...)
		}
	case PlantSystemTimestamp:
		req.System += fmt.Sprintf("\n\nCurrent time: 2026-12-02T09:%02d:00Z.", turn%60)
	}
}

// String is the plant as PlantTag records it: "tools_reordered@3".
func (pl Plant) String() string { return pl.CacheBreaker + "@" + strconv.Itoa(pl.FromTurn) }

// ParsePlant reads a Plant as String writes it.
func ParsePlant(s string) (Plant, error) {
	name, turn, ok := strings.Cut(s, "@")
	n, err := strconv.Atoi(turn)
	if !ok || err != nil || n < 1 || !slices.Contains(CacheBreakers, name) {
		return Plant{}, fmt.Errorf("plant %q: want CACHE_BREAKER@TURN with a cache breaker of %s and a turn from 1", s, strings.Join(CacheBreakers, ", "))
	}
	return Plant{CacheBreaker: name, FromTurn: n}, nil
}
