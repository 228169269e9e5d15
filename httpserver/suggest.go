package httpserver

import (
	"fmt"
	"slices"
	"strings"
)

// closest returns the known name nearest to name (case-insensitive edit
// distance), or "" when none is near enough to be a likely typo: at most a
// third of the name's length, and at least 1, edits away.
func closest(name string, known []string) string {
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range known {
		d := editDistance(lower, strings.ToLower(k))
		if bestDist < 0 || d < bestDist || (d == bestDist && k < best) {
			best, bestDist = k, d
		}
	}
	limit := max(1, len([]rune(name))/3)
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
// Names are short (a few dozen runes), so the quadratic cost is nothing;
// a longer input is cut, since no known name is that long.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 {
		ra = ra[:64]
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// unknownName is the message about an unknown name (a body field or a query
// parameter) given where known are accepted: it suggests the closest known
// name, or lists them all when there are few.
func unknownName(what, name string, known []string) string {
	msg := fmt.Sprintf("%s is not a known %s", name, what)
	switch {
	case len(known) == 0:
		return msg + "; this route takes none"
	case closest(name, known) != "":
		return fmt.Sprintf("%s; did you mean %s?", msg, closest(name, known))
	case len(known) <= 12:
		sorted := slices.Sorted(slices.Values(known))
		return msg + "; known: " + strings.Join(sorted, ", ")
	}
	return msg
}
