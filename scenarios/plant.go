package scenarios

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/harness"
)

// The cache breakers a scenario can plant (see harness.Plant).
const (
	PlantToolsReordered  = harness.PlantToolsReordered
	PlantSystemTimestamp = harness.PlantSystemTimestamp
)

var cacheBreakers = harness.CacheBreakers

// Plant is a fault a scenario plants in the requests the runtime sends
// (harness.Plant), recorded in session_start's tags so that a replay
// plants it again:
//
//	plant: {cache_breaker: tools_reordered, from_turn: 3}
type Plant = harness.Plant

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
