package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/agent/llm"
)

// The cache breakers a scenario can plant (Plant.CacheBreaker): the two
// ways seed §3.5 says a prompt cache is broken without any error.
const (
	// PlantToolsReordered sends the tool list in another order from
	// Plant.FromTurn on (the first two tools swapped), as MCP servers that
	// connect in a different order do.
	PlantToolsReordered = "tools_reordered"
	// PlantSystemTimestamp appends the current time to the system prompt
	// of every request from Plant.FromTurn on, so the prompt changes every
	// turn.
	PlantSystemTimestamp = "system_timestamp"
)

var cacheBreakers = []string{PlantToolsReordered, PlantSystemTimestamp}

// Plant is a fault a scenario plants in the requests the runtime sends,
// to prove that what should see it does: the runtime applies it before it
// records a request (agent.Config.Plant), so the trajectory shows the
// fault as sent.
//
//	plant: {cache_breaker: tools_reordered, from_turn: 3}
type Plant struct {
	// CacheBreaker is PlantToolsReordered or PlantSystemTimestamp.
	CacheBreaker string
	// FromTurn is the first turn (from 1) whose request carries the fault.
	FromTurn int
}

// apply changes the request of turn as the plant says. The timestamp is
// made from the turn, not the clock, so a run is reproducible and still
// sends a different system prompt every turn.
func (pl *Plant) apply(turn int, req *llm.Request) {
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

func (p *parser) plant(s *Scenario, n *yaml.Node) {
	pl := &Plant{FromTurn: 1}
	for _, f := range p.fields(n, "plant", "cache_breaker", "from_turn") {
		switch f.name {
		case "cache_breaker":
			pl.CacheBreaker = p.str(f.val, "plant.cache_breaker")
			if !slices.Contains(cacheBreakers, pl.CacheBreaker) {
				p.at(f.val, "plant.cache_breaker %q: want one of %s", pl.CacheBreaker, strings.Join(cacheBreakers, ", "))
			}
		case "from_turn":
			if pl.FromTurn = p.integer(f.val, "plant.from_turn"); pl.FromTurn < 1 {
				p.at(f.val, "plant.from_turn must be at least 1")
			}
		}
	}
	if pl.CacheBreaker == "" {
		p.at(n, "plant needs cache_breaker: one of %s", strings.Join(cacheBreakers, ", "))
	}
	s.Plant = pl
}
