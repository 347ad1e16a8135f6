package config

import (
	"strings"
	"testing"
)

func TestCacheIsOnByDefaultAndConfigurable(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		on      bool
		ttl     string
		checkOK bool
	}{
		{"a file without a cache section caches with the default ttl", "", true, "", true},
		{"enabled false turns caching off", "cache: {enabled: false}\n", false, "", true},
		{"a one-hour ttl is passed on", "cache: {ttl: 1h}\n", true, "1h", true},
		{"a ttl the providers do not offer fails the check", "cache: {ttl: 10m}\n", true, "10m", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.yaml), "r.yaml")
			if err != nil {
				t.Fatal(err)
			}
			req := cfg.Cache.Request()
			if (req != nil) != c.on {
				t.Fatalf("Request() = %+v, want caching on %t", req, c.on)
			}
			if req != nil && (req.TTL != c.ttl || req.Points != nil || req.Automatic) {
				t.Errorf("Request() = %+v, want ttl %q and the default placement", req, c.ttl)
			}
			_, _, err = cfg.Check("r.yaml", t.TempDir())
			if (err == nil) != c.checkOK {
				t.Errorf("Check() = %v, want ok %t", err, c.checkOK)
			}
			if err != nil && !strings.Contains(err.Error(), "r.yaml") {
				t.Errorf("Check() = %v, want the file named", err)
			}
		})
	}
}

func TestAWorkspaceFileMayOnlyCacheLess(t *testing.T) {
	off := false
	cases := []struct {
		name      string
		base      Cache
		workspace string
		on        bool
		ttl       string
		refused   string
	}{
		{"turning caching off is accepted", Cache{}, "cache: {enabled: false}\n", false, "", ""},
		{"turning it on over a trusted off is refused", Cache{Enabled: &off}, "cache:\n  enabled: true\n", false, "", "cache.enabled"},
		{"shortening the ttl is accepted", Cache{TTL: "1h"}, "cache: {ttl: 5m}\n", true, "5m", ""},
		{"lengthening the ttl is refused", Cache{}, "cache:\n  ttl: 1h\n", true, "", "cache.ttl"},
		{"an unknown ttl is refused", Cache{}, "cache:\n  ttl: 2h\n", true, "", "cache.ttl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseFile([]byte(c.workspace), "ws/retrace.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got, refused := Restrict(Config{Cache: c.base}, f)
			if got.Cache.On() != c.on || got.Cache.TTL != c.ttl {
				t.Errorf("cache = on %t ttl %q, want on %t ttl %q", got.Cache.On(), got.Cache.TTL, c.on, c.ttl)
			}
			switch {
			case c.refused == "" && len(refused) > 0:
				t.Errorf("refused %v, want nothing refused", refused)
			case c.refused != "" && (len(refused) != 1 || refused[0].Field != c.refused || refused[0].Line == 0):
				t.Errorf("refused %v, want %s refused with its line", refused, c.refused)
			}
		})
	}
	t.Run("a trusted overlay replaces what it sets", func(t *testing.T) {
		got := Overlay(Config{Cache: Cache{TTL: "1h"}}, Config{Cache: Cache{Enabled: &off}})
		if got.Cache.On() || got.Cache.TTL != "1h" {
			t.Errorf("cache = %+v, want off with the base's ttl kept", got.Cache)
		}
	})
}
