package mockllm

import (
	"hash/maphash"
	"strconv"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// The prompt cache the mock models, after the providers' documented rules.
const (
	// cacheMinTokens is the shortest prefix a provider caches: 1024
	// tokens for Anthropic's Sonnet and Opus models and for OpenAI. A
	// breakpoint whose prefix is shorter writes nothing.
	cacheMinTokens = 1024
	// cacheLookback is how many blocks before a breakpoint the Anthropic
	// API checks for an entry an earlier request wrote ("about 20").
	cacheLookback = 20
	// cacheIncrement is OpenAI's granularity: past the first 1024 tokens
	// a hit counts in steps of 128 tokens.
	cacheIncrement = 128
	// cacheDefaultTTL is the lifetime of an entry: Anthropic's default
	// ttl, and the least OpenAI keeps an idle prefix.
	cacheDefaultTTL = 5 * time.Minute
	// cacheMaxEntries bounds one conversation's entries, so a long-lived
	// mock server does not grow without end; past it the entries closest
	// to expiring go first.
	cacheMaxEntries = 4096
)

// promptCache is one conversation's prompt cache. Entries are keyed by
// the hash of a whole prefix, so a hit means every byte before the point
// is the same as in the request that wrote it (one changed
// byte early in the prefix misses everything after it). Token counts use
// the mock's estimate (estimateTokens: four bytes a token) throughout, so
// input, cache read and cache write add up to what the mock reports for
// an uncached request.
type promptCache struct {
	entries map[uint64]cacheEntry
}

type cacheEntry struct {
	tokens  int64
	expires time.Time
}

// prefixes is a request cut at its block boundaries in the provider's
// prefix order (each tool, the system prompt, each message's blocks):
// hash[k] covers elements 0..k, tokens[k] is their estimated size.
type prefixes struct {
	hash   []uint64
	tokens []int64
	// msgStart[i] is the index of message i's first block.
	msgStart []int
	nTools   int
}

// cacheSeed seeds the prefix hashes. Entries live in this process only,
// so a per-process seed is enough, and maphash is several times faster
// than a byte-at-a-time hash over a long request.
var cacheSeed = maphash.MakeSeed()

func cutPrefixes(req *llm.Request) prefixes {
	var p prefixes
	var h maphash.Hash
	h.SetSeed(cacheSeed)
	bytes := 0
	add := func(n int, parts ...string) {
		for _, s := range parts {
			// The length first, so that no two splits of the same bytes
			// hash alike.
			maphash.WriteComparable(&h, len(s))
			h.WriteString(s)
		}
		bytes += n
		p.hash = append(p.hash, h.Sum64())
		p.tokens = append(p.tokens, int64(bytes/4))
	}
	// The sizes are estimateTokens' terms, element by element.
	for _, t := range req.Tools {
		add(len(t.Name)+len(t.Description)+len(t.Schema), "tool", t.Name, t.Description, string(t.Schema))
	}
	p.nTools = len(req.Tools)
	add(len(req.System), "system", req.System)
	for _, m := range req.Messages {
		p.msgStart = append(p.msgStart, len(p.hash))
		for _, b := range m.Content {
			add(8+len(b.Text)+len(b.Content)+len(b.Input)+len(b.PartialInput)+len(b.Name),
				string(m.Role), string(b.Type), b.Text, b.ID, b.Name, string(b.Input), b.PartialInput,
				b.ToolUseID, b.Content, strconv.FormatBool(b.IsError))
		}
	}
	return p
}

// at is the index of the element a breakpoint ends, or -1 when it names
// none.
func (p *prefixes) at(pt llm.CachePoint, req *llm.Request) int {
	switch pt.Part {
	case llm.CacheTools:
		if pt.Index >= 0 && pt.Index < p.nTools {
			return pt.Index
		}
	case llm.CacheSystem:
		return p.nTools
	case llm.CacheMessages:
		if pt.Index < 0 || pt.Index >= len(req.Messages) {
			return -1
		}
		n := len(req.Messages[pt.Index].Content)
		b := pt.Block
		if b < 0 {
			b = n - 1
		}
		if b >= 0 && b < n {
			return p.msgStart[pt.Index] + b
		}
	}
	return -1
}

// usage is the input side of the usage of req, given what earlier
// requests of the conversation wrote, and records what req writes. A
// request without Cache reads and writes nothing.
func (c *promptCache) usage(req *llm.Request, now time.Time) trajectory.Usage {
	total := estimateTokens(req)
	if req.Cache == nil {
		return trajectory.Usage{InputTokens: total}
	}
	if c.entries == nil {
		c.entries = map[uint64]cacheEntry{}
	}
	c.expire(now)
	p := cutPrefixes(req)
	var read, written int64
	if req.Cache.Automatic {
		read = c.automatic(&p, now)
	} else {
		read, written = c.breakpoints(&p, req, now)
	}
	return trajectory.Usage{InputTokens: max(total-read-written, 0), CacheReadTokens: read, CacheCreationTokens: written}
}

// breakpoints is Anthropic's cache: a request reads the longest prefix
// that an earlier request wrote at one of its breakpoints, found at or
// up to cacheLookback blocks before one of this request's breakpoints,
// and writes an entry at each of its own breakpoints.
func (c *promptCache) breakpoints(p *prefixes, req *llm.Request, now time.Time) (read, written int64) {
	ttl := cacheDefaultTTL
	if req.Cache.TTL == llm.CacheTTL1h {
		ttl = time.Hour
	}
	last := -1
	var ats []int
	for _, pt := range req.Cache.PointsFor(req) {
		k := p.at(pt, req)
		if k < 0 {
			continue
		}
		ats = append(ats, k)
		last = max(last, k)
		for j := k; j >= 0 && j > k-cacheLookback; j-- {
			if e, ok := c.entries[p.hash[j]]; ok {
				// A hit refreshes the entry's lifetime, as the API does.
				e.expires = now.Add(ttl)
				c.entries[p.hash[j]] = e
				read = max(read, e.tokens)
				break
			}
		}
	}
	if last < 0 || p.tokens[last] < cacheMinTokens {
		return read, 0
	}
	written = max(p.tokens[last]-read, 0)
	for _, k := range ats {
		if p.tokens[k] >= cacheMinTokens {
			c.put(p.hash[k], p.tokens[k], now.Add(ttl))
		}
	}
	return read, written
}

// automatic is OpenAI's cache: every prefix of 1024 tokens or more is
// cached without being asked, and a hit counts the longest prefix shared
// with an earlier request, rounded down to 1024 plus a multiple of 128.
// OpenAI reports no cache writes.
func (c *promptCache) automatic(p *prefixes, now time.Time) int64 {
	var match int64
	for k := len(p.hash) - 1; k >= 0; k-- {
		if e, ok := c.entries[p.hash[k]]; ok {
			match = e.tokens
			break
		}
	}
	for k := range p.hash {
		if p.tokens[k] >= cacheMinTokens {
			c.put(p.hash[k], p.tokens[k], now.Add(cacheDefaultTTL))
		}
	}
	if match < cacheMinTokens {
		return 0
	}
	return cacheMinTokens + (match-cacheMinTokens)/cacheIncrement*cacheIncrement
}

// put writes (or refreshes) an entry, evicting the entry closest to
// expiring when the conversation has cacheMaxEntries.
func (c *promptCache) put(h uint64, tokens int64, expires time.Time) {
	if _, ok := c.entries[h]; !ok && len(c.entries) >= cacheMaxEntries {
		var victim uint64
		var soonest time.Time
		for k, e := range c.entries {
			if soonest.IsZero() || e.expires.Before(soonest) {
				victim, soonest = k, e.expires
			}
		}
		delete(c.entries, victim)
	}
	c.entries[h] = cacheEntry{tokens: tokens, expires: expires}
}

// expire drops the entries whose lifetime has passed.
func (c *promptCache) expire(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}
