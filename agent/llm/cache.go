package llm

import "fmt"

// MaxCachePoints is how many cache breakpoints the Anthropic Messages API
// takes in one request; a request with more is rejected.
const MaxCachePoints = 4

// The cache lifetimes the Anthropic API offers; "" means CacheTTL5m.
const (
	CacheTTL5m = "5m"
	CacheTTL1h = "1h"
)

// Cache asks the provider to cache the request's prefix. The
// Anthropic provider turns it into cache_control breakpoints; the OpenAI
// APIs cache every long prefix on their own and ignore it; mockllm reads
// it to report cache reads honestly.
type Cache struct {
	// TTL is how long a written entry lives: CacheTTL5m (the default
	// when empty) or CacheTTL1h.
	TTL string
	// Points are the breakpoints, in prefix order. Nil means the default
	// placement (DefaultCachePoints); mockllm's wire decoder sets them to
	// the breakpoints a request actually carried.
	Points []CachePoint
	// Automatic means the provider caches every prefix by itself, without
	// breakpoints, as the OpenAI APIs do; mockllm's OpenAI decoders set it.
	Automatic bool
}

// CachePart is the part of a request a cache breakpoint ends in. The
// API's prefix runs tools, then system, then messages, so a breakpoint
// caches everything before it in that order.
type CachePart string

// The parts of a request a breakpoint can end.
const (
	CacheTools    CachePart = "tools"
	CacheSystem   CachePart = "system"
	CacheMessages CachePart = "messages"
)

// CachePoint is one cache breakpoint: the prefix up to and including the
// element it names is written to the cache, and read from it when an
// earlier request wrote the same bytes.
type CachePoint struct {
	Part CachePart
	// Index is the tool's index for CacheTools and the message's index
	// for CacheMessages; 0 for CacheSystem.
	Index int
	// Block is the content block's index in message Index (CacheMessages
	// only); -1 means the message's last block that goes on the wire.
	Block int
}

// String names the point the way an error message should.
func (p CachePoint) String() string {
	switch p.Part {
	case CacheTools:
		return fmt.Sprintf("tools[%d]", p.Index)
	case CacheMessages:
		if p.Block < 0 {
			return fmt.Sprintf("messages[%d] (last block)", p.Index)
		}
		return fmt.Sprintf("messages[%d].content[%d]", p.Index, p.Block)
	}
	return string(p.Part)
}

// PointsFor returns the breakpoints of req: c.Points when set, else
// DefaultCachePoints(req). It returns nil for a nil Cache or an automatic
// one.
func (c *Cache) PointsFor(req *Request) []CachePoint {
	if c == nil || c.Automatic {
		return nil
	}
	if c.Points != nil {
		return c.Points
	}
	return DefaultCachePoints(req)
}

// DefaultCachePoints places up to MaxCachePoints breakpoints the way a
// long agent session gains most from them: after the last tool
// definition (tools change least), after the system prompt, at the end of
// the user message before the last one (where the previous request ended,
// so its entry is read even when the newest turn added more blocks than
// the API looks back over), and at the end of the conversation (so the
// next request reads all of this one). The unstable tail is last, the
// stable prefix first.
func DefaultCachePoints(req *Request) []CachePoint {
	var pts []CachePoint
	if n := len(req.Tools); n > 0 {
		pts = append(pts, CachePoint{Part: CacheTools, Index: n - 1})
	}
	if req.System != "" {
		pts = append(pts, CachePoint{Part: CacheSystem})
	}
	last := len(req.Messages) - 1
	if last < 0 {
		return pts
	}
	for i := last - 1; i >= 0; i-- {
		if req.Messages[i].Role == req.Messages[last].Role {
			pts = append(pts, CachePoint{Part: CacheMessages, Index: i, Block: -1})
			break
		}
	}
	return append(pts, CachePoint{Part: CacheMessages, Index: last, Block: -1})
}
