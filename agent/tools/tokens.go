package tools

import "unicode/utf8"

// EstimateTokens is the documented token estimate of output limits: an
// ASCII character counts a quarter of a token and any other character
// half a token, rounded up. These are rough, documented figures: 100,000 characters of English log are about 25k tokens, of
// Chinese close to 50k. It is an estimate, not a tokenizer: no provider's
// tokenizer is available offline, and a limit needs only to be the same
// budget whatever the script of the content.
func EstimateTokens(s string) int {
	return (QuarterTokens(s) + 3) / 4
}

// QuarterTokens is EstimateTokens in quarters of a token, unrounded: 1
// per ASCII byte, 2 per other character.
func QuarterTokens(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		n += 2
		i += size
	}
	return n
}

// RuneQuarterTokens is one character's share of QuarterTokens.
func RuneQuarterTokens(r rune) int {
	if r < utf8.RuneSelf {
		return 1
	}
	return 2
}
