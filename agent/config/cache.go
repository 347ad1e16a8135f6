package config

import (
	"fmt"

	"github.com/retrace-dev/retrace/agent/llm"
)

// Cache configures prompt caching: whether each request
// carries cache breakpoints, and how long the provider keeps what they
// write. Caching is on unless a file turns it off.
//
//	cache:
//	  enabled: true   # the default
//	  ttl: 5m         # 5m (the default) or 1h
//
// The Anthropic provider sends the breakpoints (after the tools, after
// the system prompt and at the conversation's tail); the OpenAI APIs
// cache long prefixes by themselves and are unaffected.
type Cache struct {
	// Enabled turns caching on or off; unset means on.
	Enabled *bool `yaml:"enabled"`
	// TTL is the cache lifetime: "5m", "1h", or empty for the provider's
	// default (5m).
	TTL string `yaml:"ttl"`
}

// On reports whether caching is enabled.
func (c Cache) On() bool { return c.Enabled == nil || *c.Enabled }

// Request is the cache instruction each model request carries: nil when
// caching is off, else the default breakpoint placement with c's ttl.
func (c Cache) Request() *llm.Cache {
	if !c.On() {
		return nil
	}
	return &llm.Cache{TTL: c.TTL}
}

// check reports a ttl the providers do not offer.
func (c Cache) check() error {
	switch c.TTL {
	case "", llm.CacheTTL5m, llm.CacheTTL1h:
		return nil
	}
	return fmt.Errorf("cache.ttl %q: use %s or %s", c.TTL, llm.CacheTTL5m, llm.CacheTTL1h)
}

// ttlRank orders lifetimes, the empty default being the 5-minute one.
func ttlRank(ttl string) int {
	if ttl == llm.CacheTTL1h {
		return 1
	}
	return 0
}

// overlayCache layers a trusted file's cache settings over base's: each
// one it sets replaces base's.
func overlayCache(base, over Cache) Cache {
	if over.Enabled != nil {
		v := *over.Enabled
		base.Enabled = &v
	}
	if over.TTL != "" {
		base.TTL = over.TTL
	}
	return base
}

// restrictCache layers an untrusted file's cache settings: it may turn
// caching off and shorten the ttl, which only keeps less of the session
// at the provider, and may not turn it on or lengthen the ttl (a longer
// ttl keeps the prompt longer and costs more to write).
func restrictCache(base *Cache, w Cache, f File, refuse func(line int, field, value, why string)) {
	if w.Enabled != nil {
		switch {
		case !*w.Enabled:
			off := false
			base.Enabled = &off
		case !base.On():
			refuse(f.Line("cache", "enabled"), "cache.enabled", "true", "the trusted configuration turned caching off; an untrusted file may only turn it off")
		}
	}
	if w.TTL != "" {
		if err := w.check(); err != nil {
			refuse(f.Line("cache", "ttl"), "cache.ttl", w.TTL, "not a ttl the providers offer; use 5m or 1h")
			return
		}
		if ttlRank(w.TTL) <= ttlRank(base.TTL) {
			base.TTL = w.TTL
		} else {
			refuse(f.Line("cache", "ttl"), "cache.ttl", w.TTL, fmt.Sprintf("longer than the trusted %s; an untrusted file may only shorten it", cmpTTL(base.TTL)))
		}
	}
}

func cmpTTL(ttl string) string {
	if ttl == "" {
		return llm.CacheTTL5m
	}
	return ttl
}
