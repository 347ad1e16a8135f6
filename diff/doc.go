// Package diff compares two sets of runs, BASE and CAND, metric by metric
// and detector by detector, with statistics chosen for each kind of data,
// and checks gates on the differences.
//
// (The full description of the tests, the verdict rule and the matching
// of findings is written with the implementation.)
package diff
